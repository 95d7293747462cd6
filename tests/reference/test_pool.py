"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D on the reference device (hand-worked, AOSP specs, naive loops)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperationType as OP

from .nnref import F16, F32, Q8A, Q8AS, QRANGE, T, act_float, act_quant, assert_exact, assert_float, run, run_direct, \
    same_pad

AVG, MAX, L2 = OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D, OP.L2_POOL_2D


def test_l2_pool_spec():
    # l2_pool_float.mod.py: 1x1 filter, stride 1, SAME -> sqrt(x²/1) = x
    out = run(L2, [T(F32, np.array([1.0, 2, 3, 4]).reshape(1, 2, 2, 1)), 1, 1, 1, 1, 1, 0], F32, (1, 2, 2, 1))
    assert_float(out.ravel(), [1, 2, 3, 4])


def test_avg_pool_quant8_padding_not_counted_spec():
    # avg_pool_quant8_2.mod.py (smaller): all-255 input, pad 5, filter 10, stride 5: every window
    # averages only in-bounds cells -> 255 everywhere (padding counted would pull it down)
    h = 32
    oh = (h + 10 - 10 + 5) // 5
    out = run(AVG, [T(Q8A, np.full((2, h, h, 3), 255), 0.5, 0), 5, 5, 5, 5, 5, 5, 10, 10, 0], Q8A, (2, oh, oh, 3),
              0.5, 0)
    assert out.shape == (2, oh, oh, 3)
    assert (out == 255).all()


def test_avg_pool_same_hand():
    # 2x2 input [1,2;3,4], 2x2 filter, SAME stride 1: total pad 1 -> bottom/right only.
    # (0,0): (1+2+3+4)/4 = 2.5; (0,1): (2+4)/2 = 3; (1,0): (3+4)/2 = 3.5; (1,1): 4
    out = run(AVG, [T(F32, np.array([1.0, 2, 3, 4]).reshape(1, 2, 2, 1)), 1, 1, 1, 2, 2, 0], F32, (1, 2, 2, 1))
    assert_float(out.ravel(), [2.5, 3, 3.5, 4])


def test_max_pool_padding_never_wins_hand():
    # all −5, 3x3 SAME: padded cells (logically absent) must not produce 0
    out = run(MAX, [T(F32, np.full((1, 3, 3, 1), -5.0)), 1, 1, 1, 3, 3, 0], F32, (1, 3, 3, 1))
    assert_float(out.ravel(), [-5.0] * 9)


@pytest.mark.parametrize("ty,vals,expected", [
    # window of 2 cells: 1+2 = 3 -> 1.5 rounds half away -> 2; 2+2 = 4 -> 2; 2+3 = 5 -> 2.5 -> 3
    (Q8A, [1, 2, 2, 3], [2, 3]),
    # signed: −1−2 = −3 -> −1.5 -> −2; −2−3 = −5 -> −2.5 -> −3
    (Q8AS, [-1, -2, -2, -3], [-2, -3]),
])
def test_avg_pool_quant_rounding_hand(ty, vals, expected):
    # 1x4 row, 1x2 filter, stride 2, VALID
    out = run(AVG, [T(ty, np.array(vals).reshape(1, 1, 4, 1), 1.0, 0), 2, 2, 1, 2, 1, 0], ty, (1, 1, 2, 1), 1.0, 0)
    assert_exact(out, expected)


