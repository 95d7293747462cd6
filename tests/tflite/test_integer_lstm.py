"""The importer on TF Lite's fully integer LSTM (the 8x8→16 kernel: int8 activations and weights, int32
biases, int16 cell state and layer-norm weights, and five intermediates whose quantization gives the
gate and hidden-state scales): one-operator LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM models run by
LiteRT, the independent oracle, from a fresh interpreter, and, imported as QUANTIZED_LSTM steps, on
every device.  The import reproduces TF Lite's integer arithmetic, so the int8 outputs must be equal."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite
from gpu_driver.hal.types import OperationType
from gpu_driver.tflite.writer import TfliteWriter

from .oracle import litert
from .test_recurrent_operators import DEVICES, run_everywhere

B, I, U, P, T_STEPS = 2, 5, 4, 3, 4          # batch, input size, num_units, projected output size, time steps
X_QUANT, CELL_SCALE = (0.02, -5), 2.0 ** -11


def integer_lstm(*, cifg=False, layer_norm=True, projection=False, peephole=False, steps=None, time_major=False,
                 hidden_zp=0, cell_clip=0.0, proj_clip=0.0, intermediates=5, activations="INT8", seed=0):
    """A one-operator integer LSTM (UNIDIRECTIONAL_SEQUENCE_LSTM when ``steps`` is given) with random
    weights, and a random input: (model bytes, feed).  Without layer norm the gate biases are large
    (TF Lite adds them to the input matmul); the states are variable tensors."""
    rng = np.random.default_rng(seed)
    out = P if projection else U
    out_quant = (0.01, 3) if projection else (0.008, 3)
    w = TfliteWriter()

    def const(name, shape, ttype, low, high, scale):
        return w.tensor(name, shape, ttype, data=rng.integers(low, high, shape), scale=scale, zero_point=0)

    x_shape = [B, I] if steps is None else [steps, B, I] if time_major else [B, steps, I]
    x = w.tensor("x", x_shape, activations, scale=X_QUANT[0], zero_point=X_QUANT[1])
    ins = [x]
    for rows, cols, scale, what in ((U, I, 0.008, "input"), (U, out, 0.006, "recurrent")):
        ins += [-1 if cifg and g == 0 else const(f"{what}_w{g}", [rows, cols], "INT8", -127, 128, scale + 0.002 * g)
                for g in range(4)]
    ins += [const(f"peephole{g}", [U], "INT16", -3000, 3000, 2e-4) if peephole and not (cifg and g == 0) else -1
            for g in range(3)]
    bias = 3000 if layer_norm else 20000   # without layer norm several constant input columns carry them
    ins += [-1 if cifg and g == 0 else const(f"bias{g}", [U], "INT32", -bias, bias, 1e-5) for g in range(4)]
    ins += ([const("projection", [P, U], "INT8", -127, 128, 0.007), const("projection_bias", [P], "INT32", -500, 500,
                                                                          1e-5)] if projection else [-1, -1])
    ins.append(w.tensor("output_state", [B, out], "INT8", scale=out_quant[0], zero_point=out_quant[1], variable=True))
    ins.append(w.tensor("cell_state", [B, U], "INT16", scale=CELL_SCALE, zero_point=0, variable=True))
    ins += [const(f"layer_norm{g}", [U], "INT16", 5000, 20000, 1 / 16384) if layer_norm and not (cifg and g == 0)
            else -1 for g in range(4)]
    inter = [w.tensor(f"gate{g}", [0], "INT16", scale=0.0012 + 0.0002 * g, zero_point=0) for g in range(4)]
    inter.append(w.tensor("hidden", [0], "INT8", scale=0.007, zero_point=hidden_zp))
    inter += [w.tensor(f"extra{k}", [0], "INT16", scale=0.001, zero_point=0) for k in range(intermediates - 5)]
    options = {"FusedActivationFunction": 4, "CellClip": cell_clip, "ProjClip": proj_clip}
    if steps is None:
        y = w.tensor("y", [B, out], activations, scale=out_quant[0], zero_point=out_quant[1])
        w.operator("LSTM", ins, [y], options=("LSTMOptions", options), intermediates=inter[:intermediates])
    else:
        y_shape = [steps, B, out] if time_major else [B, steps, out]
        y = w.tensor("y", y_shape, activations, scale=out_quant[0], zero_point=out_quant[1])
        w.operator("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], intermediates=inter[:intermediates],
                   options=("UnidirectionalSequenceLSTMOptions", {**options, "TimeMajor": time_major}))
    feed = [rng.integers(-128, 128, x_shape).astype(np.int8)]
    return w.finish([x], [y]), feed


def run_checked(device_name, data, feed):
    """run_everywhere (the imported model's outputs equal to LiteRT's on the device), after checking
    that LiteRT's outputs are neither constant nor mostly saturated (the scales exercise the cell)."""
    (expected,) = litert(data, feed)
    assert np.unique(expected).size >= expected.size // 2, expected
    assert np.isin(expected, (-128, 127)).mean() < 0.25, expected
    return run_everywhere(device_name, data, feed)


