"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on the reference device: AOSP conformance values,
hand-worked align_corners / half_pixel_centers cases, a float64 per-element implementation of
operations.md op 23 and a scalar fp32 one of op 94."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import F16S, Const, In, Out, boolean, expect_status, f32, i32, run1, run_executor

F32, F16, Q8A, Q8AS = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
INVALID = ErrorStatus.INVALID_ARGUMENT


def resize(x, w, h, itype=F32, scale=0.0, zp=0, nchw=None, align=None, half=None, by_scale=False,
           op=O.RESIZE_BILINEAR):
    x = np.asarray(x)
    if by_scale:
        mk = (lambda v: Const(F16S, v)) if itype == F16 else f32
    else:
        mk = i32
    ins = [In(itype, list(x.shape), scale, zp), mk(w), mk(h)]
    for flag in (nchw, align, half):
        if flag is None:
            break
        ins.append(boolean(flag))
    return run1(op, ins, Out(itype, [], scale, zp), x)


def resize_ref(x, out_h, out_w, align=False, half=False):
    """The spec formula, element by element in float64 (NHWC)."""
    n, in_h, in_w, c = x.shape

    def axis(o, in_size, out_size):
        s = (in_size - 1) / (out_size - 1) if align and out_size > 1 else in_size / out_size
        src = (o + 0.5) * s - 0.5 if half else o * s
        lo = max(math.floor(src), 0)
        hi = min(math.ceil(src), in_size - 1)
        return lo, hi, src - lo

    out = np.zeros((n, out_h, out_w, c))
    for oy in range(out_h):
        y0, y1, ty = axis(oy, in_h, out_h)
        for ox in range(out_w):
            x0, x1, tx = axis(ox, in_w, out_w)
            out[:, oy, ox] = (x[:, y0, x0] * (1 - ty) * (1 - tx) + x[:, y1, x0] * ty * (1 - tx)
                              + x[:, y0, x1] * (1 - ty) * tx + x[:, y1, x1] * ty * tx)
    return out


# resize_bilinear_2.mod.py / resize_bilinear_v1_2.mod.py TEST 2: [1, 2, 2, 2] → [1, 3, 3, 2]
T2_IN = np.array([3, 4, 6, 10, 9, 10, 12, 16], np.float32).reshape(1, 2, 2, 2)
T2_OUT = np.array([3, 4, 5, 8, 6, 10, 7, 8, 9, 12, 10, 14, 9, 10, 11, 14, 12, 16], np.float32).reshape(1, 3, 3, 2)


def test_resize_bilinear_cts():
    np.testing.assert_allclose(resize(T2_IN, 3, 3), T2_OUT, rtol=1e-6)
    np.testing.assert_allclose(resize(T2_IN, 1.6, 1.6, by_scale=True), T2_OUT, rtol=1e-6)  # floor(2·1.6) = 3
    np.testing.assert_allclose(resize(T2_IN.transpose(0, 3, 1, 2), 3, 3, nchw=True), T2_OUT.transpose(0, 3, 1, 2),
                               rtol=1e-6)
    # quant8 variant (0.25, 0): raw values are 4× the real ones; the fp32 result (e.g. 55.99999 for
    # 56) is truncated by the reference, hence the ±1 tolerance
    q = (T2_IN * 4).astype(np.uint8)
    assert np.abs(resize(q, 3, 3, Q8A, 0.25, 0).astype(float) - T2_OUT * 4).max() <= 1
    # TEST 1: [1, 1, 2, 2] in (0.01, 0) → 1.666666667 = 166.67 raw (truncated by the reference: ±1)
    t1 = np.array([100, 100, 200, 200], np.uint8).reshape(1, 2, 2, 1)
    r = resize(t1, 1.5, 1.5, Q8A, 0.01, 0, by_scale=True)
    want = np.array([100, 100, 100, 166.666667, 166.666667, 166.666667, 200, 200, 200]).reshape(1, 3, 3, 1)
    assert np.abs(r.astype(float) - want).max() <= 1
    r16 = resize(T2_IN.astype(np.float16), 1.6, 1.6, F16, by_scale=True)
    assert r16.dtype == np.float16
    np.testing.assert_allclose(r16.astype(np.float32), T2_OUT, rtol=5 * 2**-10)


