"""QUANTIZED_16BIT_LSTM (73) and QUANTIZED_LSTM (95) on the reference device.

Expected values are independent of the implementation: the AOSP conformance specs
runtime/test/specs/V1_2/quantized_lstm.mod.py and V1_3/qlstm_{projection,noprojection}.mod.py
(outputs TF Lite computed), the three-step golden sequence of AOSP's QuantizedLSTMTest.cpp
(BasicQuantizedLstmTest, also TF Lite goldens), gemmlowp's own int16 logistic/tanh values, one
QUANTIZED_LSTM step with the options the specs leave out (peephole, projection without layer
norm, clipping, hidden zero point) computed by AOSP's QLSTM.cpp execute() and QuantUtils compiled
against gemmlowp, hand-worked steps, and float LSTM math for the ±1 agreement of a random cell.
"""
import math

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.errors import DriverError
from gpu_driver.hal.types import OperandLifeTime
from gpu_driver.ops.quantized_lstm import logistic16, tanh16

Q8A, I32, Q16S, F32 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32, T.TENSOR_QUANT16_SYMM, T.TENSOR_FLOAT32
Q8AS, Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM
ACT = (1 / 128, 128)            # x, h_prev and h_out
STATE = (1 / 2048, 0)           # c_prev and c_out: 4 integer bits

# ---- quantized_lstm.mod.py / QuantizedLSTMTest.cpp (n_batch 2, n_input 2, n_output 4) ------------------
W_SCALE, W_ZP = 0.00408021, 100
WEIGHTS = [  # input-to-{input, forget, cell, output}, then recurrent-to-{input, forget, cell, output}
    [146, 250, 235, 171, 10, 218, 171, 108],
    [24, 50, 132, 179, 158, 110, 3, 169],
    [133, 34, 29, 49, 206, 109, 54, 183],
    [195, 187, 11, 99, 109, 10, 218, 48],
    [254, 206, 77, 168, 71, 20, 215, 6, 223, 7, 118, 225, 59, 130, 174, 26],
    [137, 240, 103, 52, 68, 51, 237, 112, 0, 220, 89, 23, 69, 4, 207, 253],
    [172, 60, 205, 65, 14, 0, 140, 168, 240, 223, 133, 56, 142, 64, 246, 216],
    [106, 214, 67, 23, 59, 158, 45, 3, 119, 132, 49, 205, 129, 218, 11, 98],
]
BIASES = [[-7876, 13488, -726, 32839], [9206, -46884, -11693, -38724],      # input, forget
          [39481, 48624, 48976, -21419], [-58999, -17050, -41852, -40538]]  # cell, output
SPEC_X = [[166, 179], [50, 150]]
SPEC_C_PREV = [[876, 1034, 955, -909], [761, 1029, 796, -1036]]
SPEC_H_PREV = [[136, 150, 140, 115], [135, 152, 138, 112]]
SPEC_C_OUT = [[1485, 1177, 1373, -1023], [1019, 1355, 1097, -1235]]
SPEC_H_OUT = [[140, 151, 146, 112], [136, 156, 142, 112]]


def q16_lstm_model(batch, input_size, output_size, weights=None, biases=None, *, w_scale=W_SCALE, w_zp=W_ZP,
                   overrides=None, n_inputs=15, out_quant=(STATE, ACT)):
    """A QUANTIZED_16BIT_LSTM model: x, c_prev, h_prev are model inputs; the weights and biases are
    constants when given, else model inputs.  ``overrides`` maps an input index to (type, dims,
    scale, zero point) for invalid-model tests."""
    overrides = overrides or {}
    specs = [(Q8A, [batch, input_size], *ACT)]
    specs += [(Q8A, [output_size, input_size], w_scale, w_zp)] * 4
    specs += [(Q8A, [output_size, output_size], w_scale, w_zp)] * 4
    specs += [(I32, [output_size], w_scale / 128, 0)] * 4
    specs += [(Q16S, [batch, output_size], *STATE), (Q8A, [batch, output_size], *ACT)]
    b = gd.ModelBuilder()
    ins = []
    for i, spec in enumerate(specs[:n_inputs]):
        t, dims, scale, zp = overrides.get(i, spec)
        const = None
        if weights is not None and 1 <= i <= 8:
            const = weights[i - 1]
        elif biases is not None and 9 <= i <= 12:
            const = biases[i - 9]
        if const is None:
            ins.append(b.add_input(t, dims, scale, zp))
        else:
            ins.append(b.add_constant(t, dims, np.asarray(const).reshape(dims), scale, zp))
    (cs, czp), (hs, hzp) = out_quant
    outs = [b.add_operand(Q16S, [batch, output_size], cs, czp), b.add_operand(Q8A, [batch, output_size], hs, hzp)]
    b.add_operation(O.QUANTIZED_16BIT_LSTM, ins, outs).set_outputs(outs)
    return gd.get_device("reference").prepare_model(b.finish())


