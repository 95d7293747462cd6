"""CONCATENATION on the reference device (hand-worked, AOSP specs, naive requantisation loop)."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperationType as OP

from .nnref import F16, F32, Q8A, Q8AS, QRANGE, T, assert_exact, assert_float, round_away, run, run_direct

CAT = OP.CONCATENATION


@pytest.mark.parametrize("axis,expected", [
    (0, [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]),
    (1, [[1, 2, 3, 7, 8, 9], [4, 5, 6, 10, 11, 12]]),
])
def test_float_hand(axis, expected):
    a = T(F32, np.array([[1.0, 2, 3], [4, 5, 6]]))
    b = T(F32, np.array([[7.0, 8, 9], [10, 11, 12]]))
    out = run(CAT, [a, b, axis], F32, np.array(expected).shape)
    assert_float(out, expected)


def test_quant8_same_params_spec():
    # concat_quant8_2.mod.py (smaller): identical params -> byte copy, values x % 256 continue across inputs
    r1, r2, col = 8, 4, 64
    a = np.arange(r1 * col).reshape(r1, col) % 256
    b = (np.arange(r2 * col) + r1 * col).reshape(r2, col) % 256
    out = run(CAT, [T(Q8A, a, 0.5, 0), T(Q8A, b, 0.5, 0), 0], Q8A, (r1 + r2, col), 0.5, 0)
    assert_exact(out, np.arange((r1 + r2) * col) % 256)


def test_quant8_requantize_hand():
    # out (1.0, zp 10).  A (0.5, 0): 10·0.5 = 5 -> 15; 11·0.5 = 5.5 -> 6 (half away) -> 16.
    # B (0.25, 128): f = 0.25, bias = −32: 128 -> 0 -> 10; 130 -> 0.5 -> 1 -> 11; 0 -> −32 -> −22 -> clamp 0
    out = run(CAT, [T(Q8A, [10, 11], 0.5, 0), T(Q8A, [128, 130, 0], 0.25, 128), 0], Q8A, (5,), 1.0, 10)
    assert_exact(out, [15, 16, 10, 11, 0])


def test_quant8_signed_requantize_hand():
    # in (0.5, −10) -> out (1.0, 0): f = 0.5, bias = 5: −11 -> −0.5 -> −1; −13 -> −1.5 -> −2;
    # 127 -> 68.5 -> 69; second input already has the output params: copied
    out = run(CAT, [T(Q8AS, [-11, -13, 127], 0.5, -10), T(Q8AS, [-128, 5], 1.0, 0), 0], Q8AS, (5,), 1.0, 0)
    assert_exact(out, [-1, -2, 69, -128, 5])


def naive_requant(q, s_in, zp_in, s_out, zp_out, qmin, qmax):
    f = np.float32(s_in) * (np.float32(1.0) / np.float32(s_out))
    bias = np.float32(-zp_in) * f
    return [min(max(round_away(float(np.float32(v) * f + bias)) + zp_out, qmin), qmax) for v in q]


@pytest.mark.parametrize("ty", [Q8A, Q8AS])
def test_quant_random_against_naive(ty):
    rng = np.random.default_rng(int(ty))
    qmin, qmax = QRANGE[ty]
    params = [(0.1, int(rng.integers(qmin, qmax))), (0.037, int(rng.integers(qmin, qmax))), (0.2, 3)]
    shapes = [(2, 3, 2, 4), (2, 3, 5, 4), (2, 3, 1, 4)]
    xs = [rng.integers(qmin, qmax + 1, s) for s in shapes]
    s_out, zp_out = 0.2, 3
    out = run(CAT, [T(ty, x, s, z) for x, (s, z) in zip(xs, params)] + [2], ty, (2, 3, 8, 4), s_out, zp_out)
    parts = [np.array(naive_requant(x.ravel().tolist(), s, z, s_out, zp_out, qmin, qmax)).reshape(x.shape)
             for x, (s, z) in zip(xs, params)]
    assert_exact(out, np.concatenate(parts, axis=2))


def test_float16_three_inputs_last_axis():
    xs = [np.full((1, 2, 2, c), c, dtype=np.float16) for c in (1, 2, 3)]
    out = run(CAT, [T(F16, x) for x in xs] + [3], F16, (1, 2, 2, 6))
    assert out.dtype == np.float16
    assert_float(out[0, 0, 0], [1, 2, 2, 3, 3, 3], f16=True)


def test_zero_sized_input_contributes_nothing():
    out = run_direct(CAT, [T(F32, np.zeros((0, 3))), T(F32, np.ones((2, 3))), 0], F32)
    assert_float(out, np.ones((2, 3)))


@pytest.mark.parametrize("axis", [-1, 2])
def test_bad_axis_rejected(axis):
    with pytest.raises(gd.DriverError) as err:
        run(CAT, [T(F32, np.zeros((2, 2))), T(F32, np.zeros((2, 2))), axis], F32, (2, 4))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT
