"""RELU*, LOGISTIC, TANH, ELU, HARD_SWISH, SOFTMAX, LOG_SOFTMAX, FLOOR, DEQUANTIZE on the reference device.

Expected values are hand-worked, taken from the AOSP conformance specs (runtime/test/specs), or
computed here independently in float64 and quantized (CTS tolerance: ±1 for quantized types).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.hal.model import SymmPerChannelQuantParams

from .single_op import F16S, Const, In, Out, expect_status, f32, random_shape_axis, run1, run_executor

F32, F16, Q8A, Q8AS = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
INVALID = ErrorStatus.INVALID_ARGUMENT


def q_round(x):
    """round half away from zero (C round), float64."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize(x, scale, zp, qmin, qmax):
    return np.clip(q_round(np.asarray(x, np.float64) / scale) + zp, qmin, qmax).astype(np.int64)


def unary(op, itype, dims, x, scale=0.0, zp=0, oscale=None, ozp=None, otype=None):
    otype = otype or itype
    if otype in (F32, F16):
        out = Out(otype, dims)
    else:
        out = Out(otype, dims, scale if oscale is None else oscale, zp if ozp is None else ozp)
    return run1(op, [In(itype, dims, scale, zp)], out, np.asarray(x).reshape(dims))


# ---- RELU family ----------------------------------------------------------------------------------

X_F = [-10.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 5.5, 6.0, 10.0]


@pytest.mark.parametrize("op,expected", [
    (O.RELU, [0, 0, 0, 0, 0, 0.5, 1, 5.5, 6, 10]),
    (O.RELU1, [-1, -1, -1, -0.5, 0, 0.5, 1, 1, 1, 1]),
    (O.RELU6, [0, 0, 0, 0, 0, 0.5, 1, 5.5, 6, 6]),
])
@pytest.mark.parametrize("ftype", [F32, F16])
def test_relu_float(op, expected, ftype):
    r = unary(op, ftype, [2, 5], X_F)
    assert r.dtype == (np.float32 if ftype == F32 else np.float16)
    np.testing.assert_array_equal(r.ravel(), np.array(expected, dtype=r.dtype))


# scale 0.5, zp 128: qa(0) = 128, qa(-1) = 126, qa(1) = 130, qa(6) = 140
Q_IN = [0, 100, 125, 126, 127, 128, 129, 130, 131, 140, 141, 255]


@pytest.mark.parametrize("op,expected", [
    (O.RELU, [128, 128, 128, 128, 128, 128, 129, 130, 131, 140, 141, 255]),
    (O.RELU1, [126, 126, 126, 126, 127, 128, 129, 130, 130, 130, 130, 130]),
    (O.RELU6, [128, 128, 128, 128, 128, 128, 129, 130, 131, 140, 140, 140]),
])
def test_relu_quant8(op, expected):
    r = unary(op, Q8A, [12], Q_IN, 0.5, 128)
    np.testing.assert_array_equal(r, expected)
    # the same real values in Q8AS with zp 0: bounds qa(0)=0, qa(±1)=±2, qa(6)=12
    rs = unary(op, Q8AS, [12], np.array(Q_IN) - 128, 0.5, 0)
    np.testing.assert_array_equal(rs, np.array(expected) - 128)


def test_relu_quant8_cts_relu1_and_saturated_bounds():
    # scale 0.5, zp 127: qa(−1) = 127 − 2 = 125, qa(1) = 127 + 2 = 129
    r = unary(O.RELU1, Q8A, [4], [1, 125, 129, 255], 0.5, 127)
    np.testing.assert_array_equal(r, [125, 125, 129, 129])
    # scale 0.01, zp 0: qa(6) = 600 saturates to 255 → RELU6 is the identity on [0, 255]
    r = unary(O.RELU6, Q8A, [3], [0, 200, 255], 0.01, 0)
    np.testing.assert_array_equal(r, [0, 200, 255])