def run_step(pm, x, c_prev, h_prev, extra=()):
    c, h = pm.execute([np.asarray(x, np.uint8), *extra, np.asarray(c_prev, np.int16), np.asarray(h_prev, np.uint8)])
    assert c.dtype == np.int16 and h.dtype == np.uint8
    return c, h


def _feeds(weights, biases):
    return ([np.asarray(w, np.uint8).reshape(4, -1) for w in weights]
            + [np.asarray(b_, np.int32) for b_ in biases])


def test_aosp_spec_case_every_tensor_a_model_input():
    pm = q16_lstm_model(2, 2, 4)
    c, h = run_step(pm, SPEC_X, SPEC_C_PREV, SPEC_H_PREV, extra=_feeds(WEIGHTS, BIASES))
    np.testing.assert_array_equal(c, SPEC_C_OUT)
    np.testing.assert_array_equal(h, SPEC_H_OUT)


def test_aosp_spec_case_constant_weights_one_batch():
    pm = q16_lstm_model(1, 2, 4, WEIGHTS, BIASES)
    c, h = run_step(pm, SPEC_X[:1], SPEC_C_PREV[:1], SPEC_H_PREV[:1])
    np.testing.assert_array_equal(c, SPEC_C_OUT[:1])
    np.testing.assert_array_equal(h, SPEC_H_OUT[:1])


def test_aosp_golden_three_step_sequence():
    # QuantizedLSTMTest.cpp: states start at their zero points, each step feeds its outputs back
    x_steps = [[[154, 166], [100, 200]], [[166, 179], [50, 150]], [[141, 141], [111, 222]]]
    golden = [[[136, 150, 140, 115], [135, 152, 138, 112]], [[140, 151, 146, 112], [136, 156, 142, 112]],
              [[139, 153, 146, 114], [141, 154, 146, 108]]]
    pm = q16_lstm_model(2, 2, 4, WEIGHTS, BIASES)
    c, h = np.zeros((2, 4), np.int16), np.full((2, 4), 128, np.uint8)
    for x, expected in zip(x_steps, golden):
        c, h = run_step(pm, x, c, h)
        np.testing.assert_array_equal(h, expected)


def test_hand_worked_step_with_zero_gate_inputs():
    # weights at their zero point and zero biases: every gate input is 0, so i = f = o = ½ and g = 0.
    # c = ½·c_prev: 0.5 → 0.25 (Q4.11: 1024 → 512); h = ½·tanh(0.25) = 0.12246 → 128 + round(15.67) = 144.
    zero_w = [[W_ZP] * 8] * 4 + [[W_ZP] * 16] * 4
    pm = q16_lstm_model(1, 2, 4, zero_w, [[0] * 4] * 4)
    c, h = run_step(pm, [[200, 17]], [[1024, 0, -1024, 2048]], [[255, 0, 128, 3]])
    np.testing.assert_array_equal(c, [[512, 0, -512, 1024]])
    # −0.25 → 128 − 16; 1.0 → ½·tanh(0.5) = 0.23106 → 128 + round(29.58) = 158
    np.testing.assert_array_equal(h, [[144, 128, 112, 158]])


