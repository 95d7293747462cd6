"""ABS, EXP, LOG, NEG, RSQRT, SIN and SQRT on the reference device: hand-worked float values with the
IEEE special cases (NaN, ±inf, ±0, negative arguments), int32 wrap-around, fp16 rounding, quantized
RSQRT (fp32 arithmetic, ties away from zero, NaN and +inf saturating to qmax), the AOSP spec examples
(rank 5) and invalid instances."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperationType as OP

from .nnref import F16, F32, I32, Q8A, Q8AS, T, assert_exact, assert_float, run
from .single_op import In, Out, expect_status, run_executor

INVALID = ErrorStatus.INVALID_ARGUMENT
INF, NAN = math.inf, math.nan
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1


def _run(op, values, t=F32, out=None):
    x = np.asarray(values, dtype=np.float16 if t == F16 else np.int32 if t == I32 else np.float32)
    return run(op, [T(t, x)], out or t, x.shape)


def _same(actual, expected):
    """Equal values, NaN where NaN is expected, and the sign of zeros and infinities."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
    ok = ~np.isnan(e)
    np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(e[ok]))
    assert_float(a[ok], e[ok])


@pytest.mark.parametrize("op, x, expected", [
    (OP.ABS, [-1.5, 0.0, 2.0, -INF, NAN, -0.0], [1.5, 0.0, 2.0, INF, NAN, 0.0]),
    (OP.NEG, [1.0, -2.5, 0.0, INF, NAN], [-1.0, 2.5, -0.0, -INF, NAN]),
    # e^1 = 2.7182817 in fp32; e^89 overflows fp32 (max ≈ e^88.72); e^−inf = 0
    (OP.EXP, [0.0, 1.0, -1.0, 89.0, -INF, NAN], [1.0, math.e, 1 / math.e, INF, 0.0, NAN]),
    # ln 0 = −inf, ln of a negative number is NaN, ln inf = inf
    (OP.LOG, [1.0, math.e, 0.0, -1.0, INF, 0.5], [0.0, 1.0, -INF, NAN, INF, -math.log(2)]),
    (OP.SQRT, [4.0, 2.25, 0.0, -1.0, INF, -0.0], [2.0, 1.5, 0.0, NAN, INF, -0.0]),
    # 1/√0 = +inf, 1/√−0 = 1/−0 = −inf, 1/√inf = 0
    (OP.RSQRT, [4.0, 0.25, 0.0, -0.0, -4.0, INF], [0.5, 2.0, INF, -INF, NAN, 0.0]),
    (OP.SIN, [0.0, math.pi / 2, math.pi / 6, -math.pi / 2, INF], [0.0, 1.0, 0.5, -1.0, NAN]),
])
def test_float_hand(op, x, expected):
    _same(_run(op, x), expected)


def test_int32_abs_and_neg_wrap():
    x = [-7, 0, 5, INT32_MIN, INT32_MAX]
    assert _run(OP.ABS, x, I32).dtype == np.int32
    assert_exact(_run(OP.ABS, x, I32), [7, 0, 5, INT32_MIN, INT32_MAX])
    assert_exact(_run(OP.NEG, x, I32), [7, 0, -5, INT32_MIN, -INT32_MAX])


def test_float16_rounds_once_at_the_end():
    # e^12 = 162754.8 overflows binary16 (max 65504); e^1 = 2.71828 rounds to 2.71875 (10-bit mantissa);
    # √2 = 1.41421 rounds to 1.4140625
    out = _run(OP.EXP, [12.0, 1.0, 0.0], F16)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.array([INF, 2.71875, 1.0], np.float16))
    np.testing.assert_array_equal(_run(OP.SQRT, [2.0, -1.0], F16), np.array([1.4140625, NAN], np.float16))
    np.testing.assert_array_equal(_run(OP.NEG, [65504.0, -0.5], F16), np.array([-65504.0, 0.5], np.float16))


# ---- quantized RSQRT -----------------------------------------------------------------------------------

def test_rsqrt_quant8_hand():
    # in (1.0, 0): stored [1, 4, 16, 64] = reals [1, 4, 16, 64] -> 1/√ = [1, 0.5, 0.25, 0.125];
    # out (0.25, 0): [4, 2, 1, 0.5] -> 0.5 rounds away from zero to 1
    out = run(OP.RSQRT, [T(Q8A, [1, 4, 16, 64], 1.0, 0)], Q8A, (4,), 0.25, 0)
    assert_exact(out, [4, 2, 1, 1])


def test_rsqrt_quant8_saturation_nan_and_infinity():
    # in (0.125, 10): stored 12 -> 0.25 -> 2 / 0.01 = 200 + 75 = 275 -> 255; stored 10 -> 0 -> +inf -> 255;
    # stored 9 -> −0.125 -> NaN -> std::min(255, NaN) = 255; stored 42 -> 4 -> 0.5 / 0.01 = 50 + 75 = 125
    out = run(OP.RSQRT, [T(Q8A, [12, 10, 9, 42], 0.125, 10)], Q8A, (4,), 0.01, 75)
    assert_exact(out, [255, 255, 255, 125])


