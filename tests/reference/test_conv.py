"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D on the reference device.

Expected values: hand-worked cases, AOSP conformance specs (runtime/test/specs), the naive loop
oracle in nnref.py for random shapes (per group for GROUPED_CONV_2D) and a naive scatter loop for
TRANSPOSE_CONV_2D.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperationType as OP

from .nnref import (F16, F32, I32, PC8, Q8A, Q8AS, QRANGE, T, act_float, act_quant, assert_exact, assert_float, build,
                    naive_conv, requant, run, run_direct, same_pad)

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


# ---- GROUPED_CONV_2D ------------------------------------------------------------------------------------

GROUPED, TRANSPOSE = OP.GROUPED_CONV_2D, OP.TRANSPOSE_CONV_2D

# grouped_conv2d.mod.py TEST 1: [1, 3, 3, 2] input, 2 groups of one channel, 2x2 filters, VALID
G1_IN = np.array([1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1, 2, 3, 3, 3, 3, 3], np.float64).reshape(1, 3, 3, 2)
G1_W = np.array([1, 2, 2, 1, 4, 3, 2, 1], np.float64).reshape(2, 2, 2, 1)
G1_B = np.array([10, -33.5])
G1_OUT = np.array([33, -0.5, 33, 7.5, 31, 4.5, 27, -9.5]).reshape(1, 2, 2, 2)


@pytest.mark.parametrize("layout", [False, True])
def test_grouped_conv_spec(layout):
    # out(0,0) group 0: channel 0 window [[1,3],[6,4]]·[[1,2],[2,1]] = 1+6+12+4 = 23, + 10 = 33;
    # group 1: channel 1 window [[2,4],[5,3]]·[[4,3],[2,1]] = 8+12+10+3 = 33, − 33.5 = −0.5
    x = nchw(G1_IN) if layout else G1_IN
    out = run(GROUPED, [T(F32, x), T(F32, G1_W, const=True), T(F32, G1_B, const=True), 0, 0, 0, 0, 1, 1, 2, 0,
                        layout], F32, (1, 2, 2, 2))
    assert_float(nchw(G1_OUT) if layout else G1_OUT, out)


def test_grouped_conv_quant8_spec():
    # the quant8 variation: in (0.25, 100), w (0.25, 128), bias 0.0625, out (0.5, 80), RELU1 clamps to [−1, 1]
    x = T(Q8A, G1_IN / 0.25 + 100, 0.25, 100)
    w = T(Q8A, G1_W / 0.25 + 128, 0.25, 128, const=True)
    b = T(I32, G1_B / 0.0625, 0.0625, 0, const=True)
    out = run(GROUPED, [x, w, b, 0, 0, 0, 0, 1, 1, 2, 2, False], Q8A, (1, 2, 2, 2), 0.5, 80)
    assert_exact(out, np.clip(G1_OUT, -1, 1) / 0.5 + 80)


def _group_slices(a, g, groups):
    n = a.shape[-1] // groups
    return a[..., g * n:(g + 1) * n]


GROUPED_CASES = [
    # (N, H, W, C, O, G, KH, KW, padding, strides (w, h), act, nchw)
    (1, 5, 6, 4, 6, 2, 3, 3, "SAME", (1, 1), 0, False),
    (2, 6, 5, 6, 3, 3, 2, 3, (1, 0, 1, 1), (2, 1), 1, True),
    (1, 7, 7, 3, 6, 3, 3, 2, "VALID", (2, 2), 3, False),
    (1, 4, 4, 4, 4, 4, 1, 1, "VALID", (1, 1), 2, True),
]