def _float_step(x, c_prev, h_prev, w_in, w_rec, bias, w_scale, w_zp):
    """The cell in float math, with AOSP's pairing (n_input = n_output here): gate pre-activation
    = W_rec·x + W_in·h_prev + bias — the fused row [recurrent ‖ input] against [x ‖ h]."""
    xf, hf = (np.asarray(x, np.float64) - 128) / 128, (np.asarray(h_prev, np.float64) - 128) / 128
    pre = [(xf @ ((np.asarray(w_rec[g], np.float64) - w_zp) * w_scale).T
            + hf @ ((np.asarray(w_in[g], np.float64) - w_zp) * w_scale).T
            + np.asarray(bias[g]) * w_scale / 128) for g in range(4)]
    sig = lambda v: 1 / (1 + np.exp(-np.clip(v, -8, 8 - 2 ** -12)))   # the Q3.12 gate range  # noqa: E731
    i, f, g, o = sig(pre[0]), sig(pre[1]), np.tanh(np.clip(pre[2], -8, 8)), sig(pre[3])
    c = np.clip(f * np.asarray(c_prev) / 2048 + i * g, -16, 16 - 2 ** -11)
    h = o * np.tanh(np.clip(c, -8, 8))
    return c * 2048, np.clip(np.round(h * 128), -128, 127) + 128


def test_random_cell_agrees_with_float_math():
    rng = np.random.default_rng(73)
    n, batch, w_scale, w_zp = 3, 4, 0.02, 120
    w_in = rng.integers(60, 180, size=(4, n, n))
    w_rec = rng.integers(60, 180, size=(4, n, n))
    bias = rng.integers(-3000, 3000, size=(4, n))
    weights = [w.ravel().tolist() for w in (*w_in, *w_rec)]
    pm = q16_lstm_model(batch, n, n, weights, bias.tolist(), w_scale=w_scale, w_zp=w_zp)
    x = rng.integers(0, 256, size=(batch, n))
    c_prev = rng.integers(-8000, 8000, size=(batch, n))
    h_prev = rng.integers(0, 256, size=(batch, n))
    c, h = run_step(pm, x, c_prev, h_prev)
    c_ref, h_ref = _float_step(x, c_prev, h_prev, w_in, w_rec, bias, w_scale, w_zp)
    np.testing.assert_allclose(c.astype(np.float64), c_ref, atol=3)
    np.testing.assert_allclose(h.astype(np.float64), h_ref, atol=1)


#: gemmlowp's own results (fixedpoint/fixedpoint.h, FixedPoint<int16_t, I>, compiled and run) at these raws
GEMMLOWP_RAWS = [-32768, -30745, -20000, -8192, -4097, -1000, -1, 1, 7, 1000, 4096, 12345, 20000, 32767]
GEMMLOWP_LOGISTIC_F3 = [11, 15, 243, 3901, 8807, 14391, 16383, 16384, 16398, 18376, 23952, 31236, 32524, 32756]
GEMMLOWP_TANH_F3 = [-32767, -32767, -32767, -31596, -24964, -7840, -8, 8, 64, 7840, 24964, 32616, 32767, 32767]
GEMMLOWP_TANH_F4 = [-32767, -32767, -32767, -32744, -31596, -14836, -24, 24, 104, 14836, 31596, 32767, 32767, 32767]


def test_int16_fixed_point_logistic_and_tanh_match_gemmlowp():
    raws = np.asarray(GEMMLOWP_RAWS)
    np.testing.assert_array_equal(logistic16(raws, 3), GEMMLOWP_LOGISTIC_F3)
    np.testing.assert_array_equal(tanh16(raws, 3), GEMMLOWP_TANH_F3)
    np.testing.assert_array_equal(tanh16(raws, 4), GEMMLOWP_TANH_F4)


def test_int16_fixed_point_logistic_and_tanh_track_the_float_functions():
    # over the whole Q3.12 range; the int16 series and barrel-shifter constants of gemmlowp are
    # accurate to a few units in the last place only (up to 6.4 for logistic, 11.8 for tanh)
    a = np.arange(-32768, 32768, dtype=np.int64)
    real = a / 4096.0
    np.testing.assert_allclose(logistic16(a, 3) / 32768.0, 1 / (1 + np.exp(-real)), atol=8 / 32768)
    np.testing.assert_allclose(tanh16(a, 3) / 32768.0, np.tanh(real), atol=13 / 32768)
    assert logistic16(0, 3) == 16384 and tanh16(0, 3) == 0
    assert math.isclose(tanh16(-32768, 3) / 32768.0, -1.0, abs_tol=1e-4)