def test_align_corners_and_half_pixel_hand_worked():
    x = np.array([0, 10, 20, 40], np.float32).reshape(1, 1, 4, 1)
    # plain: scale 4/2 = 2, src 0, 2 → [0, 20]
    np.testing.assert_allclose(resize(x, 2, 1).ravel(), [0, 20])
    # align_corners: scale (4−1)/(2−1) = 3, src 0, 3 → [0, 40]
    np.testing.assert_allclose(resize(x, 2, 1, nchw=False, align=True).ravel(), [0, 40])
    # half_pixel: src = (o + 0.5)·2 − 0.5 = 0.5, 2.5 → [(0+10)/2, (20+40)/2]
    np.testing.assert_allclose(resize(x, 2, 1, nchw=False, align=False, half=True).ravel(), [5, 30])
    # half_pixel upsampling 2 → 3: src = −1/6 (clamped to row 0), 0.5, 7/6 (row 1)
    y = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    r = resize(y, 3, 3, nchw=False, align=False, half=True)
    np.testing.assert_allclose(r.ravel(), [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4], rtol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_resize_random(seed):
    rng = np.random.default_rng(seed)
    n, h, w, c = (int(v) for v in rng.integers(1, 5, size=4))
    oh, ow = (int(v) for v in rng.integers(1, 9, size=2))
    align, half = [(False, False), (True, False), (False, True)][seed % 3]
    x = rng.normal(0, 10, size=(n, h, w, c)).astype(np.float32)
    if seed % 2:
        r = resize(x.transpose(0, 3, 1, 2), ow, oh, nchw=True, align=align, half=half).transpose(0, 2, 3, 1)
    else:
        r = resize(x, ow, oh, nchw=False, align=align, half=half)
    np.testing.assert_allclose(r, resize_ref(x.astype(np.float64), oh, ow, align, half), rtol=1e-5, atol=1e-4)
    q = rng.integers(0, 256, size=(n, h, w, c)).astype(np.uint8)
    rq = resize(q, ow, oh, Q8A, 0.1, 5, False, align, half)
    assert np.abs(rq.astype(float) - np.trunc(resize_ref(q.astype(np.float64), oh, ow, align, half))).max() <= 1
    rs = resize((q.astype(int) - 128).astype(np.int8), ow, oh, Q8AS, 0.1, -123, False, align, half)
    want_s = np.trunc(resize_ref(q.astype(np.float64) - 128, oh, ow, align, half))
    assert rs.dtype == np.int8 and np.abs(rs.astype(float) - want_s).max() <= 1


def test_resize_invalid():
    x = np.zeros((1, 2, 2, 1), np.float32)
    expect_status(INVALID, resize, x, 3, 3, nchw=False, align=True, half=True)
    expect_status(INVALID, resize, x, 0, 3)
    expect_status(INVALID, resize, x, 0.2, 1.0, by_scale=True)   # floor(2·0.2) = 0


def test_resize_zero_batch():
    (r,) = run_executor(O.RESIZE_BILINEAR, [In(Q8A, [0, 2, 2, 1], 0.5, 1), i32(3), i32(4)], [Out(Q8A, [], 0.5, 1)],
                        [np.zeros((0, 2, 2, 1), np.uint8)])
    assert r.shape == (0, 4, 3, 1)


# ---- RESIZE_NEAREST_NEIGHBOR ----------------------------------------------------------------------------

def nearest(x, w, h, itype=F32, scale=0.0, zp=0, nchw=False, align=None, half=None, by_scale=False):
    return resize(x, w, h, itype, scale, zp, nchw, align, half, by_scale, op=O.RESIZE_NEAREST_NEIGHBOR)


def nearest_ref(x, out_h, out_w, align=False, half=False):
    """Op 94 element by element, with the fp32 scale and source position of the reference (NHWC)."""
    n, in_h, in_w, c = x.shape

    def index(o, in_size, out_size):
        s = np.float32(in_size - 1) / np.float32(out_size - 1) if align and out_size > 1 else \
            np.float32(in_size) / np.float32(out_size)
        src = float((np.float32(o) + np.float32(0.5)) * s if half else np.float32(o) * s)
        i = min(int(math.floor(src + 0.5)) if align else math.floor(src), in_size - 1)
        return max(i, 0) if half else i

    out = np.zeros((n, out_h, out_w, c), x.dtype)
    for oy in range(out_h):
        for ox in range(out_w):
            out[:, oy, ox] = x[:, index(oy, in_h, out_h), index(ox, in_w, out_w)]
    return out


# resize_nearest_neighbor.mod.py TESTs 1-3: (input, size, scale, expected)
NN_SPEC = [
    ([1, 2, 3, 4], (2, 2), (1, 1), 0.5, [1]),
    ([1, 2, 3, 4], (2, 2), (3, 3), 1.5, [1, 1, 2, 1, 1, 2, 3, 3, 4]),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9], (3, 3), (2, 2), 0.8, [1, 2, 4, 5]),
]


