"""gemmlowp / TFLite fixed-point transcendental functions (operands.md §8.6), vectorised and exact.

Values are int32 fixed-point raws carried in int64 numpy arrays.  ``FixedPoint<int32, I>`` (I integer
bits, 31 − I fractional bits) is represented by its raw only; the integer-bit bookkeeping of the C++
templates is explicit in the arguments.  Arithmetic follows gemmlowp: ``+``/``−`` wrap, ``*`` is
SaturatingRoundingDoublingHighMul, ``Rescale`` is a saturating left shift or a rounding right shift.

Used by the reference kernels of quantized LOGISTIC, TANH, SOFTMAX and L2_NORMALIZATION; a GPU
kernel that wants bit-exactness runs the same sequence of int32 operations.
"""
from __future__ import annotations

import numpy as np

from .quant import INT32_MAX, INT32_MIN, rounding_divide_by_pot, srdhm

__all__ = ["wrap32", "saturating_rounding_mul_pot", "rounding_half_sum", "exp_on_negative_values",
           "one_over_one_plus_x_for_x_in_0_1", "one_minus_x_over_one_plus_x_for_x_in_0_1", "logistic",
           "tanh", "count_leading_zeros32", "inv_sqrt_quantized_multiplier_exp", "calculate_input_radius"]


def wrap32(x):
    """Two's-complement wrap of int64 values to the int32 range (C int32 ``+``/``−`` overflow)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def saturating_rounding_mul_pot(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT<exponent>: saturating ``x·2^e`` (e > 0) or rounding ``x/2^−e``."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    r = x << exponent
    r = np.where(x > threshold, INT32_MAX, r)
    return np.where(x < -threshold, INT32_MIN, r).astype(np.int64)


def rounding_half_sum(a, b):
    """RoundingHalfSum: (a + b ± 1) / 2 with C truncating division."""
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    v = s + np.where(s >= 0, 1, -1)
    return np.where(v >= 0, v // 2, -((-v) // 2)).astype(np.int64)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    """exp(a) for a ∈ [−1/4, 0) in Q0.31 (Taylor series around −1/8)."""
    constant_term = 1895147668          # exp(−1/8)
    constant_1_over_3 = 715827883
    x = wrap32(a + (1 << 28))           # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = saturating_rounding_mul_pot(x4, -2)
    poly = saturating_rounding_mul_pot(wrap32(srdhm(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), -1)
    return wrap32(constant_term + srdhm(constant_term, wrap32(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int):
    """exp(a) for a ≤ 0 given as Q``integer_bits``; result in Q0.31 (exp(0) = INT32_MAX)."""
    a = np.asarray(a, dtype=np.int64)
    frac = 31 - integer_bits
    one_quarter = 1 << (frac - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_mul_pot(a_mod_quarter_minus_one_quarter, integer_bits))
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = np.int64(1) << np.int64(frac + exponent)
            result = np.where((remainder & bit) != 0, srdhm(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result).astype(np.int64)


def _newton_reciprocal_of_half_denominator(a):
    """The Q2.29 Newton–Raphson estimate of 1/((1 + a)/2) for a ∈ [0, 1) in Q0.31 (3 iterations)."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))     # 48/17 − 32/17·d
    for _ in range(3):
        one_minus_dx = wrap32((1 << 29) - srdhm(half_denominator, x))
        x = wrap32(x + saturating_rounding_mul_pot(srdhm(x, one_minus_dx), 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a):
    """1 / (1 + a) for a ∈ [0, 1) in Q0.31."""
    return saturating_rounding_mul_pot(_newton_reciprocal_of_half_denominator(a), 1)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a):
    """(1 − a) / (1 + a) for a ∈ [0, 1) in Q0.31."""
    return saturating_rounding_mul_pot(wrap32(_newton_reciprocal_of_half_denominator(a) - (1 << 29)), 2)


def logistic(a, integer_bits: int):
    """gemmlowp::logistic of a Q``integer_bits`` value; result Q0.31."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap32(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_input), integer_bits))
    if_negative = wrap32(INT32_MAX - if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative)).astype(np.int64)


def tanh(a, integer_bits: int):
    """gemmlowp::tanh of a Q``integer_bits`` value; result Q0.31."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))                       # −|a|
    # neg_tanh_on_negative_values: exp of 2n, i.e. the same raw read with one more integer bit
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap32(-t), t)).astype(np.int64)


def count_leading_zeros32(x):
    """Leading zero bits of non-negative int32 values (32 for 0)."""
    x = np.asarray(x, dtype=np.int64)
    _, exponent = np.frexp(x.astype(np.float64))   # exact for |x| < 2^53: exponent = bit length
    return np.where(x > 0, 32 - exponent, 32).astype(np.int64)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """CalculateInputRadius: floor((2^bits − 1)·2^(total − bits) / 2^shift)."""
    import math

    max_input_rescaled = (1.0 * ((1 << input_integer_bits) - 1) * (1 << (total_signed_bits - input_integer_bits))
                          / (1 << input_left_shift))
    return int(math.floor(max_input_rescaled))


def inv_sqrt_quantized_multiplier_exp(values, reverse_shift: int = -1):
    """GetInvSqrtQuantizedMultiplierExp, vectorised: (multiplier, shift) with 1/√v ≈ m·2^(shift−31).

    With ``reverse_shift = −1`` (L2_NORMALIZATION) the shift is ≤ 0, ready for MBQM_lt1.
    Values ≤ 1 give (INT32_MAX, 0).
    """
    v = np.asarray(values, dtype=np.int64).copy()
    small = v <= 1
    v = np.where(small, 2, v)
    shift = np.full(v.shape, 11, dtype=np.int64)
    while True:
        big = v >= (1 << 29)
        if not big.any():
            break
        v = np.where(big, v // 4, v)
        shift += big
    max_left_shift_bits = count_leading_zeros32(v) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    v = v << (2 * left_shift_bit_pairs)
    fixedpoint_input = v >> 1                                         # Q3.28
    fixedpoint_half_input = saturating_rounding_mul_pot(fixedpoint_input, -1)
    fixedpoint_half_three = (1 << 28) + (1 << 27)
    x = np.full(v.shape, 1 << 28, dtype=np.int64)                   # F3 one
    for _ in range(5):
        x3 = saturating_rounding_mul_pot(srdhm(srdhm(x, x), x), 6)    # Rescale<3>(F9)
        x = saturating_rounding_mul_pot(
            wrap32(srdhm(fixedpoint_half_three, x) - srdhm(fixedpoint_half_input, x3)), 3)
    x = srdhm(x, 1518500250)                                         # · √2/2
    negative = shift < 0
    multiplier = np.where(negative, wrap32(x << np.maximum(-shift, 0)), x)
    shift = np.where(negative, 0, shift) * reverse_shift
    multiplier = np.where(small, INT32_MAX, multiplier)
    shift = np.where(small, 0, shift)
    return multiplier.astype(np.int64), shift.astype(np.int64)