def test_relu_output_quant_must_match():
    expect_status(INVALID, unary, O.RELU, Q8A, [2], [1, 2], 0.5, 128, oscale=0.25)


# ---- LOGISTIC ------------------------------------------------------------------------------------------

def test_logistic_float():
    # logistic_v1_2.mod.py TEST 1
    r = unary(O.LOGISTIC, F32, [1, 2, 2, 1], [1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(r.ravel(), [0.73105859756469727, 0.88079702854156494, 0.9820137619972229,
                                           0.99966466426849365], rtol=1e-6)
    r16 = unary(O.LOGISTIC, F16, [4], [-8.0, 0.0, 1.0, 2.0])
    assert r16.dtype == np.float16
    np.testing.assert_allclose(r16, 1 / (1 + np.exp(-np.array([-8.0, 0, 1, 2]))), rtol=5 * 2**-10, atol=5 * 2**-10)


def test_logistic_quant8_cts():
    # sigmoid_quant8.mod.py: scale 0.5, zp 0 → out (1/256, 0)
    r = unary(O.LOGISTIC, Q8A, [1, 2, 2, 1], [0, 1, 2, 127], 0.5, 0, 1 / 256, 0)
    np.testing.assert_array_equal(r.ravel(), [128, 159, 187, 255])
    # logistic_quant8_2.mod.py: every input value, expected from float math (±1)
    x = np.arange(256)
    expected = [255 if 1 / (1 + math.exp(-v * .5)) * 256 > 255 else int(round(1 / (1 + math.exp(-v * .5)) * 256))
                for v in x]
    r = unary(O.LOGISTIC, Q8A, [1, 16, 16, 1], x, 0.5, 0, 1 / 256, 0)
    assert np.abs(r.ravel().astype(int) - expected).max() <= 1


@pytest.mark.parametrize("scale,zp", [(0.5, 0), (0.05, 100), (0.01, 128), (1.0, 128), (0.1234, 7)])
def test_logistic_quant8_sweep_both_types(scale, zp):
    x = np.arange(256)
    want = quantize(1 / (1 + np.exp(-(x - zp) * scale)), 1 / 256, 0, 0, 255)
    r = unary(O.LOGISTIC, Q8A, [256], x, scale, zp, 1 / 256, 0)
    assert np.abs(r.astype(int) - want).max() <= 1
    rs = unary(O.LOGISTIC, Q8AS, [256], x - 128, scale, zp - 128, 1 / 256, -128)
    assert rs.dtype == np.int8
    # same real inputs → same outputs shifted by 128 (the integer paths agree exactly)
    np.testing.assert_array_equal(rs.astype(int), r.astype(int) - 128)


def test_logistic_quant8_saturation():
    # scale 1.0: multiplier 2^27 → left shift 28, input radius floor(15·2^27 / 2^28) = 7
    r = unary(O.LOGISTIC, Q8A, [6], [0, 121, 122, 128, 134, 135], 1.0, 128, 1 / 256, 0)
    assert r[0] == 0 and r[1] == 0            # c = −128, −7 → saturate low
    assert r[3] == 128                        # logistic(0) = 0.5 → 128
    assert r[4] == 255 and r[5] == 255        # c = 6: 0.9975·256 = 255.4 → 255; c = 7: saturate high
    assert abs(int(r[2]) - round(256 / (1 + math.exp(6)))) <= 1


def test_logistic_fixed_output_quant():
    expect_status(INVALID, unary, O.LOGISTIC, Q8A, [2], [1, 2], 0.5, 0, 1 / 128, 0)
    expect_status(INVALID, unary, O.LOGISTIC, Q8AS, [2], [1, 2], 0.5, 0, 1 / 256, 0)


# ---- TANH ------------------------------------------------------------------------------------------------

def test_tanh_float():
    # tanh_v1_2.mod.py TEST 1
    for t in (F32, F16):
        r = unary(O.TANH, t, [1, 2, 2, 1], [-1, 0, 1, 10])
        np.testing.assert_allclose(r.ravel().astype(np.float64), [-.761594156, 0, .761594156, 0.999999996],
                                   rtol=5 * 2**-10 if t == F16 else 1e-6, atol=1e-5)


def test_tanh_quant8_cts():
    # tanh_v1_2.mod.py TEST 2: input (0.05, 100), output (1/128, 128)
    x = np.arange(256)
    expected = [max(0, min(255, int(round(math.tanh((v - 100) * 0.05) / (1 / 128))) + 128)) for v in x]
    r = unary(O.TANH, Q8A, [256], x, 0.05, 100, 1 / 128, 128)
    assert np.abs(r.astype(int) - expected).max() <= 1


@pytest.mark.parametrize("scale,zp", [(0.05, 100), (0.01, 128), (0.5, 0), (1.0, 128)])
def test_tanh_quant8_signed(scale, zp):
    x = np.arange(256)
    want = quantize(np.tanh((x - zp) * scale), 1 / 128, 0, -128, 127)
    rs = unary(O.TANH, Q8AS, [256], x - 128, scale, zp - 128, 1 / 128, 0)
    assert np.abs(rs.astype(int) - want).max() <= 1
    r = unary(O.TANH, Q8A, [256], x, scale, zp, 1 / 128, 128)
    np.testing.assert_array_equal(rs.astype(int), r.astype(int) - 128)
    assert r[zp] == 128                                      # tanh(0) = 0 exactly


def test_tanh_fixed_output_quant():
    expect_status(INVALID, unary, O.TANH, Q8A, [2], [1, 2], 0.5, 0, 1 / 128, 0)


# ---- SOFTMAX --------------------------------------------------------------------------------------------

def softmax(x, beta, op_type=Q8A, in_scale=0.0, in_zp=0, axis=None, out_zp=None):
    x = np.asarray(x)
    ins = [In(op_type, list(x.shape), in_scale, in_zp), f32(beta)]
    if axis is not None:
        ins.append(Const(T.INT32, axis))
    if op_type in (Q8A, Q8AS):
        zp = (0 if op_type == Q8A else -128) if out_zp is None else out_zp
        out = Out(op_type, list(x.shape), 1 / 256, zp)
    else:
        out = Out(op_type, list(x.shape))
    return run1(O.SOFTMAX, ins, out, x)


def test_softmax_quant8_cts():
    # softmax_quant8_1.mod.py / softmax_quant8_2.mod.py
    np.testing.assert_array_equal(softmax([[1, 2, 10, 20]], 0.00001, Q8A, 0.5, 0), [[64, 64, 64, 64]])
    r = softmax([[1, 2, 3, 4, 5], [255, 254, 253, 252, 251]], 1.0, Q8A, 0.5, 0)
    np.testing.assert_array_equal(r, [[15, 24, 40, 67, 110], [110, 67, 40, 24, 15]])


SM_IN = np.array([17., 16., 15., 14., 1., -1., -2., -3., -4., -17.] * 4).reshape(2, 2, 2, 5)
SM_OUT = np.array([0.643914213228014, 0.236882800924671, 0.087144312427294, 0.032058600957022,
                   7.246299848982885e-08] * 8).reshape(2, 2, 2, 5)


@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2, 3, -4])
def test_softmax_v1_2_axes(axis):
    # softmax_v1_2.mod.py example 1 (values along the last axis), moved to the tested axis
    ax = 3 if axis is None else axis % 4
    x = np.moveaxis(SM_IN, 3, ax)
    want = np.moveaxis(SM_OUT, 3, ax)
    r = softmax(x.astype(np.float32), 1.0, F32, axis=axis)
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)
    # quant8 variant: input (0.25, 128), output (1/256, 0)
    q = quantize(x, 0.25, 128, 0, 255)
    r = softmax(q, 1.0, Q8A, 0.25, 128, axis=axis)
    assert np.abs(r.astype(int) - quantize(want, 1 / 256, 0, 0, 255)).max() <= 1