def test_rsqrt_quant8_signed_hand():
    # in (0.25, −100): stored [−99, −96, −84, −36] = reals [0.25, 1, 4, 16] -> [2, 1, 0.5, 0.25];
    # out (0.0625, −128): [32, 16, 8, 4] − 128; stored −101 (−0.25, NaN) and −100 (0, inf) -> 127
    out = run(OP.RSQRT, [T(Q8AS, [-99, -96, -84, -36, -101, -100], 0.25, -100)], Q8AS, (6,), 0.0625, -128)
    assert out.dtype == np.int8
    assert_exact(out, [-96, -112, -120, -124, 127, 127])


def test_rsqrt_quant8_rounds_in_float32():
    # in (0.3, 0), stored 3: 3·0.3f = 0.90000004 (fp32), 1/√ = 1.0540925; out scale 0.1:
    # 1.0540925 / 0.1f = 10.540925 -> 11 (zp 0)
    out = run(OP.RSQRT, [T(Q8A, [3], 0.3, 0)], Q8A, (1,), 0.1, 0)
    x = np.float32(3) * np.float32(0.3)
    assert_exact(out, [math.floor(float(np.float32(1) / np.sqrt(x) / np.float32(0.1)) + 0.5)])


# ---- AOSP spec examples (V1_2 / AIDL_V3), rank 5 ----------------------------------------------------------

_AOSP = {
    OP.ABS: ([(i - 60) / 10 for i in range(120)], abs),
    OP.EXP: ([(i - 60) / 10 for i in range(120)], math.exp),
    OP.LOG: ([(i + 1) / 10 for i in range(120)], math.log),
    OP.NEG: ([(i - 60) / 10 for i in range(120)], lambda v: -v),
    OP.RSQRT: ([(i + 1) / 10 for i in range(120)], lambda v: 1.0 / math.sqrt(v)),
    OP.SIN: ([(i - 60) / 10 for i in range(120)], math.sin),
    OP.SQRT: ([i / 10 for i in range(120)], math.sqrt),
}


@pytest.mark.parametrize("op", sorted(_AOSP, key=lambda o: o.name), ids=lambda o: o.name)
@pytest.mark.parametrize("t", [F32, F16])
def test_aosp_examples(op, t):
    data, f = _AOSP[op]
    x = np.asarray(data, np.float16 if t == F16 else np.float32).reshape(1, 2, 3, 4, 5)
    out = run(op, [T(t, x)], t, x.shape)
    assert out.shape == (1, 2, 3, 4, 5)
    assert_float(out, [f(float(v)) for v in x.ravel()], f16=t == F16)


def test_aosp_abs_int32_example():
    x = [i - 60 for i in range(119)] + [-(2 ** 24 + 1)]
    out = run(OP.ABS, [T(I32, np.reshape(x, (1, 2, 3, 4, 5)))], I32, (1, 2, 3, 4, 5))
    assert_exact(out, [abs(v) for v in x])


@pytest.mark.parametrize("in_q, out_q", [((0.25, 0), (0.25, 0)), ((0.25, 0), (0.01, 75)),
                                         ((0.125, 10), (0.25, 0)), ((0.125, 10), (0.01, 75))])
@pytest.mark.parametrize("t", [Q8A, Q8AS])
def test_aosp_rsqrt_quant8_examples(t, in_q, out_q):
    """AIDL_V3/rsqrt_quant8.mod.py: reals 0.25, 1, 4, 16 -> 2, 1, 0.5, 0.25 where both stored values fit
    [0, 128)."""
    pairs = [(i / in_q[0] + in_q[1], o / out_q[0] + out_q[1]) for i, o in ((0.25, 2), (1, 1), (4, 0.5), (16, 0.25))]
    pairs = [(round(i), round(o)) for i, o in pairs if 0 <= i < 128 and 0 <= o < 128]
    out = run(OP.RSQRT, [T(t, [p[0] for p in pairs], *in_q)], t, (len(pairs),), *out_q)
    assert_exact(out, [p[1] for p in pairs])


# ---- invalid instances -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, in_type, out_type", [
    (OP.EXP, F32, F16),          # output type differs
    (OP.SQRT, I32, I32),         # int32 only for ABS/NEG
    (OP.ABS, Q8A, Q8A),          # quantized only for RSQRT
    (OP.NEG, Q8AS, Q8AS),
    (OP.RSQRT, Q8A, Q8AS),
])
def test_invalid_types(op, in_type, out_type):
    q = in_type in (Q8A, Q8AS)
    x = np.zeros(3, dtype=np.float32)
    expect_status(INVALID, run, op, [T(in_type, x, 0.5 if q else 0.0)], out_type, (3,), 0.5 if q else 0.0)


def test_invalid_operand_counts():
    x = np.ones(3, np.float32)
    expect_status(INVALID, run, OP.EXP, [T(F32, x), T(F32, x)], F32, (3,))


def test_zero_sized_input_fails():
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, OP.SQRT, [In(F32, [0, 2])], [Out(F32, [0, 2])],
                  [np.zeros((0, 2), np.float32)])
