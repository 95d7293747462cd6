"""CONCATENATION and PACK on the reference device (hand-worked, AOSP specs, naive requantisation loop)."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperationType as OP

from .nnref import F16, F32, I32, Q8A, Q8AS, QRANGE, T, assert_exact, assert_float, round_away, run, run_direct

CAT = OP.CONCATENATION
PACK = OP.PACK


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


def test_quant8_mixed_range_spec():
    # concat_mixed_quant.mod.py (FourInputsQuantizedMixedRange): four inputs of different params into
    # (0.1, 127); values as AOSP's generator quantizes them (round half away)
    params = [(0.084, 127), (0.05, 0), (0.089, 123), (0.029, 0)]
    data = [[1.0, -3.0, -4.0, -7.0], [1.1, 3.1, 4.1, 7.1], [1.2, -3.2, -4.2, 7.2], [1.3, 3.3, 4.3, 7.3]]
    ins = [T(Q8A, np.clip([round_away(v / s) + z for v in x], 0, 255).reshape(2, 1, 2), s, z)
           for x, (s, z) in zip(data, params)]
    out = run(CAT, ins + [2], Q8A, (2, 1, 8), 0.1, 127)
    expected = [1.0, -3.0, 1.1, 3.1, 1.2, -3.2, 1.3, 3.3, -4.0, -7.0, 4.1, 7.1, -4.2, 7.2, 4.3, 7.3]
    np.testing.assert_allclose((out.astype(np.int64).ravel() - 127) * 0.1, expected, atol=0.1 + 1e-6)


def test_quant8_differing_params_need_feature_level_3():
    # a Q8A model whose inputs' params differ from the output's is FL3: legal on this driver
    out = run(CAT, [T(Q8A, [4], 0.5, 0), T(Q8A, [4], 1.0, 0), 0], Q8A, (2,), 1.0, 0)
    assert_exact(out, [2, 4])


@pytest.mark.parametrize("shapes", [[(2, 3), (2, 3, 1)], [(2, 3), (3, 3)]])
def test_mismatched_shapes_rejected(shapes):
    # axis 1: a different rank, or a different size off the axis
    with pytest.raises(gd.DriverError) as err:
        run(CAT, [T(F32, np.zeros(s)) for s in shapes] + [1], F32, (2, 6))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_rank_5_rejected():
    with pytest.raises(gd.DriverError) as err:
        run(CAT, [T(F32, np.zeros((1, 1, 1, 1, 2))), T(F32, np.zeros((1, 1, 1, 1, 2))), 4], F32, (1, 1, 1, 1, 4))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


# ---- PACK -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis,expected", [
    # pack.mod.py FLOAT32_binary_axis{0,1,2}: in0 = 0..11, in1 = 12..23, both [3, 4]
    (0, np.arange(24).reshape(2, 3, 4)),
    (1, [[[0, 1, 2, 3], [12, 13, 14, 15]], [[4, 5, 6, 7], [16, 17, 18, 19]], [[8, 9, 10, 11], [20, 21, 22, 23]]]),
    (2, [[[0, 12], [1, 13], [2, 14], [3, 15]], [[4, 16], [5, 17], [6, 18], [7, 19]],
         [[8, 20], [9, 21], [10, 22], [11, 23]]]),
])
def test_pack_spec(axis, expected):
    a, b = np.arange(12.0).reshape(3, 4), np.arange(12.0, 24.0).reshape(3, 4)
    out = run(PACK, [axis, T(F32, a), T(F32, b)], F32, np.array(expected).shape)
    assert_float(out, expected)


@pytest.mark.parametrize("axis", [0, 1])
def test_pack_single_input(axis):
    # pack.mod.py FLOAT32_unary_axis{0,1}: [3, 4] -> [1, 2] / [2, 1]
    out = run(PACK, [axis, T(F32, [3.0, 4.0])], F32, (1, 2) if axis == 0 else (2, 1))
    assert_float(out.ravel(), [3, 4])
    assert out.shape == ((1, 2) if axis == 0 else (2, 1))


@pytest.mark.parametrize("ty,scale,zp", [(F16, 0.0, 0), (I32, 0.0, 0), (Q8A, 0.5, 4), (Q8AS, 0.25, -9)])
def test_pack_types_three_inputs(ty, scale, zp):
    # three [2, 2] inputs on the last axis: out[i, j, k] = input k [i, j]
    xs = [np.array([[1, 2], [3, 4]]) + 10 * k for k in range(3)]
    out = run(PACK, [2] + [T(ty, x, scale, zp) for x in xs], ty, (2, 2, 3), scale, zp)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out[1, 0], [3, 13, 23])
    np.testing.assert_array_equal(out.astype(np.int64), np.stack(xs, axis=2))


@pytest.mark.parametrize("axis", [-1, 3])
def test_pack_bad_axis_rejected(axis):
    with pytest.raises(gd.DriverError) as err:
        run(PACK, [axis, T(F32, np.zeros((2, 2))), T(F32, np.zeros((2, 2)))], F32, (2, 2, 2))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_pack_different_shapes_rejected():
    with pytest.raises(gd.DriverError) as err:
        run(PACK, [0, T(F32, np.zeros((2, 2))), T(F32, np.zeros((2, 3)))], F32, (2, 2, 2))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_pack_quant_params_must_match_output():
    with pytest.raises(gd.DriverError) as err:
        run(PACK, [0, T(Q8A, [1, 2], 0.5, 4), T(Q8A, [1, 2], 0.25, 4)], Q8A, (2, 2), 0.5, 4)
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_pack_output_rank_checked():
    with pytest.raises(gd.DriverError) as err:
        run(PACK, [0, T(F32, [1.0, 2.0]), T(F32, [3.0, 4.0])], F32, (4,))
    assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT


def test_pack_zero_sized_input_fails():
    with pytest.raises(gd.DriverError) as err:
        run_direct(PACK, [0, T(F32, np.zeros((0, 3))), T(F32, np.zeros((0, 3)))], F32)
    assert err.value.status == gd.ErrorStatus.GENERAL_FAILURE
