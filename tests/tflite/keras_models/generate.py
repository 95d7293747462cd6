"""Generate the small Keras models of tests/tflite/test_keras_models.py (TensorFlow needed; CI reads
the committed .tflite files, never runs this).

Each model is a common architecture pattern with seeded random weights, converted by TensorFlow's
own TFLiteConverter — the operator mixes real converters emit (fused sequence LSTMs, multi-head
attention as BATCH_MATMUL, layer normalisation, SE blocks, transposed convolutions, 1-D convolutions,
full-integer quantization with int8 or uint8 inputs).

Usage: python tests/tflite/keras_models/generate.py [OUT_DIR [MODEL …]]
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import tensorflow as tf

L = tf.keras.layers


def mobilenet_v2():
    return tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10)


def se_resnet():
    """Residual blocks with batch normalisation, swish and squeeze-and-excitation (EfficientNet-like)."""
    x = inp = L.Input((64, 64, 3))
    x = L.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(x)
    x = L.BatchNormalization()(x)
    x = L.Activation("swish")(x)
    for filters in (16, 24):
        y = L.DepthwiseConv2D(3, padding="same")(x)
        y = L.BatchNormalization()(y)
        y = L.Activation("swish")(y)
        s = L.GlobalAveragePooling2D(keepdims=True)(y)
        s = L.Conv2D(4, 1, activation="swish")(s)
        s = L.Conv2D(y.shape[-1], 1, activation="sigmoid")(s)
        y = L.Multiply()([y, s])
        y = L.Conv2D(filters, 1, use_bias=False)(y)
        y = L.BatchNormalization()(y)
        if y.shape[-1] == x.shape[-1]:
            y = L.Add()([x, y])
        x = y
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dropout(0.2)(x)
    return tf.keras.Model(inp, L.Dense(5, activation="softmax")(x))


def unet():
    """Encoder-decoder segmentation: max pooling, transposed convolution, nearest upsampling,
    bilinear resize, concatenation skips, a sigmoid mask."""
    inp = L.Input((64, 64, 3))
    c1 = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    p1 = L.MaxPooling2D()(c1)
    c2 = L.Conv2D(16, 3, padding="same", activation="relu")(p1)
    p2 = L.MaxPooling2D()(c2)
    b = L.Conv2D(32, 3, padding="same", activation="relu")(p2)
    u2 = L.Conv2DTranspose(16, 2, strides=2, padding="same")(b)
    u2 = L.Concatenate()([u2, c2])
    c3 = L.Conv2D(16, 3, padding="same", activation="relu")(u2)
    u1 = L.UpSampling2D(interpolation="nearest")(c3)
    u1 = L.Concatenate()([u1, c1])
    c4 = L.Conv2D(8, 3, padding="same", activation="relu")(u1)
    small = L.Resizing(32, 32, interpolation="bilinear")(c4)
    big = L.Resizing(64, 64, interpolation="bilinear")(small)
    out = L.Conv2D(1, 1, activation="sigmoid")(L.Add()([c4, big]))
    return tf.keras.Model(inp, out)


def transformer():
    """A token embedding, one encoder block (multi-head attention, layer normalisation, GELU MLP),
    mean pooling, a classifier."""
    inp = L.Input((16,), dtype="int32")
    x = L.Embedding(100, 32)(inp)
    a = L.MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
    x = L.LayerNormalization()(L.Add()([x, a]))
    m = L.Dense(64, activation="gelu")(x)
    m = L.Dense(32)(m)
    x = L.LayerNormalization()(L.Add()([x, m]))
    x = L.GlobalAveragePooling1D()(x)
    return tf.keras.Model(inp, L.Dense(3, activation="softmax")(x))


def lstm_classifier():
    """Embedding, a stacked LSTM (fused UNIDIRECTIONAL_SEQUENCE_LSTM), a bidirectional GRU-free LSTM,
    dense."""
    inp = L.Input((12,), dtype="int32", batch_size=1)
    x = L.Embedding(50, 16)(inp)
    x = L.LSTM(24, return_sequences=True)(x)
    x = L.Bidirectional(L.LSTM(8))(x)
    return tf.keras.Model(inp, L.Dense(4)(x))


def audio_conv1d():
    """1-D convolutions over a waveform-like signal, max pooling, global max pooling, dense."""
    inp = L.Input((400, 1))
    x = L.Conv1D(8, 9, strides=2, activation="relu")(inp)
    x = L.MaxPooling1D(2)(x)
    x = L.Conv1D(16, 5, padding="same", activation="relu", dilation_rate=2)(x)
    x = L.GlobalMaxPooling1D()(x)
    return tf.keras.Model(inp, L.Dense(6)(x))


def mobilenet_v3_small():
    """Hard-swish, squeeze-and-excitation, the Rescaling preprocessing layer."""
    return tf.keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, weights=None, classes=10)


def gru_text():
    """Embedding, a GRU (lowered to a WHILE loop), a causal 1-D convolution, average pooling."""
    inp = L.Input((10,), dtype="int32", batch_size=1)
    x = L.Embedding(50, 16)(inp)
    x = L.GRU(16, return_sequences=True)(x)
    x = L.Conv1D(8, 3, padding="causal")(x)
    x = L.GlobalAveragePooling1D()(x)
    return tf.keras.Model(inp, L.Dense(3)(x))


def simple_rnn():
    inp = L.Input((6, 4), batch_size=1)
    x = L.SimpleRNN(8)(inp)
    return tf.keras.Model(inp, L.Dense(2, activation="tanh")(x))


def misc_layers():
    """LeakyReLU, PReLU, pooling, zero padding and cropping, ELU, Permute, layer normalisation,
    softplus (EXP, LOG), softmax."""
    inp = L.Input((8, 8, 4), batch_size=1)
    x = L.Conv2D(8, 3, padding="same")(inp)
    x = L.LeakyReLU(0.1)(x)
    x = L.PReLU()(x)
    x = L.Concatenate()([L.AveragePooling2D(2)(x), L.MaxPooling2D(2)(x)])
    x = L.Cropping2D(1)(L.ZeroPadding2D(1)(x))
    x = L.Conv2D(8, 1, activation="elu")(x)
    x = L.Reshape((8, 16))(L.Permute((3, 1, 2))(x))
    x = L.Dense(4, activation="softplus")(L.LayerNormalization()(x))
    return tf.keras.Model(inp, L.Softmax()(L.Flatten()(x)))


MODELS = {
    "mobilenet_v2_035_96": (mobilenet_v2, ["float", "int8", "uint8"]),
    "se_resnet": (se_resnet, ["float", "int8"]),
    "unet": (unet, ["float", "int8"]),
    "transformer": (transformer, ["float"]),
    "lstm_classifier": (lstm_classifier, ["float"]),
    "audio_conv1d": (audio_conv1d, ["float", "int8"]),
    "mobilenet_v3_small_075_96": (mobilenet_v3_small, ["int8"]),
    "gru_text": (gru_text, ["float"]),
    "simple_rnn": (simple_rnn, ["float"]),
    "misc_layers": (misc_layers, ["float", "int8"]),
}


def representative(model, rng):
    def gen():
        for _ in range(16):
            feed = []
            for t in model.inputs:
                shape = [1] + list(t.shape[1:])
                if t.dtype == tf.int32:
                    feed.append(rng.integers(0, 50, shape).astype(np.int32))
                else:
                    feed.append(rng.uniform(-1, 1, shape).astype(np.float32))
            yield feed
    return gen


def convert(model, kind: str, rng) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if kind != "float":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = representative(model, rng)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = tf.int8 if kind == "int8" else tf.uint8
        conv.inference_input_type = io_type
        conv.inference_output_type = io_type
    return conv.convert()


def main(out_dir: str, only: list[str]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "manifest.json")
    manifest = json.load(open(path)) if os.path.exists(path) else {}
    for name, (build, kinds) in MODELS.items():
        if only and name not in only:
            continue
        tf.keras.utils.set_random_seed(1)
        model = build()
        # batch-normalisation statistics away from the identity, so folding them is exercised
        for layer in model.layers:
            if isinstance(layer, L.BatchNormalization):
                rng = np.random.default_rng(2)
                c = layer.moving_mean.shape[0]
                layer.moving_mean.assign(rng.uniform(-0.2, 0.2, c))
                layer.moving_variance.assign(rng.uniform(0.5, 1.5, c))
        for kind in kinds:
            data = convert(model, kind, np.random.default_rng(3))
            fname = f"{name}_{kind}.tflite"
            with open(os.path.join(out_dir, fname), "wb") as f:
                f.write(data)
            manifest[fname] = {"tensorflow": tf.__version__, "bytes": len(data)}
            print(f"{fname}: {len(data)} bytes", file=sys.stderr)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)), sys.argv[2:])
