"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION on the reference device (AOSP conformance
values and float64 formulas written here)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import F16S, Const, In, Out, expect_status, f32, i32, random_shape_axis, run1
from .test_activation import quantize

F32, F16, Q8A, Q8AS = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
INVALID = ErrorStatus.INVALID_ARGUMENT


def l2norm(x, itype=F32, scale=0.0, zp=0, axis=None, out_zp=None, out_scale=1 / 128):
    x = np.asarray(x)
    ins = [In(itype, list(x.shape), scale, zp)]
    if axis is not None:
        ins.append(i32(axis))
    if itype in (Q8A, Q8AS):
        out = Out(itype, list(x.shape), out_scale, (128 if itype == Q8A else 0) if out_zp is None else out_zp)
    else:
        out = Out(itype, list(x.shape))
    return run1(O.L2_NORMALIZATION, ins, out, x)


def l2_ref(x, axis):
    return x / np.maximum(np.sqrt((x * x).sum(axis=axis, keepdims=True)), 1e-6)


# l2_normalization_v1_2.mod.py example: [2, 2, 2, 3] along the last axis
L2_IN = np.array([0, 3, 4, 3, 0, 4, 8, 6, 0, 12, 0, 9, 9, 12, 20, 12, 15, 16, 20, 9, 12, 16, 15, 12],
                 np.float32).reshape(2, 2, 2, 3)
L2_OUT = np.array([0.00, 0.60, 0.80, 0.60, 0.00, 0.80, 0.80, 0.60, 0.00, 0.80, 0.00, 0.60, 0.36, 0.48, 0.80,
                   0.48, 0.60, 0.64, 0.80, 0.36, 0.48, 0.64, 0.60, 0.48]).reshape(2, 2, 2, 3)


@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2, 3, -3])
def test_l2_normalization_cts_axes(axis):
    ax = 3 if axis is None else axis % 4
    x, want = np.moveaxis(L2_IN, 3, ax), np.moveaxis(L2_OUT, 3, ax)
    np.testing.assert_allclose(l2norm(x, axis=axis), want, rtol=1e-5, atol=1e-6)
    # quant8 variant: input (0.1, 32), output (1/128, 128); e.g. 0.6·128 + 128 = 204.8 → 205 (±1)
    q = quantize(x, 0.1, 32, 0, 255)
    r = l2norm(q, Q8A, 0.1, 32, axis=axis)
    assert np.abs(r.astype(int) - quantize(want, 1 / 128, 128, 0, 255)).max() <= 1
    rs = l2norm(q - 128, Q8AS, 0.1, -96, axis=axis)
    np.testing.assert_array_equal(rs.astype(int), r.astype(int) - 128)


def test_l2_normalization_zeros_and_float16():
    # l2_normalization_zeros: an all-zero vector normalises to zeros (FL4)
    np.testing.assert_array_equal(l2norm(np.zeros((2, 3), np.float32)), 0)
    np.testing.assert_array_equal(l2norm(np.full((2, 3), 7, np.uint8), Q8A, 0.5, 7), 128)
    r = l2norm(np.array([[3, 4]], np.float16), F16)
    assert r.dtype == np.float16
    np.testing.assert_allclose(r.astype(np.float32), [[0.6, 0.8]], rtol=5 * 2**-10)


@pytest.mark.parametrize("seed", range(5))
def test_l2_normalization_random_quant(seed):
    rng = np.random.default_rng(seed)
    shape, axis = random_shape_axis(rng, 6)
    zp = int(rng.integers(0, 256))
    q = rng.integers(0, 256, size=shape)
    want = quantize(l2_ref((q - zp).astype(np.float64), axis), 1 / 128, 128, 0, 255)
    r = l2norm(q, Q8A, 0.02, zp, axis=axis)
    assert np.abs(r.astype(int) - want).max() <= 1
    x = rng.normal(0, 2, size=shape).astype(np.float32)
    np.testing.assert_allclose(l2norm(x, axis=axis), l2_ref(x.astype(np.float64), axis), rtol=1e-5, atol=1e-6)


def test_l2_normalization_fixed_output_quant():
    expect_status(INVALID, l2norm, [[1, 2]], Q8A, 0.5, 0, out_zp=0)
    expect_status(INVALID, l2norm, [[1, 2]], Q8A, 0.5, 0, out_scale=1 / 256)


# ---- LOCAL_RESPONSE_NORMALIZATION ------------------------------------------------------------------------

def lrn(x, radius, bias, alpha, beta, itype=F32, axis=None):
    x = np.asarray(x)
    mk = (lambda v: Const(F16S, v)) if itype == F16 else f32
    ins = [In(itype, list(x.shape)), i32(radius), mk(bias), mk(alpha), mk(beta)]
    if axis is not None:
        ins.append(i32(axis))
    return run1(O.LOCAL_RESPONSE_NORMALIZATION, ins, Out(itype, list(x.shape)), x)