@pytest.mark.parametrize("kind", ["float", "float16", "quant8", "quant8_signed", "perchannel", "perchannel_signed"])
@pytest.mark.parametrize("case", range(len(GROUPED_CASES)))
def test_grouped_against_naive(case, kind):
    n, h, w, c, o, g, kh, kw, padding, strides, act, layout = GROUPED_CASES[case]
    rng = np.random.default_rng(case * 7 + len(kind))
    # a CONV_2D case whose input channels are one group's; _make draws the operands, naive_conv is the oracle
    conv_case = (n, h, w, c // g, o // g, kh, kw, padding, strides, (1, 1), act, False)
    parts = [_conv_operands(conv_case, kind, rng) for _ in range(g)]
    x = np.concatenate([p["x"] for p in parts], axis=-1)
    f = np.concatenate([p["f"] for p in parts], axis=0)
    b = np.concatenate([p["b"] for p in parts], axis=0)
    q = parts[0]["quant"]
    if q is not None:  # one input and output quantization for every group
        for p in parts[1:]:
            p["quant"] = q
    expected = np.concatenate([naive_conv(_group_slices(x, k, g), parts[k]["f"], parts[k]["b"], parts[k]["pads"],
                                          strides, (1, 1), act, False, 1, _quant_of(parts[k], q)) for k in range(g)],
                              axis=-1)
    xi, fi, bi, out_t, oq = _tensors(kind, x, f, b, parts, q, channel_dim=0, layout=layout)
    _run_and_check(GROUPED, [xi, fi, bi, *parts[0]["pad_args"], *strides, g, act, layout], out_t, oq, expected,
                   layout, kind)


def _run_and_check(op, args, out_t, oq, expected, layout, kind):
    """Run ``op`` (output in the op's layout) and compare with the NHWC ``expected``."""
    out_shape = expected.shape if not layout else tuple(np.array(expected.shape)[[0, 3, 1, 2]])
    out = run(op, args, out_t, out_shape, *oq)
    if layout:
        out = np.ascontiguousarray(out.transpose(0, 2, 3, 1))
    if kind.startswith("float"):
        assert_float(out, expected, f16=kind == "float16")
    else:
        assert_exact(out, expected)


def _conv_operands(case, kind, rng):
    """Random operands of a CONV_2D case (NHWC x, filter [O, KH, KW, C], bias), per ``kind``."""
    n, h, w, c, o, kh, kw, padding, strides, dil, act, _ = case
    pads, pad_args = _pads(padding, h, w, kh, kw, strides, dil)
    d = {"pads": pads, "pad_args": pad_args, "quant": None}
    if kind.startswith("float"):
        d["x"], d["f"], d["b"] = (rng.uniform(-2, 2, s).astype(np.float32) for s in ((n, h, w, c), (o, kh, kw, c), o))
        if kind == "float16":
            d.update({k: d[k].astype(np.float16).astype(np.float32) for k in ("x", "f", "b")})
        return d
    qt = Q8A if kind in ("quant8", "perchannel") else Q8AS
    qmin, qmax = QRANGE[qt]
    d["x"] = rng.integers(qmin, qmax + 1, (n, h, w, c))
    d["b"] = rng.integers(-3000, 3000, o)
    if kind.startswith("perchannel"):
        d["f"] = rng.integers(-127, 128, (o, kh, kw, c))
        d["scales"] = [float(s) for s in rng.uniform(0.005, 0.03, o)]
    else:
        d["f"] = rng.integers(qmin, qmax + 1, (o, kh, kw, c))
    d["quant"] = dict(s_in=0.06, zp_in=int(rng.integers(qmin, qmax)), s_w=0.02, zp_w=int(rng.integers(qmin, qmax)),
                      s_out=0.09 if act else 0.05, zp_out=int(rng.integers(qmin + 40, qmax - 40)), qmin=qmin,
                      qmax=qmax, type=qt)
    return d


def _quant_of(part, q):
    """The oracle's quantization dict for one part (its per-channel scales, or the shared filter zero point)."""
    if q is None:
        return None
    if "scales" in part:
        return dict(q, s_w=part["scales"], zp_w=0)
    return q


def _tensors(kind, x, f, b, parts, q, channel_dim, layout=False):
    """The T operands (input, NCHW when ``layout``; constant filter and bias), output type and output
    quantization."""
    x = nchw(x) if layout else x
    if q is None:
        ty = F16 if kind == "float16" else F32
        return T(ty, x), T(ty, f, const=True), T(ty, b, const=True), ty, (0.0, 0)
    qt = q["type"]
    if "scales" in parts[0]:
        scales = [s for p in parts for s in p["scales"]]
        fi = T(PC8, f, const=True, channel_scales=scales, channel_dim=channel_dim)
        bscale = 0.0
    else:
        fi = T(qt, f, q["s_w"], q["zp_w"], const=True)
        bscale = float(np.float32(q["s_in"]) * np.float32(q["s_w"]))
    return (T(qt, x, q["s_in"], q["zp_in"]), fi, T(I32, b, bscale, 0, const=True), qt, (q["s_out"], q["zp_out"]))


def test_grouped_invalid():
    x = T(F32, np.ones((1, 4, 4, 4)))
    b2 = T(F32, np.zeros(2), const=True)
    cases = [
        ([x, T(F32, np.ones((2, 3, 3, 3)), const=True), b2, 1, 1, 1, 2, 0, False], "depth"),   # 3·2 ≠ 4
        ([x, T(F32, np.ones((3, 3, 3, 2)), const=True), T(F32, np.zeros(3), const=True), 1, 1, 1, 2, 0, False],
         "multiple"),                                                                              # 3 % 2 ≠ 0
        ([x, T(F32, np.ones((2, 3, 3, 4)), const=True), b2, 1, 1, 1, 0, 0, False], "groups"),   # G = 0
        ([x, T(F32, np.ones((2, 2, 2, 2)), const=True), b2, 2, 0, 0, 0, 1, 1, 2, 0, False], "padding"),  # pad ≥ k
        ([x, T(F32, np.ones((2, 3, 3, 2)), const=True), T(F32, np.zeros(3), const=True), 1, 1, 1, 2, 0, False],
         "bias"),
    ]
    for args, word in cases:
        with pytest.raises(gd.DriverError) as err:
            run(GROUPED, args, F32, (1, 4, 4, 2))
        assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT and word in err.value.message, word


def test_grouped_zero_batch_fails():
    # GROUPED_CONV_2D is not among the operations accepting zero-sized inputs (operations.md §0.6)
    x = T(F32, np.zeros((0, 4, 4, 2)))
    with pytest.raises(gd.DriverError) as err:
        run_direct(GROUPED, [x, T(F32, np.ones((2, 3, 3, 1)), const=True), T(F32, np.zeros(2), const=True),
                             1, 1, 1, 2, 0, False], F32)
    assert err.value.status == gd.ErrorStatus.GENERAL_FAILURE


# ---- TRANSPOSE_CONV_2D ----------------------------------------------------------------------------------

# transpose_conv2d.mod.py TEST 1: [1, 2, 2, 1] input 1..4, filter [2, 3, 3, 1], VALID, stride 2 -> [1, 5, 5, 2]
TC1_W = np.array([1, 3, 5, 7, 9, 11, 13, 15, 17, 2, 4, 6, 8, 10, 12, 14, 16, 18], np.float64).reshape(2, 3, 3, 1)
TC1_OUT = np.array([-0.5, 0, 1.5, 2, 5.5, 8, 4.5, 6, 8.5, 10,
                    5.5, 6, 7.5, 8, 23.5, 26, 16.5, 18, 20.5, 22,
                    14.5, 18, 22.5, 26, 60.5, 70, 40.5, 46, 52.5, 58,
                    19.5, 22, 25.5, 28, 59.5, 66, 34.5, 38, 42.5, 46,
                    37.5, 40, 43.5, 46, 101.5, 108, 58.5, 62, 66.5, 70]).reshape(1, 5, 5, 2)


def _tc1_args(x_type=F32, layout=False, out_shape=(1, 5, 5, 2)):
    x = np.arange(1, 5, dtype=np.float64).reshape(1, 2, 2, 1)
    return [T(x_type, nchw(x) if layout else x), T(x_type, TC1_W, const=True),
            T(x_type, [-1.5, -2], const=True), T(I32, out_shape, const=True), 2, 2, 2, 0, layout]


@pytest.mark.parametrize("layout", [False, True])
@pytest.mark.parametrize("ty", [F32, F16])
def test_transpose_conv_spec(layout, ty):
    # output (0, 0) channel 0 = 1·1 − 1.5 = −0.5; (0, 2) gets taps of input x = 0 (j = 2) and x = 1 (j = 0):
    # 1·5 + 2·1 − 1.5 = 5.5
    shape = (1, 2, 5, 5) if layout else (1, 5, 5, 2)
    out = run(TRANSPOSE, _tc1_args(ty, layout, shape), ty, shape)
    assert_float(nchw(TC1_OUT) if layout else TC1_OUT, out, f16=ty == F16)


def test_transpose_conv_same_relu_spec():
    # transpose_conv2d.mod.py TEST 2: [1, 1, 2, 1] input [300, 500], 3x3 filter, requested [1, 3, 4, 1],
    # SAME, stride 3, RELU: padding (top 0, bottom 0; left 1, right 1)
    x = T(F32, np.array([300.0, 500.0]).reshape(1, 1, 2, 1))
    w = T(F32, np.array([9, 5, 6, 9, 8, 5, 3, 1, 4], np.float64).reshape(1, 3, 3, 1), const=True)
    out = run(TRANSPOSE, [x, w, T(F32, [-1000.0], const=True), T(I32, [1, 3, 4, 1], const=True), 1, 3, 3, 1, False],
              F32, (1, 3, 4, 1))
    assert_float(out.ravel(), [500, 800, 3500, 1500, 1400, 500, 3500, 3000, 0, 200, 500, 0])


def test_transpose_conv_hand_worked_negative_padding():
    # input [1, 2] along x, filter [1, 10, 100], stride 2: scatter 1·[1, 10, 100] at 0..2 and
    # 2·[1, 10, 100] at 2..4 -> [1, 10, 102, 20, 200]; + bias 0.5.  Explicit pads left 1, right −1:
    # out W = 2·2 + 3 − 2 − 1 + 1 = 5, the window shifted by one: [10, 102, 20, 200, 0] + 0.5
    x = T(F32, np.array([1.0, 2.0]).reshape(1, 1, 2, 1))
    w = T(F32, np.array([1.0, 10.0, 100.0]).reshape(1, 1, 3, 1), const=True)
    b = T(F32, [0.5], const=True)
    out = run(TRANSPOSE, [x, w, b, 0, 0, 0, 0, 2, 1, 0, False], F32, (1, 1, 5, 1))
    assert_float(out.ravel(), [1.5, 10.5, 102.5, 20.5, 200.5])
    out = run(TRANSPOSE, [x, w, b, 1, -1, 0, 0, 2, 1, 0, False], F32, (1, 1, 5, 1))
    assert_float(out.ravel(), [10.5, 102.5, 20.5, 200.5, 0.5])


def test_transpose_padding_rule():
    from gpu_driver.ops.conv import transpose_padding
    assert transpose_padding(1, 4, 3, 3) == (1, 1)     # ceil(4/3) = 2: (2−1)·3 + 3 − 4 = 2
    assert transpose_padding(1, 5, 2, 3) == (1, 1)     # (3−1)·2 + 3 − 5 = 2
    assert transpose_padding(1, 4, 2, 1) == (0, -1)    # (2−1)·2 + 1 − 4 = −1: the tail goes negative
    assert transpose_padding(2, 9, 2, 3) == (0, 0)     # VALID


def test_transpose_conv_float_range():
    # activation NONE still clamps to ±FLT_MAX (AOSP's CalculateActivationRangeFloat): 3e38·2 -> FLT_MAX
    x = T(F32, np.array([3e38, -3e38], np.float32).reshape(1, 1, 2, 1))
    w = T(F32, np.array([2.0]).reshape(1, 1, 1, 1), const=True)
    out = run(TRANSPOSE, [x, w, T(F32, [0.0], const=True), 0, 0, 0, 0, 1, 1, 0, False], F32, (1, 1, 2, 1))
    fmax = np.finfo(np.float32).max
    np.testing.assert_array_equal(out.ravel(), [fmax, -fmax])


def naive_transpose_conv(x, w, b, pads, strides, act=0, quant=None):
    """The scatter form over NHWC ``x`` and filter [O, KH, KW, C] in plain Python; pads = (l, r, t, b)."""
    n_, h_, w_, c_ = x.shape
    oc, kh, kw, _ = w.shape
    pl, pr, pt, pb = pads
    sw, sh = strides
    oh, ow = h_ * sh + kh - sh - pt - pb, w_ * sw + kw - sw - pl - pr
    acc = [[[[0] * oc for _ in range(ow)] for _ in range(oh)] for _ in range(n_)]
    zi = quant["zp_in"] if quant else 0
    zw = quant["zp_w"] if quant else 0
    xl, wl = x.tolist(), w.tolist()
    for n in range(n_):
        for y in range(h_):
            for xx in range(w_):
                for i in range(kh):
                    for j in range(kw):
                        oy, ox = y * sh - pt + i, xx * sw - pl + j
                        if 0 <= oy < oh and 0 <= ox < ow:
                            for o in range(oc):
                                acc[n][oy][ox][o] += sum((xl[n][y][xx][c] - zi) * (wl[o][i][j][c] - zw)
                                                         for c in range(c_))
    out = np.zeros((n_, oh, ow, oc), dtype=np.float64 if quant is None else np.int64)
    for n in range(n_):
        for y in range(oh):
            for xx in range(ow):
                for o in range(oc):
                    v = acc[n][y][xx][o] + b[o]
                    if quant is None:
                        out[n, y, xx, o] = act_float(v, act)
                        continue
                    s_w = quant["s_w"][o] if isinstance(quant["s_w"], list) else quant["s_w"]
                    r = min(max(requant(v, quant["s_in"], s_w, quant["s_out"], quant["zp_out"]), quant["qmin"]),
                            quant["qmax"])
                    out[n, y, xx, o] = act_quant(r, act, quant["s_out"], quant["zp_out"], quant["qmin"], quant["qmax"])
    return out


TRANSPOSE_CASES = [
    # (N, H, W, C, O, KH, KW, padding (explicit (l, r, t, b) or (code, requested H, W)), strides (w, h), act, nchw)
    (1, 3, 4, 2, 3, 3, 3, (1, 1, 0, 2), (2, 2), 0, False),
    (2, 2, 3, 3, 2, 2, 3, ("SAME", 6, 7), (3, 2), 1, True),
    (1, 4, 3, 1, 4, 3, 2, ("VALID", 6, 4), (1, 1), 3, False),
    (1, 3, 3, 2, 2, 4, 4, (2, -1, 0, 1), (2, 3), 2, True),
]


@pytest.mark.parametrize("kind", ["float", "float16", "quant8", "quant8_signed", "perchannel", "perchannel_signed"])
@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_transpose_against_naive(case, kind):
    from gpu_driver.ops.conv import transpose_padding
    n, h, w, c, o, kh, kw, padding, strides, act, layout = TRANSPOSE_CASES[case]
    rng = np.random.default_rng(case * 5 + len(kind))
    part = _conv_operands((n, h, w, c, o, kh, kw, "VALID", strides, (1, 1), act, False), kind, rng)
    q = part["quant"]
    if isinstance(padding[0], str):
        code = 1 if padding[0] == "SAME" else 2
        t, bt = transpose_padding(code, padding[1], strides[1], kh)
        l, r = transpose_padding(code, padding[2], strides[0], kw)
        pads = (l, r, t, bt)
        requested = (n, o, padding[1], padding[2]) if layout else (n, padding[1], padding[2], o)
        pad_args = [T(I32, requested, const=True), code]
    else:
        pads, pad_args = padding, list(padding)
    expected = naive_transpose_conv(part["x"], part["f"], part["b"], pads, strides, act, _quant_of(part, q))
    xi, fi, bi, out_t, oq = _tensors(kind, part["x"], part["f"], part["b"], [part], q, channel_dim=0, layout=layout)
    _run_and_check(TRANSPOSE, [xi, fi, bi, *pad_args, *strides, act, layout], out_t, oq, expected, layout, kind)


def test_transpose_invalid():
    x = T(F32, np.ones((1, 2, 2, 2)))
    w = T(F32, np.ones((1, 3, 3, 2)), const=True)
    b = T(F32, [0.0], const=True)
    cases = [
        ([x, w, b, -1, 0, 0, 0, 1, 1, 0, False], "padding"),                    # left < 0
        ([x, w, b, 0, 0, 0, 4, 1, 1, 0, False], "output size"),                 # 2 + 3 − 1 − 4 = 0
        ([x, T(F32, np.ones((1, 3, 3, 3)), const=True), b, 0, 0, 0, 0, 1, 1, 0, False], "depth"),
        ([x, w, T(F32, [0.0, 1.0], const=True), 0, 0, 0, 0, 1, 1, 0, False], "bias"),
        ([x, w, b, T(I32, [1, 4, 4], const=True), 1, 1, 1, 0, False], "4 entries"),
        ([x, w, b, T(I32, [1, 4, 4, 1], const=True), 3, 1, 1, 0, False], "padding code"),
        ([x, w, b, 0, 0, 0, 0, 0, 1, 0, False], "strides"),
    ]
    for args, word in cases:
        with pytest.raises(gd.DriverError) as err:
            run(TRANSPOSE, args, F32, (1, 4, 4, 1))
        assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT and word in err.value.message, word


def test_transpose_zero_batch():
    x = T(Q8A, np.zeros((0, 2, 2, 1)), 0.5, 3)
    out = run_direct(TRANSPOSE, [x, T(Q8A, np.ones((2, 3, 3, 1)), 0.5, 0, const=True), T(I32, [0, 0], 0.25, 0,
                                                                                         const=True),
                                 0, 0, 0, 0, 2, 2, 0, False], Q8A, 1.0, 0)
    assert out.shape == (0, 5, 5, 2) and out.dtype == np.uint8
