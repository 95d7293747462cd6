"""ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW and PRELU on the reference device: float, int32, quant8
(broadcasting, zero points, saturation, every fused activation, NaN and infinity, integer floor
division), AOSP spec examples, invalid instances.  Quantized expectations come from the independent
oracle in nnref.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperationType as OP

from .nnref import (F16, F32, I32, Q8A, Q8AS, QRANGE, T, act_float, act_quant, assert_exact, assert_float, f32, mbqm,
                    q_multiplier, round_away, run)
from .single_op import In, Out, expect_status, i32, run_executor

ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, PRELU = (OP.ADD, OP.SUB, OP.MUL, OP.DIV, OP.MAXIMUM, OP.MINIMUM, OP.POW,
                                                    OP.PRELU)
INVALID = ErrorStatus.INVALID_ARGUMENT
FLT_MAX = float(np.finfo(np.float32).max)


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


_PY = {ADD: lambda x, y: x + y, SUB: lambda x, y: x - y, MUL: lambda x, y: x * y, DIV: lambda x, y: x / y}


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("ty", [F32, F16])
@pytest.mark.parametrize("op", [ADD, SUB, MUL, DIV])
def test_float_activations(op, ty, act):
    rng = np.random.default_rng(act)
    a = rng.uniform(-4, 4, (2, 1, 3)).astype(np.float16 if ty == F16 else np.float32)
    b = rng.uniform(0.5, 4, (4, 3)).astype(a.dtype) * np.where(rng.random((4, 3)) < 0.5, -1, 1).astype(a.dtype)
    out = run(op, [T(ty, a), T(ty, b), act], ty, (2, 4, 3))
    aa, bb = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    expected = [act_float(_PY[op](x, y), act) for x, y in zip(aa.ravel(), bb.ravel())]
    assert_float(out.ravel(), expected, f16=ty == F16)


def naive_quant(op, q1, p1, q2, p2, po, act, qmin, qmax):
    """Element-wise oracle for ADD / SUB / MUL; p = (scale, zero point)."""
    (s1, z1), (s2, z2), (so, zo) = p1, p2, po
    res = []
    if op in (ADD, SUB):
        shift, t = 20, 2.0 * max(s1, s2)
        m1, h1 = q_multiplier(s1 / t)
        m2, h2 = q_multiplier(s2 / t)
        m2 = -m2 if op == SUB else m2
        mo, ho = q_multiplier(t / ((1 << shift) * so))
    else:
        m, h = q_multiplier(f32(np.float32(s1) * np.float32(s2)) / so)  # the scale product is a float
    for x, y in zip(q1, q2):
        if op in (ADD, SUB):
            a = mbqm((x - z1) * (1 << shift), m1, h1)
            b = mbqm((y - z2) * (1 << shift), m2, h2)
            v = mbqm(a + b, mo, ho) + zo
        else:
            v = zo + mbqm((x - z1) * (y - z2), m, h)
        res.append(act_quant(min(max(v, qmin), qmax), act, so, zo, qmin, qmax))
    return res


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("ty", [Q8A, Q8AS])
@pytest.mark.parametrize("op", [ADD, SUB, MUL])
def test_quant_against_naive(op, ty, act):
    rng = np.random.default_rng(act * 3 + int(ty) + int(op))
    qmin, qmax = QRANGE[ty]
    p1 = (f32(0.07), int(rng.integers(qmin, qmax)))
    p2 = (f32(0.031), int(rng.integers(qmin, qmax)))
    po = (f32(0.02) if op == MUL else f32(0.09), int(rng.integers(qmin + 60, qmax - 60)))
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


# ---- SUB / DIV ------------------------------------------------------------------------------------------

def test_sub_broadcast_relu_hand():
    # [[1], [5]] − [2, 4, 6] = [[−1, −3, −5], [3, 1, −1]]; RELU -> [[0, 0, 0], [3, 1, 0]]
    out = run(SUB, [T(F32, [[1.0], [5.0]]), T(F32, [2.0, 4.0, 6.0]), 1], F32, (2, 3))
    assert_float(out, [[0, 0, 0], [3, 1, 0]])


def test_sub_quant8_hand():
    # A (0.5, 0) [10, 4, 2] real [5, 2, 1]; B (0.5, 0) [4] real 2; differences [3, 0, −1] at scale 0.5
    # -> stored [6, 0, −2] clamped to the type range [0, 255] -> [6, 0, 0]
    out = run(SUB, [T(Q8A, [10, 4, 2], 0.5, 0), T(Q8A, [4], 0.5, 0), 0], Q8A, (3,), 0.5, 0)
    assert_exact(out, [6, 0, 0])
    # signed: zero points −10 and 5: A real (20+10)·0.5 = 15, B real (−5−5)·0.25 = −2.5; 17.5 / 0.5 -> 35
    out = run(SUB, [T(Q8AS, [20], 0.5, -10), T(Q8AS, [-5], 0.25, 5), 0], Q8AS, (1,), 0.5, 0)
    assert_exact(out, [35])


def test_sub_quantized_different_scales_aosp():
    # AOSP V1_2 sub_quantized_different_scales (one pair of its quantizations): input0 (1.0, 0),
    # input1 (1.0, 0), output (0.01, 120): [0, 1, 2, 3] − [2, 0, 1, 0] = [−2, 1, 1, 3] -> stored
    # 120 + [−200, 100, 100, 300] clamped -> [0, 220, 220, 255]
    out = run(SUB, [T(Q8A, [0, 1, 2, 3], 1.0, 0), T(Q8A, [2, 0, 1, 0], 1.0, 0), 0], Q8A, (4,), 0.01, 120)
    assert_exact(out, [0, 220, 220, 255])


def test_div_float_hand():
    out = run(DIV, [T(F32, [1.0, -3.0, 7.0]), T(F32, [2.0, 4.0, -0.5]), 0], F32, (3,))
    assert_float(out, [0.5, -0.75, -14.0])
    # AOSP V1_2 div_v1_2 (float16): [2.001953125, 0.0001000165, 8.75] / [2, 0.0001, 3.5]
    out = run(DIV, [T(F16, [2.001953125, 0.0001000165, 8.75]), T(F16, [2, 0.0001, 3.5]), 0], F16, (3,))
    assert_float(out, [1.0009765625, 1.0, 2.5], f16=True)


def test_float_division_by_zero_and_infinity():
    # TFLite clamps to [−FLT_MAX, FLT_MAX] even without activation: ±1/0 -> ±FLT_MAX; 0/0 stays NaN;
    # fp16 rounds FLT_MAX back to infinity
    out = run(DIV, [T(F32, [1.0, -1.0, 0.0]), T(F32, [0.0, 0.0, 0.0]), 0], F32, (3,))
    assert out[0] == FLT_MAX and out[1] == -FLT_MAX and np.isnan(out[2])
    out = run(DIV, [T(F16, [1.0, 0.0]), T(F16, [0.0, 0.0]), 0], F16, (2,))
    assert out[0] == np.inf and np.isnan(out[1])
    # a NaN goes through every activation clamp; RELU6 bounds an infinite sum
    out = run(ADD, [T(F32, [np.nan, np.inf]), T(F32, [1.0, 1.0]), 3], F32, (2,))
    assert np.isnan(out[0]) and out[1] == 6.0


def test_int32_sub_and_floor_division():
    out = run(SUB, [T(I32, [-2 ** 31, 5]), T(I32, [1, 7]), 0], I32, (2,))
    assert_exact(out, [2 ** 31 - 1, -2])  # wraps
    # floor division (toward −∞), x / 0 = 0, INT32_MIN / −1 wraps to INT32_MIN
    a = [7, -7, 7, -7, 6, 5, 0, -2 ** 31, -2 ** 31]
    b = [2, 2, -2, -2, -3, 0, 3, -1, 2]
    out = run(DIV, [T(I32, a), T(I32, b), 0], I32, (9,))
    assert_exact(out, [3, -4, -4, 3, -2, 0, 0, -2 ** 31, -2 ** 30])


# ---- MAXIMUM / MINIMUM ------------------------------------------------------------------------------------

@pytest.mark.parametrize("ty", [F32, F16, I32])
def test_maximum_minimum_broadcast_hand(ty):
    a, b = [[1, 5], [3, -2]], [2, 4]
    assert_exact(run(MAXIMUM, [T(ty, a), T(ty, b)], ty, (2, 2)), [2, 5, 3, 4])
    assert_exact(run(MINIMUM, [T(ty, a), T(ty, b)], ty, (2, 2)), [1, 4, 2, -2])


def test_maximum_aosp_broadcast():
    # AOSP V1_2 maximum "broadcast"
    out = run(MAXIMUM, [T(F32, [1.0, 0.0, -1.0, -2.0, -1.44, 11.0], shape=(3, 1, 2)), T(F32, [0.5, 2.0])], F32,
              (3, 1, 2))
    assert_float(out.ravel(), [1.0, 2.0, 0.5, 2.0, 0.5, 11.0])


@pytest.mark.parametrize("op", [MAXIMUM, MINIMUM])
def test_maximum_minimum_nan_returns_first_operand(op):
    # std::max(a, b) = a < b ? b : a and std::min(a, b) = b < a ? b : a: a comparison with NaN is false
    out = run(op, [T(F32, [np.nan, 1.0]), T(F32, [1.0, np.nan])], F32, (2,))
    assert np.isnan(out[0]) and out[1] == 1.0


def test_maximum_minimum_quant_requantize_hand():
    # A (1.0, 0) [10, 20] -> output (2.0, 5): 10/2+5 = 10, 20/2+5 = 15;
    # B (0.5, 10) [30, 40] real [10, 15] -> 10, 12.5 rounds away from zero to 13
    args = [T(Q8A, [10, 20], 1.0, 0), T(Q8A, [30, 40], 0.5, 10)]
    assert_exact(run(MAXIMUM, args, Q8A, (2,), 2.0, 5), [10, 15])
    assert_exact(run(MINIMUM, args, Q8A, (2,), 2.0, 5), [10, 13])
    # AOSP V1_2 maximum "overflow": (1.0, 128) -> (0.5, 128): [60, 128] vs [128, 200] -> [128, 255]
    out = run(MAXIMUM, [T(Q8A, [60, 128], 1.0, 128), T(Q8A, [128, 200], 1.0, 128)], Q8A, (2,), 0.5, 128)
    assert_exact(out, [128, 255])


def naive_requantize(q, s_in, z_in, s_out, z_out, qmin, qmax):
    v = f32(np.float32(q - z_in) * np.float32(s_in)) / s_out + z_out
    return round_away(min(max(v, qmin), qmax))


@pytest.mark.parametrize("ty", [Q8A, Q8AS])
@pytest.mark.parametrize("op", [MAXIMUM, MINIMUM])
def test_maximum_minimum_quant_against_naive(op, ty):
    rng = np.random.default_rng(int(ty) + int(op))
    qmin, qmax = QRANGE[ty]
    pa, pb, po = (f32(0.3), qmin + 40), (f32(0.11), qmax - 30), (f32(0.2), int(rng.integers(qmin, qmax)))
    a = rng.integers(qmin, qmax + 1, (4, 1, 3))
    b = rng.integers(qmin, qmax + 1, (5, 1))
    out = run(op, [T(ty, a, *pa), T(ty, b, *pb)], ty, (4, 5, 3), *po)
    aa, bb = np.broadcast_arrays(a, b)
    pick = max if op == MAXIMUM else min
    expected = [pick(naive_requantize(x, *pa, *po, qmin, qmax), naive_requantize(y, *pb, *po, qmin, qmax))
                for x, y in zip(aa.ravel().tolist(), bb.ravel().tolist())]
    assert_exact(out, expected)


# ---- POW / PRELU -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ty", [F32, F16])
def test_pow_hand(ty):
    out = run(POW, [T(ty, [2.0, 4.0, -2.0, 0.0, -8.0]), T(ty, [3.0, 0.5, 2.0, -1.0, 0.5])], ty, (5,))
    assert_float(out[:4], [8.0, 2.0, 4.0, math.inf], f16=ty == F16)
    assert np.isnan(out[4])  # negative base, non-integer exponent
    # broadcast exponent: [[1, 2], [3, 4]] ** [2] (AOSP V1_2 pow "broadcast" style)
    out = run(POW, [T(ty, [[1.0, 2.0], [3.0, 4.0]]), T(ty, [2.0])], ty, (2, 2))
    assert_float(out, [[1, 4], [9, 16]], f16=ty == F16)


@pytest.mark.parametrize("ty", [F32, F16])
def test_prelu_float_hand(ty):
    # alpha broadcast per column: x [[−2, 3], [0, −4]], alpha [0.5, −1] -> [[−1, 3], [0, 4]]
    out = run(PRELU, [T(ty, [[-2.0, 3.0], [0.0, -4.0]]), T(ty, [0.5, -1.0])], ty, (2, 2))
    assert_float(out, [[-1, 3], [0, 4]], f16=ty == F16)


def test_prelu_aosp_example():
    # AOSP V1_2 prelu: alpha [1, 1, 3] = [0, 1, 2] over x [1, 2, 2, 3]
    x = [0, 0, 0, 1, 1, 1, -1, -1, -1, -2, -2, -2]
    out = run(PRELU, [T(F32, np.reshape(x, (1, 2, 2, 3)).astype(float)), T(F32, [[[0.0, 1.0, 2.0]]])], F32,
              (1, 2, 2, 3))
    assert_float(out.ravel(), [0, 0, 0, 1, 1, 1, 0, -1, -2, 0, -2, -4])


def test_prelu_quant8_hand():
    # x (0.5, 10) [6, 14] real [−2, 2]; alpha (0.25, 0) [2] real 0.5 -> real [−1, 2]; out (0.25, 8) -> [4, 16]
    out = run(PRELU, [T(Q8A, [6, 14], 0.5, 10), T(Q8A, [2], 0.25, 0)], Q8A, (2,), 0.25, 8)
    assert_exact(out, [4, 16])


@pytest.mark.parametrize("ty", [Q8A, Q8AS])
def test_prelu_quant_against_naive(ty):
    rng = np.random.default_rng(int(ty))
    qmin, qmax = QRANGE[ty]
    px, pa, po = (f32(0.25), qmin + 128), (f32(0.5), qmin + 50), (f32(0.1), qmin + 120)
    x = rng.integers(qmin, qmax + 1, (2, 3, 4))
    alpha = rng.integers(qmin, qmax + 1, (4,))
    out = run(PRELU, [T(ty, x, *px), T(ty, alpha, *pa)], ty, (2, 3, 4), *po)
    m_pos, e_pos = q_multiplier(f32(np.float32(px[0]) / np.float32(po[0])))
    m_neg, e_neg = q_multiplier(f32(np.float32(px[0]) * np.float32(pa[0])) / po[0])
    xx, aa = np.broadcast_arrays(x, alpha)
    expected = []
    for q, qa in zip(xx.ravel().tolist(), aa.ravel().tolist()):
        c = q - px[1]
        v = mbqm(c, m_pos, e_pos) if c >= 0 else mbqm(c * (qa - pa[1]), m_neg, e_neg)
        expected.append(min(max(v + po[1], qmin), qmax))
    assert_exact(out, expected)


# ---- zero-sized inputs, invalid instances -----------------------------------------------------------------

@pytest.mark.parametrize("op", [ADD, SUB, MUL, DIV])
def test_zero_sized_arithmetic(op):
    (out,) = run_executor(op, [In(F32, [0, 3]), In(F32, [3]), i32(0)], [Out(F32, [0, 3])],
                          [np.zeros((0, 3), np.float32), np.ones(3, np.float32)])
    assert out.shape == (0, 3)


@pytest.mark.parametrize("op", [MAXIMUM, MINIMUM, POW, PRELU])
def test_zero_sized_input_fails(op):
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, op, [In(F32, [0, 3]), In(F32, [3])], [Out(F32, [0, 3])],
                  [np.zeros((0, 3), np.float32), np.ones(3, np.float32)])


@pytest.mark.parametrize("op, args, out", [
    (DIV, [T(Q8A, [1], 1.0, 0), T(Q8A, [1], 1.0, 0), 0], (Q8A, 1.0)),          # no quantized DIV
    (SUB, [T(I32, [1]), T(I32, [1]), 1], (I32, 0.0)),                            # int32: activation NONE only
    (DIV, [T(I32, [1]), T(I32, [1]), 3], (I32, 0.0)),
    (ADD, [T(F32, [1]), T(F32, [1]), 4], (F32, 0.0)),                            # bad fuse code
    (SUB, [T(F32, np.zeros((1, 1, 1, 1, 2))), T(F32, [1]), 0], (F32, 0.0)),      # rank 5
    (MUL, [T(Q8A, [1], 0.5, 0), T(Q8A, [1], 0.5, 0), 0], (Q8A, 0.25)),          # s_out must exceed s1·s2
    (MAXIMUM, [T(F32, [1]), T(I32, [1])], (F32, 0.0)),                           # mixed types
    (POW, [T(I32, [1]), T(I32, [1])], (I32, 0.0)),                               # float types only
    (PRELU, [T(I32, [1]), T(I32, [1])], (I32, 0.0)),
    (PRELU, [T(F32, [1, 2, 3]), T(F32, [1, 2])], (F32, 0.0)),                    # not broadcastable
    (MINIMUM, [T(F32, [1]), T(F32, [1]), 0], (F32, 0.0)),                        # two inputs only
])
def test_invalid(op, args, out):
    out_type, out_scale = out
    expect_status(INVALID, run, op, args, out_type, (max(np.asarray(a.value).size for a in args
                                                         if isinstance(a, T)),), out_scale, 0)