def test_softmax_small_beta_and_float16():
    # softmax_v1_2.mod.py example 2: beta 1e-6 → uniform 0.2 (0.2·256 = 51.2 → 51)
    x = np.array([1., 2., 3., 4., 5., -1., -2., -3., -4., -5.] * 4).reshape(2, 2, 2, 5)
    # beta is a FLOAT16 scalar for a TENSOR_FLOAT16 input
    r = run1(O.SOFTMAX, [In(F16, [2, 2, 2, 5]), Const(F16S, 0.000001)], Out(F16, [2, 2, 2, 5]), x)
    assert r.dtype == np.float16
    np.testing.assert_allclose(r.astype(np.float64), 0.2, rtol=5 * 2**-10)
    q = softmax(quantize(x, 0.25, 128, 0, 255), 0.000001, Q8A, 0.25, 128)
    assert np.abs(q.astype(int) - 51).max() <= 1


def _softmax_ref(x, beta, axis):
    e = np.exp((x - x.max(axis=axis, keepdims=True)) * beta)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("seed", range(6))
def test_softmax_random_quant(seed):
    rng = np.random.default_rng(seed)
    shape, axis = random_shape_axis(rng, 5)
    beta = float(rng.choice([0.5, 1.0, 2.0, 0.1]))
    scale = float(rng.choice([0.05, 0.1, 0.25, 0.5]))
    zp = int(rng.integers(0, 256))
    q = rng.integers(0, 256, size=shape)
    real = (q - zp) * float(np.float32(scale))
    want = _softmax_ref(real, float(np.float32(beta)), axis)
    r = softmax(q, beta, Q8A, scale, zp, axis=axis)
    assert np.abs(r.astype(int) - quantize(want, 1 / 256, 0, 0, 255)).max() <= 1
    rs = softmax(q - 128, beta, Q8AS, scale, zp - 128, axis=axis)
    np.testing.assert_array_equal(rs.astype(int), r.astype(int) - 128)
    xf = rng.normal(0, 3, size=shape).astype(np.float32)
    rf = softmax(xf, beta, F32, axis=axis)
    np.testing.assert_allclose(rf, _softmax_ref(xf.astype(np.float64), float(np.float32(beta)), axis),
                               rtol=1e-5, atol=1e-6)


def test_softmax_invalid_arguments():
    expect_status(INVALID, softmax, [[1, 2]], 0.0, F32)
    expect_status(INVALID, softmax, [[1, 2]], 1.0, F32, axis=2)
    expect_status(INVALID, softmax, [[1, 2]], 1.0, Q8A, 0.5, 0, out_zp=128)


# ---- FLOOR -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ftype", [F32, F16])
def test_floor(ftype):
    x = [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 10.2]
    r = unary(O.FLOOR, ftype, [2, 4], x)
    np.testing.assert_array_equal(r.ravel(), [-2, -1, -1, 0, 0, 1, 1, 10])


# ---- DEQUANTIZE ----------------------------------------------------------------------------------------------

def test_dequantize_cts_and_zero_point():
    # dequantize.mod.py: (1.0, 0) → identity on the raw values
    r = unary(O.DEQUANTIZE, Q8A, [1, 2, 2, 1], [0, 32, 128, 255], 1.0, 0, otype=F32)
    np.testing.assert_array_equal(r.ravel(), [0, 32, 128, 255])
    # (0.5, 127): (q − 127)·0.5
    r = unary(O.DEQUANTIZE, Q8A, [4], [0, 127, 128, 255], 0.5, 127, otype=F32)
    np.testing.assert_array_equal(r, [-63.5, 0, 0.5, 64])
    r = unary(O.DEQUANTIZE, Q8AS, [3], [-128, 0, 127], 0.25, -1, otype=F16)
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, [-31.75, 0.25, 32])
    r = unary(O.DEQUANTIZE, T.TENSOR_QUANT8_SYMM, [3], [-128, 0, 127], 0.5, 0, otype=F32)
    np.testing.assert_array_equal(r, [-64, 0, 63.5])