@pytest.mark.parametrize("spec", range(len(NN_SPEC)))
def test_nearest_cts(spec):
    values, (h, w), (oh, ow), s, want = NN_SPEC[spec]
    x = np.array(values, np.float32).reshape(1, h, w, 1)
    want = np.array(want, np.float32).reshape(1, oh, ow, 1)
    np.testing.assert_array_equal(nearest(x, ow, oh), want)
    np.testing.assert_array_equal(nearest(x, s, s, by_scale=True), want)
    np.testing.assert_array_equal(nearest(x.transpose(0, 3, 1, 2), ow, oh, nchw=True), want.transpose(0, 3, 1, 2))
    q = (x * 4 + 100).astype(np.uint8)     # the quant8 variation (0.25, 100): values copied unchanged
    np.testing.assert_array_equal(nearest(q, ow, oh, Q8A, 0.25, 100), (want * 4 + 100).astype(np.uint8))
    r16 = nearest(x.astype(np.float16), s, s, F16, by_scale=True)
    assert r16.dtype == np.float16
    np.testing.assert_array_equal(r16, want.astype(np.float16))


def test_nearest_align_corners_and_half_pixel_hand_worked():
    x = np.array([0, 10, 20, 30], np.float32).reshape(1, 1, 4, 1)
    # 4 → 3, plain: scale 4/3, src 0, 1.33, 2.67 → floor 0, 1, 2
    np.testing.assert_array_equal(nearest(x, 3, 1).ravel(), [0, 10, 20])
    # align_corners: scale 3/2 = 1.5, src 0, 1.5, 3 → roundf (ties away) 0, 2, 3
    np.testing.assert_array_equal(nearest(x, 3, 1, align=True).ravel(), [0, 20, 30])
    # half_pixel: src (o + 0.5)·4/3 = 0.67, 2, 3.33 → floor 0, 2, 3
    np.testing.assert_array_equal(nearest(x, 3, 1, align=False, half=True).ravel(), [0, 20, 30])
    # upsampling 4 → 8 with half_pixel: src (o + 0.5)/2 = 0.25, 0.75, 1.25 … 3.75 → 0, 0, 1, 1, 2, 2, 3, 3
    np.testing.assert_array_equal(nearest(x, 8, 1, align=False, half=True).ravel(), [0, 0, 10, 10, 20, 20, 30, 30])
    # align_corners, 4 → 1: scale in/out = 4 (out − 1 = 0), src 0 → 0
    np.testing.assert_array_equal(nearest(x, 1, 1, align=True).ravel(), [0])


@pytest.mark.parametrize("seed", range(6))
def test_nearest_random(seed):
    rng = np.random.default_rng(100 + seed)
    n, h, w, c = (int(v) for v in rng.integers(1, 6, size=4))
    oh, ow = (int(v) for v in rng.integers(1, 12, size=2))
    align, half = [(False, False), (True, False), (False, True)][seed % 3]
    x = rng.normal(0, 10, size=(n, h, w, c)).astype(np.float32)
    want = nearest_ref(x, oh, ow, align, half)
    if seed % 2:
        r = nearest(x.transpose(0, 3, 1, 2), ow, oh, nchw=True, align=align, half=half).transpose(0, 2, 3, 1)
    else:
        r = nearest(x, ow, oh, align=align, half=half)
    np.testing.assert_array_equal(r, want)
    q = rng.integers(-128, 128, size=(n, h, w, c)).astype(np.int8)
    np.testing.assert_array_equal(nearest(q, ow, oh, Q8AS, 0.1, -3, False, align, half), nearest_ref(q, oh, ow, align, half))


def test_nearest_invalid():
    x = np.zeros((1, 2, 2, 1), np.float32)
    expect_status(INVALID, nearest, x, 3, 3, nchw=False, align=True, half=True)
    expect_status(INVALID, nearest, x, 3, 0)
    expect_status(INVALID, nearest, x, 0.4, 1.0, by_scale=True)   # floor(2·0.4) = 0
    expect_status(INVALID, nearest, x, 3, 3, nchw=None)            # the layout flag is required


def test_nearest_zero_batch():
    (r,) = run_executor(O.RESIZE_NEAREST_NEIGHBOR, [In(F16, [0, 2, 2, 3]), i32(5), i32(4), boolean(False)],
                        [Out(F16, [])], [np.zeros((0, 2, 2, 3), np.float16)])
    assert r.shape == (0, 4, 5, 3) and r.dtype == np.float16