def test_batch_unknown_before_execution():
    pm = q16_lstm_model(0, 2, 4, WEIGHTS, BIASES)                     # batch 0: unknown in the model
    c, h = run_step(pm, SPEC_X, SPEC_C_PREV, SPEC_H_PREV)
    np.testing.assert_array_equal(c, SPEC_C_OUT)
    np.testing.assert_array_equal(h, SPEC_H_OUT)


def test_zero_sized_batch_fails_at_execution():
    from gpu_driver.reference.executor import ReferenceExecutor

    b = gd.ModelBuilder()
    ins = [b.add_input(Q8A, [0, 2], *ACT)]
    ins += [b.add_constant(Q8A, [4, 2 if i < 4 else 4], np.asarray(w).reshape(4, -1), W_SCALE, W_ZP)
            for i, w in enumerate(WEIGHTS)]
    ins += [b.add_constant(I32, [4], np.asarray(v), W_SCALE / 128, 0) for v in BIASES]
    ins += [b.add_input(Q16S, [0, 4], *STATE), b.add_input(Q8A, [0, 4], *ACT)]
    outs = [b.add_operand(Q16S, [0, 4], *STATE), b.add_operand(Q8A, [0, 4], *ACT)]
    b.add_operation(O.QUANTIZED_16BIT_LSTM, ins, outs).set_outputs(outs)
    feeds = [np.zeros((0, 2), np.uint8), np.zeros((0, 4), np.int16), np.zeros((0, 4), np.uint8)]
    with pytest.raises(DriverError) as err:
        ReferenceExecutor(b.finish()).run(feeds)
    assert err.value.status == ErrorStatus.GENERAL_FAILURE, str(err.value)
    assert "zero-sized" in str(err.value)


# ---- invalid models ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, fragment", [
    pytest.param(dict(overrides={0: (Q8A, [2, 2], 0.01, 128)}), "scale 1/128", id="input-scale"),
    pytest.param(dict(overrides={14: (Q8A, [2, 4], 1 / 128, 127)}), "scale 1/128", id="h-prev-zero-point"),
    pytest.param(dict(overrides={6: (Q8A, [4, 4], W_SCALE, 99)}), "share input 1's", id="weights-zero-point"),
    pytest.param(dict(overrides={3: (Q8A, [4, 2], 0.005, W_ZP)}), "share input 1's", id="weights-scale"),
    pytest.param(dict(overrides={10: (I32, [4], W_SCALE / 64, 0)}), "weights_scale/128", id="bias-scale"),
    pytest.param(dict(overrides={13: (Q16S, [2, 4], 1 / 1024, 0)}), "2^-11", id="cell-state-scale"),
    pytest.param(dict(out_quant=(STATE, (1 / 256, 0))), "output (output 1)", id="output-quant"),
    pytest.param(dict(out_quant=((1 / 1024, 0), ACT)), "cell state out", id="cell-state-out-quant"),
    pytest.param(dict(overrides={0: (F32, [2, 2], 0.0, 0)}), "TENSOR_FLOAT32", id="float-input"),
    pytest.param(dict(overrides={9: (Q8A, [4], W_SCALE / 128, 0)}), "TENSOR_INT32", id="bias-type"),
    pytest.param(dict(overrides={13: (Q8A, [2, 4], 1 / 2048, 0)}), "TENSOR_QUANT16_SYMM", id="state-type"),
    pytest.param(dict(n_inputs=14), "illegal operand count", id="input-count"),
    pytest.param(dict(overrides={2: (Q8A, [4, 3], W_SCALE, W_ZP)}), "must have shape [4, 2]", id="weights-columns"),
    pytest.param(dict(overrides={7: (Q8A, [3, 4], W_SCALE, W_ZP)}), "must have shape [4, 4]", id="recurrent-rows"),
    pytest.param(dict(overrides={11: (I32, [3], W_SCALE / 128, 0)}), "must have shape [4]", id="bias-length"),
    pytest.param(dict(overrides={13: (Q16S, [2, 3], *STATE)}), "must have shape [2, 4]", id="cell-state-shape"),
    pytest.param(dict(overrides={14: (Q8A, [3, 4], *ACT)}), "batches", id="h-prev-batch"),
    pytest.param(dict(overrides={0: (Q8A, [2, 2, 1], *ACT)}), "rank", id="input-rank"),
])
def test_invalid_models_are_rejected(kwargs, fragment):
    with pytest.raises(DriverError) as err:
        q16_lstm_model(2, 2, 4, **kwargs)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    assert fragment in str(err.value)