def test_dequantize_per_channel():
    cq = SymmPerChannelQuantParams(scales=[0.5, 2.0], channel_dim=1)
    x = np.array([[-4, 3], [10, -1], [127, -128]], dtype=np.int8)
    r = run1(O.DEQUANTIZE, [In(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 2], channel_quant=cq)], Out(F32, [3, 2]), x)
    np.testing.assert_array_equal(r, [[-2, 6], [5, -2], [63.5, -256]])


# ---- zero-sized inputs (operations.md §0.6) ---------------------------------------------------------------

@pytest.mark.parametrize("op,ins,out", [
    (O.RELU6, [In(Q8A, [0, 3], 0.5, 3)], Out(Q8A, [0, 3], 0.5, 3)),
    (O.LOGISTIC, [In(Q8A, [0, 3], 0.5, 3)], Out(Q8A, [0, 3], 1 / 256, 0)),
    (O.TANH, [In(F32, [0, 3])], Out(F32, [0, 3])),
    (O.SOFTMAX, [In(Q8AS, [0, 3], 0.5, 3), f32(1.0)], Out(Q8AS, [0, 3], 1 / 256, -128)),
    (O.DEQUANTIZE, [In(Q8A, [0, 3], 0.5, 3)], Out(F32, [0, 3])),
])
def test_zero_sized_inputs_accepted(op, ins, out):
    dtype = {Q8A: np.uint8, Q8AS: np.int8, F32: np.float32}[ins[0].type]
    (r,) = run_executor(op, ins, [out], [np.zeros((0, 3), dtype)])
    assert r.shape == (0, 3)


def test_zero_sized_input_rejected_by_floor():
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.FLOOR, [In(F32, [0, 3])], [Out(F32, [0, 3])],
                  [np.zeros((0, 3), np.float32)])


# ---- special values (AOSP's std::min / std::max orders) ---------------------------------------------------

FLT_MAX = float(np.finfo(np.float32).max)
X_SPECIAL = [np.nan, np.inf, -np.inf, 2.0]


@pytest.mark.parametrize("op,expected", [
    (O.RELU, [0, FLT_MAX, 0, 2]),          # std::min(std::max(0, x), FLT_MAX)
    (O.RELU1, [-1, 1, -1, 1]),
    (O.RELU6, [0, 6, 0, 2]),
])
def test_relu_special_values(op, expected):
    r = unary(op, F32, [4], np.array(X_SPECIAL, np.float32))
    np.testing.assert_array_equal(r, np.array(expected, np.float32))
    r16 = unary(op, F16, [4], np.array(X_SPECIAL, np.float16))
    np.testing.assert_array_equal(r16, np.array([np.inf if v == FLT_MAX else v for v in expected], np.float16))


def test_logistic_tanh_special_values():
    x = np.array(X_SPECIAL, np.float32)
    np.testing.assert_array_equal(unary(O.LOGISTIC, F32, [4], x)[:3], [np.nan, 1, 0])
    np.testing.assert_array_equal(unary(O.TANH, F32, [4], x)[:3], [np.nan, 1, -1])


# ---- ELU ----------------------------------------------------------------------------------------------------

def elu(x, alpha, itype=F32):
    x = np.asarray(x)
    scalar = Const(T.FLOAT16 if itype == F16 else T.FLOAT32, alpha)
    return run1(O.ELU, [In(itype, list(x.shape)), scalar], Out(itype, list(x.shape)), x)


def test_elu_cts():
    # elu.mod.py "alpha_one" and "alpha10" (rank 5)
    x = np.array([0, -6, 2, -4, 3, -2, 10, -0.1], np.float32)
    np.testing.assert_allclose(elu(x, 1.0), [0.0, -0.997521, 2.0, -0.981684, 3.0, -0.864665, 10.0, -0.0951626],
                               rtol=1e-5, atol=1e-6)
    r = elu(np.array([-10, -5, 0, 5], np.float32).reshape(2, 1, 1, 1, 2), 10.0)
    np.testing.assert_allclose(r.ravel(), [-9.999546, -9.932620, 0, 5], rtol=1e-5)
    r16 = elu(np.array([-0.2, -0.1, 0.0, 0.1], np.float16).reshape(2, 2), 0.1, F16)
    assert r16.dtype == np.float16
    np.testing.assert_allclose(r16.ravel().astype(np.float64), [-0.018127, -0.009516, 0, 0.1], rtol=2e-3)


def test_elu_special_values():
    # std::max(0, x) + std::min(0, alpha·(e^x − 1)): NaN → 0, −inf → −alpha
    np.testing.assert_array_equal(elu(np.array(X_SPECIAL, np.float32), 0.5), [0, np.inf, -0.5, 2])


def test_elu_zero_sized_and_invalid():
    (r,) = run_executor(O.ELU, [In(F32, [0, 2]), f32(1.0)], [Out(F32, [0, 2])], [np.zeros((0, 2), np.float32)])
    assert r.shape == (0, 2)
    (r,) = run_executor(O.HARD_SWISH, [In(Q8A, [0, 2], 1.0, 0)], [Out(Q8A, [0, 2], 1 / 256, 0)],
                        [np.zeros((0, 2), np.uint8)])        # nothing to compute: no failure
    assert r.shape == (0, 2)
    expect_status(INVALID, run1, O.ELU, [In(Q8A, [2], 0.5, 0), f32(1.0)], Out(Q8A, [2], 0.5, 0),
                  np.zeros(2, np.uint8))


# ---- HARD_SWISH ---------------------------------------------------------------------------------------------

# hard_swish.mod.py "simple" (first 12 values)
HS_X = [4.53125, 3.90625, 3.046875, -8.59375, -1.328125, 1.328125, 0.0, -8.515625, -8.984375, -0.234375,
        0.859375, 9.84375]
HS_Y = [4.53125, 3.90625, 3.046875, 0.0, -0.3700765, 0.9580485, 0.0, 0.0, 0.0, -0.1080322, 0.5527751, 9.84375]


def hard_swish_f64(x):
    x = np.asarray(x, np.float64)
    return x * np.clip(x + 3, 0, 6) / 6


def test_hard_swish_float():
    np.testing.assert_allclose(unary(O.HARD_SWISH, F32, [12], np.array(HS_X, np.float32)), HS_Y, rtol=1e-6,
                               atol=1e-6)
    r = unary(O.HARD_SWISH, F16, [2, 1, 1, 1, 6], np.array(HS_X, np.float16))     # rank 5
    np.testing.assert_allclose(r.ravel().astype(np.float64), HS_Y, rtol=2e-3, atol=1e-3)
    # std::max(0, NaN) = 0, so NaN·0 = NaN; −inf·0 = NaN; +inf·6/6 = +inf
    np.testing.assert_array_equal(unary(O.HARD_SWISH, F32, [4], np.array(X_SPECIAL, np.float32)),
                                  [np.nan, np.inf, np.nan, np.float32(10) / np.float32(6)])


@pytest.mark.parametrize("itype,scale,zp,oscale,ozp", [
    (Q8A, 0.078125, 128, 0.078125, 128),          # the CTS quantizations
    (Q8AS, 0.078125, 0, 0.078125, 0),
    (Q8A, 0.078125, 128, 0.03125, 0),             # "overflow": outputs saturate
    (Q8AS, 0.078125, 0, 0.03125, -128),
    (Q8A, 0.02, 50, 0.05, 10),
    (Q8AS, 0.5, -3, 0.25, 7),                     # reluish multiplier with a left shift
])
def test_hard_swish_quant_within_one(itype, scale, zp, oscale, ozp):
    qmin, qmax = (0, 255) if itype == Q8A else (-128, 127)
    x = np.arange(qmin, qmax + 1)
    want = quantize(hard_swish_f64((x - zp) * scale), oscale, ozp, qmin, qmax)
    r = unary(O.HARD_SWISH, itype, [256], x, scale, zp, oscale, ozp)
    assert np.abs(r.astype(np.int64) - want).max() <= 1


def test_hard_swish_quant_hand_worked():
    # s_in = s_out = 1/8, zp 0: x = 3 (q 24) saturates the relu-ish factor at 1, so out = x (24);
    # x = 0 → 0; x = −3 (q −24) and x = −5 (q −40) have relu-ish factor 0 → 0.
    r = unary(O.HARD_SWISH, Q8AS, [4], np.array([24, 0, -24, -40]), 0.125, 0, 0.125, 0)
    np.testing.assert_array_equal(r, [24, 0, 0, 0])


def test_hard_swish_quant_output_scale_too_small_fails():
    # s_in/128/s_out ≥ 1 needs a left shift the fixed-point kernel does not have (AOSP fails the execution)
    expect_status(ErrorStatus.GENERAL_FAILURE, unary, O.HARD_SWISH, Q8A, [2], [1, 2], 1.0, 0, 1 / 256, 0)


# ---- LOG_SOFTMAX ----------------------------------------------------------------------------------------------

def log_softmax(x, beta, axis, itype=F32):
    x = np.asarray(x)
    beta_c = Const(T.FLOAT16 if itype == F16 else T.FLOAT32, beta)
    return run1(O.LOG_SOFTMAX, [In(itype, list(x.shape)), beta_c, Const(T.INT32, axis)], Out(itype, list(x.shape)),
                x)


@pytest.mark.parametrize("itype", [F32, F16])
def test_log_softmax_cts(itype):
    # log_softmax.mod.py: rank 5, axes 4, −1, −3 and beta 10
    x = np.array([0, -6, 2, 4, 3, -2, 10, 1], np.float32)
    want = [-4.14297, -10.14297, -2.14297, -.142971, -7.00104, -12.00104, -.00104087, -9.00104]
    tol = dict(rtol=1e-5, atol=1e-5) if itype == F32 else dict(rtol=5e-3, atol=2e-2)
    np.testing.assert_allclose(log_softmax(x.reshape(1, 1, 1, 2, 4).astype(itype == F16 and np.float16 or np.float32),
                                           1.0, 4, itype).ravel(), want, **tol)
    r = log_softmax(np.array([0, 2, 3, 10, -6, 4, -2, 1], np.float32).reshape(1, 1, 2, 4, 1), 1.0, -3)
    np.testing.assert_allclose(r.ravel(), [-.00247565, -2.12692, -.00671534, -.000123374, -6.00247, -.126928,
                                           -5.00671, -9.00012], rtol=1e-5, atol=1e-5)
    r = log_softmax((x / 10).reshape(1, 1, 1, 2, 4), 10.0, 4)
    np.testing.assert_allclose(r.ravel(), want, rtol=1e-5, atol=1e-5)


def test_log_softmax_invalid():
    x = np.zeros((2, 3), np.float32)
    expect_status(INVALID, log_softmax, x, 1.0, 2)
    expect_status(INVALID, log_softmax, x, 1.0, -3)
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.LOG_SOFTMAX,
                  [In(F32, [0, 3]), Const(T.FLOAT32, 1.0), Const(T.INT32, -1)], [Out(F32, [0, 3])],
                  [np.zeros((0, 3), np.float32)])