def naive_pool(kind, x, pads, strides, k, act, quant=None):
    """Loops; pads (l, r, t, b), strides (w, h), k (w, h).  quant: (scale, zp, qmin, qmax)."""
    n_, h, w, c = x.shape
    pl, pr, pt, pb = pads
    sw, sh = strides
    kw, kh = k
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    out = np.zeros((n_, oh, ow, c), dtype=np.float64 if quant is None else np.int64)
    xl = x.tolist()
    for n in range(n_):
        for y in range(oh):
            for xx in range(ow):
                for ch in range(c):
                    cells = [xl[n][iy][ix][ch] for iy in range(y * sh - pt, y * sh - pt + kh)
                             for ix in range(xx * sw - pl, xx * sw - pl + kw) if 0 <= iy < h and 0 <= ix < w]
                    if kind == "max":
                        v = max(cells)
                    elif kind == "l2":
                        v = math.sqrt(sum(a * a for a in cells) / len(cells))
                    elif quant is None:
                        v = sum(cells) / len(cells)
                    else:
                        s, cnt = sum(cells), len(cells)
                        v = (s + cnt // 2) // cnt if s >= 0 else -((-s + cnt // 2) // cnt)
                    out[n, y, xx, ch] = act_float(v, act) if quant is None else act_quant(v, act, *quant)
    return out


CASES = [
    # (N, H, W, C, padding, strides (w,h), filter (w,h), act, nchw)
    (1, 5, 5, 2, "SAME", (2, 2), (3, 3), 0, False),
    (2, 7, 6, 3, "VALID", (1, 2), (2, 3), 1, False),
    (1, 6, 7, 2, (1, 2, 2, 0), (2, 3), (3, 3), 3, True),
    (2, 4, 9, 1, "SAME", (3, 1), (4, 2), 2, False),
    (1, 3, 3, 4, (0, 0, 0, 0), (1, 1), (1, 1), 0, True),
]


# L2_POOL_2D has no quantized types, so it pairs with the float types only
KIND_TYPES = [(kind, ty) for kind in ("avg", "max", "l2")
              for ty in ("float", "float16", "quant8", "quant8_signed")
              if not (kind == "l2" and ty.startswith("quant"))]


@pytest.mark.parametrize("kind,ty", KIND_TYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_against_naive(case, ty, kind):
    n, h, w, c, padding, strides, k, act, layout = CASES[case]
    rng = np.random.default_rng(case * 7 + len(ty) + len(kind))
    if padding == "SAME":
        t, b = same_pad(h, strides[1], k[1])
        l, r = same_pad(w, strides[0], k[0])
        pads, pad_args = (l, r, t, b), [1]
    elif padding == "VALID":
        pads, pad_args = (0, 0, 0, 0), [2]
    else:
        pads, pad_args = padding, list(padding)
    quant = None
    if ty.startswith("float"):
        optype = F32 if ty == "float" else F16
        x = rng.uniform(-3, 8, (n, h, w, c)).astype(np.float16 if ty == "float16" else np.float32)
        if kind == "l2":
            x = np.abs(x)
        xi, oq = T(optype, x), (0.0, 0)
    else:
        optype = Q8A if ty == "quant8" else Q8AS
        qmin, qmax = QRANGE[optype]
        scale, zp = 0.05, int(rng.integers(qmin + 20, qmax - 20))
        x = rng.integers(qmin, qmax + 1, (n, h, w, c))
        xi, oq, quant = T(optype, x, scale, zp), (scale, zp), (scale, zp, qmin, qmax)
    expected = naive_pool(kind, x.astype(np.float64) if quant is None else x, pads, strides, k, act, quant)
    if layout:
        xi.value, xi.shape = np.ascontiguousarray(xi.value.transpose(0, 3, 1, 2)), (n, c, h, w)
    args = [xi, *pad_args, *strides, *k, act] + ([layout] if layout else [])
    out_shape = tuple(np.array(expected.shape)[[0, 3, 1, 2]]) if layout else expected.shape
    op = {"avg": AVG, "max": MAX, "l2": L2}[kind]
    out = run(op, args, optype, out_shape, *oq)
    if layout:
        out = out.transpose(0, 2, 3, 1)
    if quant is None:
        assert_float(out, expected, f16=ty == "float16")
    else:
        assert_exact(out, expected)


@pytest.mark.parametrize("op", [AVG, MAX, L2])
def test_zero_batch(op):
    out = run_direct(op, [T(F32, np.zeros((0, 4, 4, 2))), 1, 1, 1, 2, 2, 0], F32)
    assert out.shape == (0, 4, 4, 2)


def test_quant_output_params_must_match_input():
    with pytest.raises(gd.DriverError) as err:
        run(MAX, [T(Q8A, np.zeros((1, 2, 2, 1)), 0.5, 0), 2, 1, 1, 2, 2, 0], Q8A, (1, 1, 1, 1), 0.25, 0)
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_padding_not_smaller_than_filter_rejected():
    with pytest.raises(gd.DriverError) as err:
        run(AVG, [T(F32, np.zeros((1, 4, 4, 1))), 2, 0, 0, 0, 1, 1, 2, 2, 0], F32, (1, 3, 5, 1))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT
    assert "padding" in err.value.message