# ---- QUANTIZED_LSTM -----------------------------------------------------------------------------------
# qlstm_projection.mod.py / qlstm_noprojection.mod.py: n_batch 2, n_input 5, n_cell 4, layer norm, the
# gate tensors i, f, c, o; weights Q8S (0.00784314), layer-norm weights Q16S (3.05182e-05)

QL_W = 0.00784314
QL_LN_SCALE = 3.05182e-05
QL_STATE = 3.05176e-05                      # h_prev / c_prev / outputs (c: 2^-15)
QL_W_X = [[64, 77, 89, -102, -115, 13, 25, 38, -51, 64, -102, 89, -77, 64, -51, -64, -51, -38, -25, -13],
          [-77, -13, 38, 25, 115, -64, -25, -51, 38, -102, -51, 38, -64, -51, -77, 38, -51, -77, -64, -64],
          [-51, -38, -25, -13, -64, 64, -25, -38, -25, -77, 77, -13, -51, -38, -89, 89, -115, -64, 102, 77],
          [-102, -51, -25, -115, -13, -89, 38, -38, -102, -25, 77, -25, 51, -89, -38, -64, 13, 64, -77, -51]]
QL_W_H3 = [[-25, -38, 51, 13, -64, 115, -25, -38, -89, 6, -25, -77],       # [4, 3]: with projection
           [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25],
           [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25],
           [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25]]
QL_W_H4 = [None, QL_W_H3[1] + [25, 38, -13, 51], QL_W_H3[2] + [38, -13, 25, 64],   # [4, 4]: no projection
           QL_W_H3[3] + [13, 64, 25, -38]]
QL_BIAS = [[644245, 3221226, 4724464, 8160438], [2147484, -6442451, -4294968, 2147484],
           [-1073742, 15461883, 5368709, 1717987], [1073742, -214748, 4294968, 2147484]]
QL_LN = [[3277, 6553, 9830, 16384], [6553, 6553, 13107, 9830], [22937, 6553, 9830, 26214],
         [19660, 6553, 6553, 16384]]
QL_W_PROJ = [-25, 51, 3, -51, 25, 127, 77, 20, 18, 51, -102, 51]           # [3, 4], scale 0.00392157
QL_X = [[90, 102, 13, 26, 38], [102, 13, 26, 51, 64]]
QL_SCALARS = dict(cell_clip=0.0, proj_clip=0.0, intermediate=(0.007059, 0.007812, 0.007059, 0.007812),
                  hidden_zp=0, hidden_scale=0.007)


def _ql_shapes(i, batch, n_in, n_cell, n_out):
    if i == 0:
        return [batch, n_in]
    if 1 <= i <= 4:
        return [n_cell, n_in]
    if 5 <= i <= 8:
        return [n_cell, n_out]
    return {16: [n_out, n_cell], 17: [n_out], 18: [batch, n_out], 19: [batch, n_cell]}.get(i, [n_cell])


def _ql_type(i):
    if i in (0, 18):
        return Q8AS
    if 1 <= i <= 8 or i == 16:
        return Q8S
    return I32 if 12 <= i <= 15 or i == 17 else Q16S