def quantized_lstm_steps(imported) -> int:
    return sum(op.type == OperationType.QUANTIZED_LSTM for op in imported.model.main.operations)


LSTM_VARIANTS = {
    "layer_norm": dict(),
    "layer_norm_cifg": dict(cifg=True),
    "layer_norm_projection_clip": dict(projection=True, proj_clip=0.16),
    "layer_norm_cifg_projection": dict(cifg=True, projection=True, hidden_zp=7),
    "layer_norm_peephole_cell_clip": dict(peephole=True, cell_clip=0.5),
    "layer_norm_hidden_zero_point": dict(hidden_zp=-9),
    "no_layer_norm": dict(layer_norm=False),
    "no_layer_norm_cifg_peephole": dict(layer_norm=False, cifg=True, peephole=True),
    "no_layer_norm_projection": dict(layer_norm=False, projection=True, hidden_zp=5, proj_clip=0.5),
}


@pytest.mark.parametrize("variant", sorted(LSTM_VARIANTS))
@pytest.mark.parametrize("device_name", DEVICES)
def test_integer_lstm(device_name, variant):
    imported = run_checked(device_name, *integer_lstm(**LSTM_VARIANTS[variant]))
    assert quantized_lstm_steps(imported) == 1


SEQUENCE_VARIANTS = {
    "layer_norm": dict(),
    "no_layer_norm_cifg_projection": dict(layer_norm=False, cifg=True, projection=True, hidden_zp=-4),
}


@pytest.mark.parametrize("variant", sorted(SEQUENCE_VARIANTS))
@pytest.mark.parametrize("time_major", [True, False], ids=["time_major", "batch_major"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_integer_sequence_lstm(device_name, time_major, variant):
    data, feed = integer_lstm(steps=T_STEPS, time_major=time_major, seed=1, **SEQUENCE_VARIANTS[variant])
    imported = run_checked(device_name, data, feed)
    assert quantized_lstm_steps(imported) == T_STEPS


def test_integer_sequence_lstm_of_one_step():
    imported = run_checked("reference", *integer_lstm(steps=1, seed=2))
    assert quantized_lstm_steps(imported) == 1


REFUSALS = {
    "no_intermediates": (dict(intermediates=0), "5 intermediates"),
    "eight_bit_gates": (dict(intermediates=12), "8x8→8"),
    "int16_activations": (dict(activations="INT16"), "INT16 activations"),
    "peephole_with_projection": (dict(peephole=True, projection=True), "peephole"),
}


@pytest.mark.parametrize("sequence", [False, True], ids=["lstm", "sequence"])
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_inexpressible_integer_lstm_is_refused_with_its_reason(case, sequence):
    options, reason = REFUSALS[case]
    data, _ = integer_lstm(steps=T_STEPS if sequence else None, **options)
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(data)
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT
    name = "UNIDIRECTIONAL_SEQUENCE_LSTM" if sequence else "LSTM"
    assert f"operator 0 ({name})" in err.value.message and reason in err.value.message, err.value.message


def test_intermediates_are_read_and_rewritten():
    from gpu_driver.tflite.reader import read_model
    from gpu_driver.tflite.writer import write_model

    data, feed = integer_lstm(projection=True)
    model = read_model(data)
    (op,) = model.subgraphs[0].operators
    assert [model.subgraphs[0].tensors[i].name for i in op.intermediates] == [f"gate{g}" for g in range(4)] + ["hidden"]
    rewritten = write_model(model)
    np.testing.assert_array_equal(litert(rewritten, feed)[0], litert(data, feed)[0])


def test_intermediate_out_of_range_is_a_driver_error():
    w = TfliteWriter()
    x = w.tensor("x", [1, 4], "FLOAT32")
    y = w.tensor("y", [1, 4], "FLOAT32")
    w.operator("RELU", [x], [y], intermediates=[7])
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(w.finish([x], [y]))
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT
    assert "intermediate tensor 7" in err.value.message