def lrn_ref(x, radius, bias, alpha, beta, axis):
    """out[i] = x[i]·(bias + alpha·Σ_{|j−i|≤radius} x[j]²)^−beta along ``axis``, by explicit loops."""
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    out = np.empty_like(x)
    n = x.shape[-1]
    for i in range(n):
        lo, hi = max(0, i - radius), min(n - 1, i + radius)
        s = (x[..., lo:hi + 1] ** 2).sum(axis=-1)
        out[..., i] = x[..., i] * (bias + alpha * s) ** (-beta)
    return np.moveaxis(out, -1, axis)


def test_lrn_cts():
    # local_response_norm_float_3.mod.py (radius 20 > depth: the whole vector): sqrt(4·Σx²) = 4
    x = np.array([-1.1, .6, .7, 1.2, -.7, .1], np.float32).reshape(1, 1, 1, 6)
    np.testing.assert_allclose(lrn(x, 20, 0.0, 4.0, 0.5).ravel(), [-.275, .15, .175, .3, -.175, .025], rtol=1e-5)
    # radius 0, bias 1, alpha 1, beta 0.5: x / sqrt(1 + x²); 3 → 3/√10
    r = lrn(np.array([[0.0, 3.0, -1.0]], np.float32), 0, 1.0, 1.0, 0.5)
    np.testing.assert_allclose(r, [[0.0, 3 / np.sqrt(10), -1 / np.sqrt(2)]], rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_lrn_random_axes(seed):
    rng = np.random.default_rng(seed)
    shape, axis = random_shape_axis(rng, 6)
    radius = int(rng.integers(0, 4))
    bias, alpha, beta = 1.0 + seed, 0.5 / (seed + 1), 0.75
    x = rng.normal(0, 2, size=shape).astype(np.float32)
    r = lrn(x, radius, bias, alpha, beta, axis=axis)
    np.testing.assert_allclose(r, lrn_ref(x, radius, bias, alpha, beta, axis), rtol=1e-5, atol=1e-6)
    r16 = lrn(x.astype(np.float16), radius, bias, alpha, beta, F16, axis=axis)
    assert r16.dtype == np.float16
    np.testing.assert_allclose(r16.astype(np.float64), lrn_ref(x.astype(np.float16), radius, bias, alpha, beta, axis),
                               rtol=5 * 2**-10, atol=5 * 2**-10)


def test_lrn_invalid():
    expect_status(INVALID, lrn, np.zeros((1, 3), np.float32), -1, 1.0, 1.0, 0.5)
    expect_status(INVALID, lrn, np.zeros((1, 3), np.float32), 1, 1.0, 1.0, 0.5, axis=2)


# ---- INSTANCE_NORMALIZATION --------------------------------------------------------------------------------

@pytest.mark.parametrize("nchw", [False, True])
def test_instance_normalization_hand_worked(nchw):
    """One 2×2 plane per channel: channel 0 = [1, 2, 3, 4] (mean 2.5, var 1.25), channel 1 = [5, 5, 5, 5]
    (var 0: the output is beta).  gamma 2, beta 1, epsilon 0.75: σ = √2 for channel 0."""
    nhwc = np.array([[[[1, 5], [2, 5]], [[3, 5], [4, 5]]]], np.float32)        # [1, 2, 2, 2]
    x = nhwc.transpose(0, 3, 1, 2).copy() if nchw else nhwc
    out = run1(O.INSTANCE_NORMALIZATION, [In(T.TENSOR_FLOAT32, x.shape), f32(2.0), f32(1.0), f32(0.75),
                                          Const(T.BOOL, nchw)], Out(T.TENSOR_FLOAT32, list(x.shape)), x)
    s = np.sqrt(2.0)
    expected_c0 = [(v - 2.5) * 2 / s + 1 for v in (1, 2, 3, 4)]
    got = out.transpose(0, 2, 3, 1) if nchw else out
    np.testing.assert_allclose(got[0, :, :, 0].reshape(-1), expected_c0, rtol=1e-6)
    np.testing.assert_allclose(got[0, :, :, 1], 1.0, rtol=1e-6)


def test_instance_normalization_needs_rank_4():
    expect_status(ErrorStatus.INVALID_ARGUMENT, run1, O.INSTANCE_NORMALIZATION,
                  [In(T.TENSOR_FLOAT32, (2, 3)), f32(1.0), f32(0.0), f32(1e-5), Const(T.BOOL, False)],
                  Out(T.TENSOR_FLOAT32, [2, 3]), np.zeros((2, 3), np.float32))