def qlstm_model(batch, n_in, n_cell, n_out, tensors, *, x_quant=(1 / 128, 0), h_quant=(QL_STATE, 0),
                c_scale=QL_STATE, scalars=QL_SCALARS, as_inputs=(), n_inputs=32, types=None, shapes=None):
    """A QUANTIZED_LSTM model: x, h_prev and c_prev are its first model inputs; ``tensors`` maps every
    other present tensor input to (values, scale) — a constant, or a model input when its index is
    in ``as_inputs`` (fed after c_prev in index order, None to omit it); any other is NO_VALUE.
    ``types`` and ``shapes`` override an input's type and dimensions."""
    types, shapes = types or {}, shapes or {}
    b = gd.ModelBuilder()
    state = {i: b.add_input(types.get(i, _ql_type(i)), _ql_shapes(i, batch, n_in, n_cell, n_out), scale, zp)
             for i, (scale, zp) in ((0, x_quant), (18, h_quant), (19, (c_scale, 0)))}
    ins = []
    for i in range(24):
        t, dims = types.get(i, _ql_type(i)), shapes.get(i, _ql_shapes(i, batch, n_in, n_cell, n_out))
        if i in state:
            ins.append(state[i])
        elif i in as_inputs:
            ins.append(b.add_input(t, dims, tensors[i][1] if i in tensors else 1.0))
        elif i in tensors:
            values, scale = tensors[i]
            ins.append(b.add_constant(t, dims, np.asarray(values).reshape(dims), scale))
        else:
            ins.append(b.add_operand(t, dims, 0.0 if t == I32 else 1.0, lifetime=OperandLifeTime.NO_VALUE))
    ins += [b.add_scalar(T.FLOAT32, v) for v in (scalars["cell_clip"], scalars["proj_clip"], *scalars["intermediate"])]
    ins += [b.add_scalar(T.INT32, scalars["hidden_zp"]), b.add_scalar(T.FLOAT32, scalars["hidden_scale"])]
    outs = [b.add_operand(Q8AS, [batch, n_out], *h_quant), b.add_operand(Q16S, [batch, n_cell], c_scale, 0),
            b.add_operand(Q8AS, [batch, n_out], *h_quant)]
    b.add_operation(O.QUANTIZED_LSTM, ins[:n_inputs], outs).set_outputs(outs)
    return gd.get_device("reference").prepare_model(b.finish())


def run_qlstm(pm, x, h_prev, c_prev, extra=()):
    h, c, out = pm.execute([np.asarray(x, np.int8), np.asarray(h_prev, np.int8), np.asarray(c_prev, np.int16),
                            *extra])
    np.testing.assert_array_equal(h, out)
    assert h.dtype == np.int8 and c.dtype == np.int16
    return h, c


def _ql_tensors(cifg, projection):
    w_h = QL_W_H3 if projection else QL_W_H4
    t = {}
    for g in range(4):
        if cifg and g == 0:
            continue
        t[1 + g], t[5 + g] = (QL_W_X[g], QL_W), (w_h[g], QL_W)
        t[12 + g], t[20 + g] = (QL_BIAS[g], 0.0), (QL_LN[g], QL_LN_SCALE)
    if projection:
        t[16], t[17] = (QL_W_PROJ, 0.00392157), ([0, 0, 0], 0.0)
    return t


def test_qlstm_aosp_projection_layer_norm():
    pm = qlstm_model(2, 5, 4, 3, _ql_tensors(cifg=False, projection=True))
    h, c = run_qlstm(pm, QL_X, np.zeros((2, 3)), np.zeros((2, 4)))
    np.testing.assert_array_equal(h, [[127, 127, -108], [-67, 127, 127]])
    np.testing.assert_array_equal(c, [[-14650, 8939, 5771, 6715], [-11843, 7847, 1508, 12939]])


def test_qlstm_aosp_cifg_projection_layer_norm():
    pm = qlstm_model(2, 5, 4, 3, _ql_tensors(cifg=True, projection=True))
    h, c = run_qlstm(pm, QL_X, np.zeros((2, 3)), np.zeros((2, 4)))
    np.testing.assert_array_equal(h, [[127, 127, 127], [-128, 127, 127]])
    np.testing.assert_array_equal(c, [[-11692, 9960, 5491, 8861], [-9422, 7726, 2056, 13149]])


