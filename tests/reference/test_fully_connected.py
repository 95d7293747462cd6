"""FULLY_CONNECTED on the reference device (hand-worked, AOSP specs, naive loops)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import OperationType as OP

from .nnref import (F16, F32, I32, Q8A, Q8AS, QRANGE, T, act_float, act_quant, assert_exact, assert_float, requant,
                    run, run_direct)

FC = OP.FULLY_CONNECTED


def test_quant8_spec():
    # fully_connected_quant8.mod.py: x (0.5, 0) [2, 32, 16], w (0.5, 0) [[2]], bias 0.25 [4], out 1.0:
    # acc = x·2 + 4 = 8, 68, 36; ×0.25 -> 2, 17, 9
    out = run(FC, [T(Q8A, np.array([2, 32, 16]).reshape(3, 1), 0.5, 0), T(Q8A, [[2]], 0.5, 0, const=True),
                   T(I32, [4], 0.25, 0, const=True), 0], Q8A, (3, 1), 1.0, 0)
    assert_exact(out, [2, 17, 9])


def test_float_hand_rank4_input():
    # input [1,2,2,1] = [1,2,3,4] viewed as [2, 2] with weights [[1, 10], [-1, 0]] + bias [0.5, 0]:
    # row0 (1,2): 1+20+0.5 = 21.5, -1; row1 (3,4): 3+40+0.5 = 43.5, -3; RELU -> [21.5, 0, 43.5, 0]
    out = run(FC, [T(F32, np.array([1.0, 2, 3, 4]).reshape(1, 2, 2, 1)), T(F32, [[1.0, 10.0], [-1.0, 0.0]], const=True),
                   T(F32, [0.5, 0.0], const=True), 1], F32, (2, 2))
    assert_float(out, [[21.5, 0], [43.5, 0]])


def naive_fc(x, w, b, act, quant=None):
    xl, wl = x.tolist(), w.tolist()
    out = []
    for row in xl:
        r = []
        for u, wrow in enumerate(wl):
            if quant is None:
                r.append(act_float(sum(a * c for a, c in zip(row, wrow)) + float(b[u]), act))
            else:
                acc = int(b[u]) + sum((a - quant["zp_in"]) * (c - quant["zp_w"]) for a, c in zip(row, wrow))
                v = requant(acc, quant["s_in"], quant["s_w"], quant["s_out"], quant["zp_out"])
                v = min(max(v, quant["qmin"]), quant["qmax"])
                r.append(act_quant(v, act, quant["s_out"], quant["zp_out"], quant["qmin"], quant["qmax"]))
        out.append(r)
    return np.array(out)


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", ["float", "float16", "quant8", "quant8_signed"])
def test_against_naive(kind, act):
    rng = np.random.default_rng(act * 5 + len(kind))
    shape, units, size = (3, 2, 4), 5, 8  # viewed as [3, 8]
    if kind.startswith("float"):
        ty = F32 if kind == "float" else F16
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        w = rng.uniform(-1, 1, (units, size)).astype(np.float32)
        b = rng.uniform(-1, 1, units).astype(np.float32)
        if ty == F16:
            x, w, b = (a.astype(np.float16).astype(np.float32) for a in (x, w, b))
        out = run(FC, [T(ty, x), T(ty, w, const=True), T(ty, b, const=True), act], ty, (3, units))
        assert_float(out, naive_fc(x.reshape(3, size), w, b, act), f16=ty == F16)
    else:
        ty = Q8A if kind == "quant8" else Q8AS
        qmin, qmax = QRANGE[ty]
        q = dict(s_in=0.1, zp_in=int(rng.integers(qmin, qmax)), s_w=0.03, zp_w=int(rng.integers(qmin, qmax)),
                 s_out=0.07, zp_out=int(rng.integers(qmin + 50, qmax - 50)), qmin=qmin, qmax=qmax)
        x = rng.integers(qmin, qmax + 1, shape)
        w = rng.integers(qmin, qmax + 1, (units, size))
        b = rng.integers(-5000, 5000, units)
        bscale = float(np.float32(0.1) * np.float32(0.03))
        out = run(FC, [T(ty, x, q["s_in"], q["zp_in"]), T(ty, w, q["s_w"], q["zp_w"], const=True),
                       T(I32, b, bscale, 0, const=True), act], ty, (3, units), q["s_out"], q["zp_out"])
        assert_exact(out, naive_fc(x.reshape(3, size), w, b, act, q))


@pytest.mark.parametrize("x,s_out,expected", [
    (3, 0.25, 60),  # acc 3·5 = 15, M = 1·1/0.25 = 4 -> 60
    (7, 0.3, 117),  # acc 35, M = 1/f32(0.3) ≈ 3.3333332 -> 116.67 -> 117
])
def test_multiplier_greater_than_one_hand(x, s_out, expected):
    out = run(FC, [T(Q8A, [[x]], 1.0, 0), T(Q8A, [[5]], 1.0, 0, const=True), T(I32, [0], 1.0, 0, const=True), 0],
              Q8A, (1, 1), s_out, 0)
    assert_exact(out, [expected])


def test_saturation():
    # acc = 4·(255·255) = 260100, ×(1·1/1) -> far above 255 -> 255; negated weights -> 0
    x = T(Q8A, np.full((1, 4), 255), 1.0, 0)
    out = run(FC, [x, T(Q8A, np.full((1, 4), 255), 1.0, 0, const=True), T(I32, [0], 1.0, 0, const=True), 0],
              Q8A, (1, 1), 1.0, 0)
    assert_exact(out, [255])
    out = run(FC, [x, T(Q8A, np.zeros((1, 4)), 1.0, 255, const=True), T(I32, [0], 1.0, 0, const=True), 0],
              Q8A, (1, 1), 1.0, 0)
    assert_exact(out, [0])


def test_zero_batch():
    out = run_direct(FC, [T(F32, np.zeros((0, 3))), T(F32, np.ones((2, 3))), T(F32, np.zeros(2)), 0], F32)
    assert out.shape == (0, 2)


def test_large_fc_is_fast():
    rng = np.random.default_rng(0)
    out = run(FC, [T(Q8A, rng.integers(0, 256, (4, 1024)), 0.02, 128),
                   T(Q8A, rng.integers(0, 256, (1000, 1024)), 0.01, 127, const=True),
                   T(I32, np.zeros(1000), float(np.float32(0.02) * np.float32(0.01)), 0, const=True), 0],
              Q8A, (4, 1000), 0.1, 128)
    assert out.shape == (4, 1000)
