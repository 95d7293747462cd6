"""ADD and MUL on the reference device: float, int32, quant8 (broadcasting, zero points, saturation,
every fused activation).  Quantized expectations come from the independent oracle in nnref.py."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import OperationType as OP

from .nnref import (F16, F32, I32, Q8A, Q8AS, QRANGE, T, act_float, act_quant, assert_exact, assert_float, f32, mbqm,
                    q_multiplier, run)

ADD, MUL = OP.ADD, OP.MUL


def test_float_add_broadcast_hand():
    # [2,1] + [3] -> [2,3]: [[1+10, 1+20, 1+30], [2+10, 2+20, 2+30]]
    out = run(ADD, [T(F32, [[1.0], [2.0]]), T(F32, [10.0, 20.0, 30.0]), 0], F32, (2, 3))
    assert_float(out, [[11, 21, 31], [12, 22, 32]])


def test_float_mul_relu1_hand():
    # [0.5, −3, 2] · [2, 1, −0.25] = [1, −3, −0.5]; RELU1 clamps to [−1, 1] -> [1, −1, −0.5]
    out = run(MUL, [T(F32, [0.5, -3.0, 2.0]), T(F32, [2.0, 1.0, -0.25]), 2], F32, (3,))
    assert_float(out, [1, -1, -0.5])


def test_add_quant8_broadcast_hand():
    # A (1.0, 0) [1, 2] real [1, 2]; B (2.0, 0) [[1, 2], [3, 4]] real [[2, 4], [6, 8]];
    # sums [[3, 6], [7, 10]], output scale 1.0 -> stored [[3, 6], [7, 10]]
    out = run(ADD, [T(Q8A, [1, 2], 1.0, 0), T(Q8A, [[1, 2], [3, 4]], 2.0, 0), 0], Q8A, (2, 2), 1.0, 0)
    assert_exact(out, [3, 6, 7, 10])


def test_mul_quant8_rounding_hand():
    # (1,0)·(1,0) -> out (2.0, 0): products [1, 4, 3, 8] / 2 = [0.5, 2, 1.5, 4]; MBQM rounds half
    # away from zero: 0.5 -> 1, 1.5 -> 2
    out = run(MUL, [T(Q8A, [1, 2], 1.0, 0), T(Q8A, [[1, 2], [3, 4]], 1.0, 0), 0], Q8A, (2, 2), 2.0, 0)
    assert_exact(out, [1, 2, 2, 4])


def test_int32_wrapping():
    big = 2 ** 31 - 1
    out = run(ADD, [T(I32, [big, -5]), T(I32, [1, 3]), 0], I32, (2,))
    assert_exact(out, [-2 ** 31, -2])
    out = run(MUL, [T(I32, [65536, -7]), T(I32, [65536, 6]), 0], I32, (2,))
    assert_exact(out, [0, -42])  # 2^32 wraps to 0


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("ty", [F32, F16])
@pytest.mark.parametrize("op", [ADD, MUL])
def test_float_activations(op, ty, act):
    rng = np.random.default_rng(act)
    a = rng.uniform(-4, 4, (2, 1, 3)).astype(np.float16 if ty == F16 else np.float32)
    b = rng.uniform(-4, 4, (4, 3)).astype(a.dtype)
    out = run(op, [T(ty, a), T(ty, b), act], ty, (2, 4, 3))
    aa, bb = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    expected = [act_float(x + y if op == ADD else x * y, act) for x, y in zip(aa.ravel(), bb.ravel())]
    assert_float(out.ravel(), expected, f16=ty == F16)


def naive_quant(op, q1, p1, q2, p2, po, act, qmin, qmax):
    """Element-wise oracle; p = (scale, zero point)."""
    (s1, z1), (s2, z2), (so, zo) = p1, p2, po
    res = []
    if op == ADD:
        shift, t = 20, 2.0 * max(s1, s2)
        m1, h1 = q_multiplier(s1 / t)
        m2, h2 = q_multiplier(s2 / t)
        mo, ho = q_multiplier(t / ((1 << shift) * so))
    else:
        m, h = q_multiplier(s1 * s2 / so)
    for x, y in zip(q1, q2):
        if op == ADD:
            a = mbqm((x - z1) * (1 << shift), m1, h1)
            b = mbqm((y - z2) * (1 << shift), m2, h2)
            v = mbqm(a + b, mo, ho) + zo
        else:
            v = zo + mbqm((x - z1) * (y - z2), m, h)
        res.append(act_quant(min(max(v, qmin), qmax), act, so, zo, qmin, qmax))
    return res


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("ty", [Q8A, Q8AS])
@pytest.mark.parametrize("op", [ADD, MUL])
def test_quant_against_naive(op, ty, act):
    rng = np.random.default_rng(act * 3 + int(ty) + int(op))
    qmin, qmax = QRANGE[ty]
    p1 = (f32(0.07), int(rng.integers(qmin, qmax)))
    p2 = (f32(0.031), int(rng.integers(qmin, qmax)))
    po = (f32(0.09) if op == ADD else f32(0.02), int(rng.integers(qmin + 60, qmax - 60)))
    a = rng.integers(qmin, qmax + 1, (2, 1, 5))
    b = rng.integers(qmin, qmax + 1, (3, 5))
    out = run(op, [T(ty, a, *p1), T(ty, b, *p2), act], ty, (2, 3, 5), *po)
    aa, bb = np.broadcast_arrays(a, b)
    assert_exact(out, naive_quant(op, aa.ravel().tolist(), p1, bb.ravel().tolist(), p2, po, act, qmin, qmax))


@pytest.mark.parametrize("op", [ADD, MUL])
def test_quant_saturation(op):
    # real values 127.5+127.5 = 255 (add) or 127.5² (mul), far above the output's max (255·0.1 = 25.5,
    # mul: 255·0.3 = 76.5; MUL needs s_out > 0.5·0.5) -> 255; with a negative real (zero point 255) -> 0
    s_out = 0.1 if op == ADD else 0.3
    hi = run(op, [T(Q8A, [255], 0.5, 0), T(Q8A, [255], 0.5, 0), 0], Q8A, (1,), s_out, 0)
    assert_exact(hi, [255])
    lo = run(op, [T(Q8A, [0], 0.5, 255), T(Q8A, [255], 0.5, 0), 0], Q8A, (1,), s_out, 0)
    assert_exact(lo, [0])