def test_qlstm_aosp_cifg_no_projection_optional_tensors_omitted_at_execution():
    # as the AOSP spec does: the optional tensors are model inputs, omitted by the request
    omitted = (1, 5, 9, 10, 11, 12, 16, 17, 20)
    pm = qlstm_model(2, 5, 4, 4, _ql_tensors(cifg=True, projection=False), as_inputs=omitted)
    h, c = run_qlstm(pm, QL_X, np.zeros((2, 4)), np.zeros((2, 4)), extra=[None] * len(omitted))
    np.testing.assert_array_equal(h, [[-15, 21, 14, 20], [-15, 15, 5, 27]])
    np.testing.assert_array_equal(c, [[-11692, 9960, 5491, 8861], [-9422, 7726, 2056, 13149]])


# one step computed by AOSP's QLSTM.cpp execute() with QuantUtils, compiled against gemmlowp: peephole,
# projection with bias and clip (0.04 / 0.005 → ±8), cell clip (0.3 / 2^-12 → ±1228), no layer norm
# (so no gate bias), hidden zero point 4, input zero point 3, h_prev zero point −2
PEEP = dict(
    x=[[-13, 10, -114], [105, -4, -71]], h_prev=[[-2, -31], [-18, -23]],
    c_prev=[[-2189, -279, -3654, -4059], [2907, 3339, -1752, 3516]],
    w_x=[[[-24, -21, -24], [-62, -111, 0], [-63, -54, 87], [66, 108, -35]],
         [[74, 82, 49], [15, 10, -59], [-28, 61, -95], [41, 91, -26]],
         [[-112, -120, 60], [-107, 19, 110], [-109, 75, -15], [70, -127, -39]],
         [[91, -5, 69], [13, -116, 7], [-79, -57, -100], [-51, -55, 20]]],
    w_h=[[[-67, 45], [-107, -30], [44, -21], [30, -9]], [[2, -10], [-105, 104], [61, -92], [-71, 114]],
         [[41, 49], [14, -31], [59, 92], [106, -102]], [[56, -39], [-34, -87], [62, 27], [-75, 116]]],
    w_c=[[-2685, 1299, 1997, -2271], [1285, -2421, -2520, -895], [1407, -2691, 2717, 1210]],
    bias=[[4151, 575, 1449, 2912], [2976, 1318, 3944, -2010], [-783, 3067, -1318, 2158], [-4805, -1963, 1578, 3505]],
    w_proj=[[23, -29, -63, -4], [-8, 76, 111, 9]], b_proj=[482, 155],
    out=[[5, -8], [5, -3]], c_out=[[-1115, -239, -1228, -1228], [1228, 1228, -1068, 1228]])


def test_qlstm_peephole_projection_clipping_without_layer_norm():
    p = PEEP
    t = {1 + g: (p["w_x"][g], 0.01) for g in range(4)}
    t.update({5 + g: (p["w_h"][g], 0.012) for g in range(4)})
    t.update({9: (p["w_c"][0], 0.002), 10: (p["w_c"][1], 0.002), 11: (p["w_c"][2], 0.002)})
    t.update({12 + g: (p["bias"][g], 0.0) for g in range(4)})
    t.update({16: (p["w_proj"], 0.005), 17: (p["b_proj"], 0.0)})
    scalars = dict(cell_clip=0.3, proj_clip=0.04, intermediate=(0.004,) * 4, hidden_zp=4, hidden_scale=0.008)
    pm = qlstm_model(2, 3, 4, 2, t, x_quant=(1 / 128, 3), h_quant=(1 / 128, -2), c_scale=2.0 ** -12, scalars=scalars)
    h, c = run_qlstm(pm, p["x"], p["h_prev"], p["c_prev"])
    np.testing.assert_array_equal(c, p["c_out"])
    np.testing.assert_array_equal(h, p["out"])


def test_qlstm_hand_worked_zero_weights_ignore_biases_without_layer_norm():
    # zero weights: every gate input is 0 whatever the biases (no layer norm → no gate bias), so
    # i = f = o = ½, g = 0: c = ½·c_prev (Q4.11: 0.5 → 0.25, −1 → −0.5); h = ½·tanh(c)·128 − zp_hidden
    # = 15.67 → 16 − 3 = 13 and −29.58 → −30 − 3 = −33 (the reference subtracts the hidden zero point)
    t = {i: (np.zeros(6, int) if i <= 4 else np.zeros(4, int), 0.01) for i in range(1, 9)}
    t.update({12 + g: ([100000, -100000], 0.0) for g in range(4)})
    scalars = dict(QL_SCALARS, hidden_zp=3, hidden_scale=1 / 128)
    pm = qlstm_model(1, 3, 2, 2, t, h_quant=(1 / 128, 0), c_scale=2.0 ** -11, scalars=scalars)
    h, c = run_qlstm(pm, [[100, -100, 7]], [[50, -60]], [[1024, -2048]])
    np.testing.assert_array_equal(c, [[512, -1024]])
    np.testing.assert_array_equal(h, [[13, -33]])


