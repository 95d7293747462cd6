"""Models as TensorFlow's converter writes them (tests/tflite/keras_models/generate.py: common Keras
architectures with seeded random weights — MobileNet v2 and v3, SE-ResNet blocks, a U-Net, a
transformer encoder, a GRU and a simple RNN, assorted layers (LeakyReLU, PReLU, ELU, layer
normalisation, softplus), a Keras 3 LSTM lowered to WHILE loops (TensorList updates as slices and concatenations of
loop-counter-dependent sizes), 1-D dilated convolutions — float, and full-integer
int8 / uint8), imported and run on every device, judged against LiteRT (XNNPACK) on the same input.

Float outputs must pass the whole-model fp32 rule (gpu_driver.mlts.accuracy); quantized outputs may
differ by at most max(2, LiteRT builtin vs XNNPACK) steps (NNAPI requantizes with a float
multiplier where TF Lite rounds twice: ±1 per layer can reach an output)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite
from gpu_driver.accelerator.control_flow import ControlFlowPreparedModel
from gpu_driver.mlts.accuracy import verdict

pytest.importorskip("ai_edge_litert.interpreter")
from gpu_driver.mlts.litert import LiteRT  # noqa: E402

MODELS = Path(__file__).resolve().parent / "keras_models"
NAMES = sorted(p.stem for p in MODELS.glob("*.tflite"))
#: the models whose Keras recurrent layers reach TF Lite as WHILE loops over the time steps
RECURRENT = {"gru_text_float", "lstm_classifier_float", "simple_rnn_float"}
#: (model, device) pairs whose preparation takes long on PoCL (quantized kernels compile slowly; the
#: unrolled LSTM and GRU loops hold a slice and a concatenation kernel of their own per time step)
SLOW = {("mobilenet_v2_035_96_int8", "opencl"), ("mobilenet_v2_035_96_uint8", "opencl"),
        ("mobilenet_v3_small_075_96_int8", "opencl"), ("lstm_classifier_float", "opencl"),
        ("gru_text_float", "opencl")}


def _params():
    out = []
    for name in NAMES:
        for device in gpu_driver.get_devices():
            kind = device.name.split(":")[0]
            marks = [pytest.mark.slow] if (name, kind) in SLOW else []
            out.append(pytest.param(name, device.name, id=f"{name}-{device.name}", marks=marks))
    return out


def _feed(imported, rng) -> list[np.ndarray]:
    feed = []
    for spec in imported.inputs:
        if spec.dtype.kind == "f":
            feed.append(rng.uniform(-1, 1, spec.shape).astype(spec.dtype))
        elif spec.dtype == np.int32:  # token ids (embedding tables of 50 and 100 rows)
            feed.append(rng.integers(0, 50, spec.shape).astype(np.int32))
        else:
            info = np.iinfo(spec.dtype)
            feed.append(rng.integers(info.min, info.max + 1, spec.shape).astype(spec.dtype))
    return feed


@pytest.mark.parametrize("name, device_name", _params())
def test_keras_model_matches_litert(name, device_name):
    data = (MODELS / f"{name}.tflite").read_bytes()
    imported = tflite.load_model(data)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(imported.model)), f"{name}: unsupported on {device_name}"
    feed = _feed(imported, np.random.default_rng(3))
    prepared = device.prepare_model(imported.model)
    if device_name != "reference" and name in RECURRENT:  # the time loops are unrolled: one flat program
        assert not isinstance(prepared, ControlFlowPreparedModel), name
    ours = prepared.execute(feed)
    expected = LiteRT(data).run(feed)
    builtin = LiteRT(data, xnnpack=False).run(feed)
    for spec, a, e, b in zip(imported.outputs, ours, expected, builtin):
        a = np.asarray(a).reshape(e.shape)
        if e.dtype.kind == "f":
            v = verdict(spec.name, a, e, b)
            assert v.verdict == "fp32", f"{name} on {device_name}, {spec.name}: {v}"
        else:
            libraries = int(np.abs(b.astype(np.int64) - e.astype(np.int64)).max(initial=0))
            steps = int(np.abs(a.astype(np.int64) - e.astype(np.int64)).max(initial=0))
            assert steps <= max(2, libraries), f"{name} on {device_name}, {spec.name}: {steps} steps"


def test_open_batch_dimension_imports_as_allocated_or_dynamic():
    """Keras models leave the batch open (−1): by default it takes TF Lite's allocated size (1), as
    TF Lite's interpreter and NNAPI delegate do; dynamic_dims=True keeps it unknown until execution."""
    data = (MODELS / "se_resnet_float.tflite").read_bytes()
    static = tflite.load_model(data)
    assert static.inputs[0].shape == (1, 64, 64, 3)
    assert static.model.main.operands[static.model.main.input_indexes[0]].dimensions == [1, 64, 64, 3]
    audio = tflite.load_model((MODELS / "audio_conv1d_float.tflite").read_bytes())
    assert audio.inputs[0].shape == (1, 400, 1)
    with pytest.raises(gpu_driver.DriverError) as err:  # a 1-D dilated convolution needs known sizes
        tflite.load_model((MODELS / "audio_conv1d_float.tflite").read_bytes(), dynamic_dims=True)
    assert "known only at execution" in err.value.message


def test_every_operator_of_the_keras_models_is_converted_not_skipped():
    """The generated models exercise the converters they were made for (a regression guard on the
    generator as much as on the importer)."""
    from gpu_driver.tflite.reader import read_model

    seen = set()
    for name in NAMES:
        model = read_model((MODELS / f"{name}.tflite").read_bytes())
        for sg in model.subgraphs:
            seen.update(op.name for op in sg.operators)
    for expected in ("WHILE", "GELU", "BATCH_MATMUL", "TRANSPOSE_CONV", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
                     "MEAN", "FULLY_CONNECTED", "QUANTIZE", "STRIDED_SLICE", "PACK", "GATHER"):
        assert expected in seen, expected


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_dynamic_dims_must_be_a_bool(flag):
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model((MODELS / "simple_rnn_float.tflite").read_bytes(), dynamic_dims=flag)
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT
