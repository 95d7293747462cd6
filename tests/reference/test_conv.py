"""CONV_2D and DEPTHWISE_CONV_2D on the reference device.

Expected values: hand-worked cases, AOSP conformance specs (runtime/test/specs), and the naive loop
oracle in nnref.py for random shapes.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperationType as OP

from .nnref import (F16, F32, I32, PC8, Q8A, Q8AS, QRANGE, T, assert_exact, assert_float, build, naive_conv, run,
                    run_direct,                     same_pad)

CONV, DW = OP.CONV_2D, OP.DEPTHWISE_CONV_2D


def nchw(a):
    return np.ascontiguousarray(np.asarray(a).transpose(0, 3, 1, 2))


# ---- hand-worked / conformance ------------------------------------------------------------------------

def test_conv_float_channels_spec():
    # conv_float_channels.mod.py: 1x1 conv, all-ones filter, 3 channels of 99 -> 3·99 = 297 each
    out = run(CONV, [T(F32, np.full((1, 1, 1, 3), 99.0)), T(F32, np.ones((3, 1, 1, 3)), const=True),
                     T(F32, np.zeros(3), const=True), 0, 0, 0, 0, 1, 1, 0], F32, (1, 1, 1, 3))
    assert_float(out, [[[[297.0, 297.0, 297.0]]]])


def test_conv_quant8_spec():
    # conv_quant8.mod.py: s_in = s_w = 0.5, bias 0.25, s_out 1.  Window [8,8,8,4]·2 = 56 (top-left;
    # every 2x2 window of the 3x3 input holds three 8s and the 4), + bias 4 = 60, ×0.25 -> 15
    x = T(Q8A, np.array([8, 8, 8, 8, 4, 8, 8, 8, 8]).reshape(1, 3, 3, 1), 0.5, 0)
    w = T(Q8A, np.full((1, 2, 2, 1), 2), 0.5, 0, const=True)
    b = T(I32, [4], 0.25, 0, const=True)
    out = run(CONV, [x, w, b, 0, 0, 0, 0, 1, 1, 0], Q8A, (1, 2, 2, 1), 1.0, 0)
    assert_exact(out, [15, 15, 15, 15])


@pytest.mark.parametrize("layout", [False, True])
@pytest.mark.parametrize("kind", ["float", "quant8", "float16"])
def test_conv2d_dilation_spec(layout, kind):
    # conv2d_dilation.mod.py test 2: 9x9 input with a 3x3 block of ones in the centre, filter 1..9,
    # dilation 3, VALID -> every output = Σ filter·1 over taps landing on the block ... = 5 (spec value)
    x = np.zeros((1, 9, 9, 1))
    x[0, 3:6, 3:6, 0] = 1
    f = np.arange(1, 10, dtype=np.float64).reshape(1, 3, 3, 1)
    if kind == "quant8":
        xi, fi = T(Q8A, x / 0.5, 0.5, 0), T(Q8A, f / 0.125, 0.125, 0, const=True)
        bi, out_t, oq = T(I32, [0], 0.0625, 0, const=True), Q8A, (0.125, 0)
    else:
        ty = F16 if kind == "float16" else F32
        xi, fi, bi, out_t, oq = T(ty, x), T(ty, f, const=True), T(ty, [0.0], const=True), ty, (0.0, 0)
    if layout:
        xi.value, xi.shape = nchw(xi.value), (1, 1, 9, 9)
    out = run(CONV, [xi, fi, bi, 0, 0, 0, 0, 1, 1, 0, layout, 3, 3], out_t, (1, 1, 3, 3) if layout else (1, 3, 3, 1),
              *oq)
    if kind == "quant8":
        assert_exact(out, [40] * 9)  # 5 / 0.125
    else:
        assert_float(out, np.full(9, 5.0), f16=kind == "float16")


def test_conv2d_dilation_1_quant8_spec():
    # conv2d_dilation.mod.py test 1 (quant8): input (0.5,0) [2,2,2,2,1,2,2,2,2], filter (0.125,0) all 2,
    # acc per window = 2·2·3 + 1·2 = 14 (×0.0625 = 0.875), out scale 0.125 -> 7
    x = T(Q8A, np.array([2, 2, 2, 2, 1, 2, 2, 2, 2]).reshape(1, 3, 3, 1), 0.5, 0)
    out = run(CONV, [x, T(Q8A, np.full((1, 2, 2, 1), 2), 0.125, 0, const=True), T(I32, [0], 0.0625, 0, const=True),
                     0, 0, 0, 0, 1, 1, 0, False, 1, 1], Q8A, (1, 2, 2, 1), 0.125, 0)
    assert_exact(out, [7, 7, 7, 7])


def test_conv_same_padding_hand():
    # 3x3 input 1..9, 3x3 all-ones filter, SAME stride 1 -> pad 1 each side; output = sum of the 3x3
    # neighbourhood: corners 1+2+4+5=12, 2+3+5+6=16, 4+5+7+8=24, 5+6+8+9=28; edges 1+2+3+4+5+6=21,
    # 1+2+4+5+7+8=27, 2+3+5+6+8+9=33, 4+5+6+7+8+9=39; centre 45.  Bias 1.
    x = T(F32, np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1))
    out = run(CONV, [x, T(F32, np.ones((1, 3, 3, 1)), const=True), T(F32, [1.0], const=True), 1, 1, 1, 0],
              F32, (1, 3, 3, 1))
    assert_float(out.ravel(), np.array([12, 21, 16, 27, 45, 33, 24, 39, 28]) + 1.0)


def test_conv_stride2_explicit_padding_relu6_hand():
    # 4x4 input of 1s, 2x2 filter of 1s, pads (l=1, r=0, t=1, b=0), stride 2:
    # out = (4+1-2+2)//2 = 2 per axis; window (0,0) covers rows -1..0, cols -1..0 -> 1 cell = 1;
    # (0,1) rows -1..0 cols 1..2 -> 2; (1,0) -> 2; (1,1) -> 4; bias 3 -> 4,5,5,7; RELU6 -> 4,5,5,6
    x = T(F32, np.ones((1, 4, 4, 1)))
    out = run(CONV, [x, T(F32, np.ones((1, 2, 2, 1)), const=True), T(F32, [3.0], const=True), 1, 0, 1, 0, 2, 2, 3],
              F32, (1, 2, 2, 1))
    assert_float(out.ravel(), [4, 5, 5, 6])


def test_depthwise_quant8_spec():
    # depthwise_conv2d_quant8.mod.py: ch0 = 4·2·4 = 32, ch1 = 16·4 + 64·2 = 192; ×0.25 -> [8, 48]
    x = T(Q8A, np.array([4, 16, 4, 32, 4, 64, 4, 128]).reshape(1, 2, 2, 2), 0.5, 0)
    w = T(Q8A, np.array([2, 4, 2, 0, 2, 2, 2, 0]).reshape(1, 2, 2, 2), 0.5, 0, const=True)
    out = run(DW, [x, w, T(I32, [0, 0], 0.25, 0, const=True), 0, 0, 0, 0, 1, 1, 1, 0], Q8A, (1, 1, 1, 2), 1.0, 0)
    assert_exact(out, [8, 48])


def test_depthwise_multiplier_hand():
    # 1x1x1x2 input [1, 2], M = 2, 1x1 filter [10, 20, 30, 40], bias [1,1,1,1]:
    # out[c·2+m] = x[c]·f[c·2+m] + 1 = [1·10+1, 1·20+1, 2·30+1, 2·40+1]
    x = T(F32, np.array([1.0, 2.0]).reshape(1, 1, 1, 2))
    w = T(F32, np.array([10.0, 20, 30, 40]).reshape(1, 1, 1, 4), const=True)
    out = run(DW, [x, w, T(F32, np.ones(4), const=True), 2, 1, 1, 2, 0], F32, (1, 1, 1, 4))
    assert_float(out.ravel(), [11, 21, 61, 81])


# ---- random shapes against the naive oracle -----------------------------------------------------------

CASES = [
    # (N, H, W, C, O-or-M, KH, KW, padding, strides (w,h), dilation (w,h), act, nchw)
    (1, 5, 5, 3, 2, 3, 3, "SAME", (1, 1), (1, 1), 0, False),
    (2, 7, 6, 3, 4, 3, 2, "VALID", (2, 1), (1, 1), 1, False),
    (1, 8, 7, 2, 3, 3, 3, (1, 2, 0, 2), (2, 3), (1, 1), 3, True),
    (2, 9, 9, 2, 2, 2, 3, "SAME", (1, 2), (2, 3), 2, False),
    (1, 6, 5, 4, 1, 1, 1, "VALID", (1, 1), (1, 1), 0, True),
    (1, 5, 9, 3, 2, 3, 3, (2, 2, 1, 0), (3, 2), (2, 1), 1, False),
]


def _pads(padding, h, w, kh, kw, strides, dil):
    if padding == "VALID":
        return (0, 0, 0, 0), [2]
    if padding == "SAME":
        t, b = same_pad(h, strides[1], kh, dil[1])
        l, r = same_pad(w, strides[0], kw, dil[0])
        return (l, r, t, b), [1]
    return padding, list(padding)


def _make(case, depthwise, kind, rng):
    n, h, w, c, o, kh, kw, padding, strides, dil, act, layout = case
    oc = c * o if depthwise else o
    fshape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    pads, pad_args = _pads(padding, h, w, kh, kw, strides, dil)
    quant = None
    if kind in ("float", "float16"):
        ty = F32 if kind == "float" else F16
        x = rng.uniform(-2, 2, (n, h, w, c)).astype(np.float32)
        f = rng.uniform(-1, 1, fshape).astype(np.float32)
        b = rng.uniform(-1, 1, oc).astype(np.float32)
        if kind == "float16":
            x, f, b = (a.astype(np.float16).astype(np.float32) for a in (x, f, b))
        xi, fi, bi, out_t, oq = T(ty, x), T(ty, f, const=True), T(ty, b, const=True), ty, (0.0, 0)
    else:
        qt = Q8A if kind in ("quant8", "perchannel") else Q8AS
        qmin, qmax = QRANGE[qt]
        s_in, zp_in, s_out = 0.06, int(rng.integers(qmin, qmax)), 0.09 if act else 0.05
        zp_out = int(rng.integers(qmin + 40, qmax - 40))
        x = rng.integers(qmin, qmax + 1, (n, h, w, c))
        if kind.startswith("perchannel"):
            scales = [float(s) for s in rng.uniform(0.005, 0.03, oc)]
            f = rng.integers(-127, 128, fshape)
            fi = T(PC8, f, const=True, channel_scales=scales, channel_dim=3 if depthwise else 0)
            s_w, zp_w, bscale = scales, 0, 0.0
        else:
            s_w, zp_w = 0.02, int(rng.integers(qmin, qmax))
            f = rng.integers(qmin, qmax + 1, fshape)
            fi = T(qt, f, s_w, zp_w, const=True)
            bscale = float(np.float32(s_in) * np.float32(s_w))
        b = rng.integers(-3000, 3000, oc)
        xi, bi, out_t, oq = T(qt, x, s_in, zp_in), T(I32, b, bscale, 0, const=True), qt, (s_out, zp_out)
        quant = dict(s_in=s_in, zp_in=zp_in, s_w=s_w, zp_w=zp_w, s_out=s_out, zp_out=zp_out, qmin=qmin, qmax=qmax)
    expected = naive_conv(x, f, b, pads, strides, dil, act, depthwise, o, quant)
    if layout:
        xi.value, xi.shape = nchw(xi.value), (n, c, h, w)
    args = [xi, fi, bi, *pad_args, *strides] + ([o] if depthwise else []) + [act]
    if layout or dil != (1, 1):
        args.append(layout)
    if dil != (1, 1):
        args += list(dil)
    out_shape = expected.shape if not layout else tuple(np.array(expected.shape)[[0, 3, 1, 2]])
    out = run(DW if depthwise else CONV, args, out_t, out_shape, *oq)
    if layout:
        out = np.ascontiguousarray(out.transpose(0, 2, 3, 1))
    return out, expected


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("kind", ["float", "float16", "quant8", "quant8_signed", "perchannel", "perchannel_signed"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_against_naive(case, kind, depthwise):
    rng = np.random.default_rng(case * 31 + len(kind) + depthwise)
    out, expected = _make(CASES[case], depthwise, kind, rng)
    assert out.shape == expected.shape
    if kind.startswith("float"):
        assert_float(out, expected, f16=kind == "float16")
    else:
        assert_exact(out, expected)


def test_quant_saturation():
    # huge accumulators saturate to qmax / qmin: 255·255·4 ≈ 260k, ×(1·1/0.5) -> way above 255
    x = T(Q8A, np.full((1, 2, 2, 1), 255), 1.0, 0)
    w_pos = T(Q8A, np.full((1, 2, 2, 1), 255), 1.0, 0, const=True)
    out = run(CONV, [x, w_pos, T(I32, [0], 1.0, 0, const=True), 2, 1, 1, 0], Q8A, (1, 1, 1, 1), 0.5, 10)
    assert_exact(out, [255])
    w_neg = T(Q8A, np.zeros((1, 2, 2, 1)), 1.0, 255, const=True)
    out = run(CONV, [x, w_neg, T(I32, [0], 1.0, 0, const=True), 2, 1, 1, 0], Q8A, (1, 1, 1, 1), 0.5, 10)
    assert_exact(out, [0])


@pytest.mark.parametrize("op", [CONV, DW])
def test_zero_batch(op):
    x = T(F32, np.zeros((0, 4, 4, 2)))
    w = T(F32, np.ones((2, 3, 3, 2) if op == CONV else (1, 3, 3, 2)), const=True)
    args = [x, w, T(F32, np.zeros(2), const=True), 1, 1, 1] + ([1] if op == DW else []) + [0]
    out = run_direct(op, args, F32)
    assert out.shape == (0, 4, 4, 2) and out.dtype == np.float32


def test_bad_padding_rejected():
    # explicit pad 3 is not < k_eff 3
    x = T(F32, np.ones((1, 4, 4, 1)))
    with pytest.raises(gd.DriverError) as err:
        run(CONV, [x, T(F32, np.ones((1, 3, 3, 1)), const=True), T(F32, [0.0], const=True), 3, 0, 0, 0, 1, 1, 0],
            F32, (1, 5, 2, 1))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT
    assert "padding" in err.value.message


def test_mobilenet_size_layer_is_fast():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 112, 112, 32))
    args = [T(Q8A, x, 0.02, 128), T(Q8A, rng.integers(0, 256, (32, 3, 3, 32)), 0.01, 127, const=True),
            T(I32, rng.integers(-100, 100, 32), float(np.float32(0.02) * np.float32(0.01)), 0, const=True),
            1, 1, 1, 3]
    prepared, feed = build(CONV, args, Q8A, (1, 112, 112, 32), 0.05, 0)
    start = time.perf_counter()
    (out,) = prepared.execute(feed)
    assert time.perf_counter() - start < 2.0
    assert out.shape == (1, 112, 112, 32)