def _expect_invalid(fn, fragment):
    with pytest.raises(DriverError) as err:
        fn()
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT, str(err.value)
    assert fragment in str(err.value)


def _without(t, *indexes):
    return {i: v for i, v in t.items() if i not in indexes}


@pytest.mark.parametrize("mutate, kwargs, fragment", [
    pytest.param(lambda t: t, dict(types={0: Q8A}), "TENSOR_QUANT8_ASYMM", id="input-type"),
    pytest.param(lambda t: t, dict(types={19: Q8AS}), "TENSOR_QUANT16_SYMM", id="cell-state-type"),
    pytest.param(lambda t: t, dict(c_scale=2.0 ** -8), "power of two", id="cell-scale-too-coarse"),
    pytest.param(lambda t: t, dict(c_scale=0.0003), "power of two", id="cell-scale-not-power-of-two"),
    pytest.param(lambda t: _without(t, 5), {}, "CIFG", id="cifg-half"),
    pytest.param(lambda t: _without(t, 1, 5, 20), {}, "input gate bias", id="input-bias-with-cifg"),
    pytest.param(lambda t: _without(t, 12), {}, "input gate bias", id="input-bias-missing"),
    pytest.param(lambda t: {**t, 10: ([1, 2, 3, 4], 1.0)}, {}, "peephole", id="peephole-partial"),
    pytest.param(lambda t: _without(t, 22), {}, "layer-norm", id="layer-norm-partial"),
    pytest.param(lambda t: _without(t, 16), {}, "projection bias", id="projection-bias-without-weights"),
    pytest.param(lambda t: _without(t, 2), {}, "cannot be omitted", id="required-input-omitted"),
    pytest.param(lambda t: {**t, 3: ([1] * 16, QL_W)}, dict(shapes={3: [4, 4]}), "must have shape [4, 5]",
                 id="weights-shape"),
    pytest.param(lambda t: t, dict(scalars=dict(QL_SCALARS, intermediate=(0.007, 0.0, 0.007, 0.007))),
                 "intermediate scale", id="intermediate-scale-zero"),
    pytest.param(lambda t: t, dict(scalars=dict(QL_SCALARS, hidden_scale=0.0)), "hidden state scale",
                 id="hidden-scale-zero"),
    pytest.param(lambda t: t, dict(n_inputs=31), "illegal operand count", id="input-count"),
])
def test_qlstm_invalid_models_are_rejected(mutate, kwargs, fragment):
    tensors = mutate(_ql_tensors(cifg=False, projection=True))
    _expect_invalid(lambda: qlstm_model(2, 5, 4, 3, tensors, **kwargs), fragment)


def test_qlstm_output_size_must_equal_num_units_without_projection():
    tensors = _without(_ql_tensors(cifg=False, projection=True), 16, 17)
    _expect_invalid(lambda: qlstm_model(2, 5, 4, 3, tensors), "without projection")


def test_qlstm_option_rules_are_checked_at_execution_for_model_inputs():
    # the input-to-input weights are a model input: omitting them alone (CIFG half) fails at execution
    pm = qlstm_model(2, 5, 4, 3, _ql_tensors(cifg=False, projection=True), as_inputs=(1,))
    _expect_invalid(lambda: run_qlstm(pm, QL_X, np.zeros((2, 3)), np.zeros((2, 4)), extra=[None]), "CIFG")
    h, _ = run_qlstm(pm, QL_X, np.zeros((2, 3)), np.zeros((2, 4)), extra=[np.asarray(QL_W_X[0], np.int8).reshape(4, 5)])
    np.testing.assert_array_equal(h, [[127, 127, -108], [-67, 127, 127]])
