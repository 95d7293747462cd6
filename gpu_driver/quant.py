"""Quantized integer arithmetic of operands.md §8, exact (int64 numpy), shared by every executor.

The reference device computes with these vectorised helpers; the kernel generator uses the scalar
multiplier helpers to bake requantisation constants into device code as literals.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def round_half_away(x):
    """C ``std::round``: ties away from zero (numpy's ``np.round`` rounds ties to even)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def round_half_away_scalar(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier (operands.md §8.4): real ≈ m·2^(shift−31), m an int32, shift>0 = left."""
    if real == 0.0:
        return 0, 0
    q, e = math.frexp(real)
    qf = round_half_away_scalar(q * (1 << 31))
    if qf == (1 << 31):
        qf //= 2
        e += 1
    if e < -31:
        return 0, 0
    return int(qf), int(e)


def quantize_multiplier_smaller_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: requires 0 < real < 1; shift ≤ 0."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"multiplier {real} not in (0, 1)")
    return quantize_multiplier(real)


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    if not real > 1.0:
        raise ValueError(f"multiplier {real} not > 1")
    return quantize_multiplier(real)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul on int32 values (vectorised, int64 intermediate)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    p = a * b
    nudge = np.where(p >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    s = p + nudge
    # truncating division by 2^31
    q = np.where(s >= 0, s >> 31, -((-s) >> 31))
    return np.where(overflow, np.int64(INT32_MAX), q).astype(np.int64)


def rounding_divide_by_pot(x, exponent):
    """RoundingDivideByPOT: x / 2^exponent, ties away from zero (0 ≤ exponent ≤ 31)."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (rem > thr).astype(np.int64)


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier (shift > 0 = left shift), on int32-range values."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64) * (np.int64(1) << left)
    x = np.clip(x, INT32_MIN, INT32_MAX)  # the int32 product in C saturates in practice only for bad models
    return rounding_divide_by_pot(srdhm(x, multiplier), right)


def multiply_by_quantized_multiplier_smaller_than_one(x, multiplier, shift):
    """MBQM_lt1 (shift ≤ 0): RDBPOT(SRDHM(x, m), −shift)."""
    return rounding_divide_by_pot(srdhm(x, multiplier), -np.asarray(shift, dtype=np.int64))


def multiply_by_quantized_multiplier_greater_than_one(x, multiplier, shift):
    """MBQM_gt1 (shift ≥ 0): SRDHM(x·2^shift, m)."""
    return srdhm(np.asarray(x, dtype=np.int64) * (np.int64(1) << np.int64(shift)), multiplier)


def quantize(x, scale: float, zero_point: int, qmin: int, qmax: int):
    """quantize(x) = clamp(zp + round_half_away(x / scale), qmin, qmax) (operands.md §8.2)."""
    v = zero_point + round_half_away(np.asarray(x, dtype=np.float32).astype(np.float64) / scale)
    return np.clip(v, qmin, qmax).astype(np.int64)


def dequantize(q, scale: float, zero_point: int):
    return ((np.asarray(q, dtype=np.int64) - zero_point).astype(np.float32) * np.float32(scale)).astype(np.float32)


def activation_range_quantized(activation: int, scale: float, zero_point: int,
                               qmin: int, qmax: int) -> tuple[int, int]:
    """Quantized clamp bounds of a FuseCode (operands.md §4)."""
    def qa(x: float) -> int:
        return zero_point + round_half_away_scalar(x / scale)

    if activation == 0:
        return qmin, qmax
    if activation == 1:
        return max(qmin, qa(0.0)), qmax
    if activation == 2:
        return max(qmin, qa(-1.0)), min(qmax, qa(1.0))
    if activation == 3:
        return max(qmin, qa(0.0)), min(qmax, qa(6.0))
    raise ValueError(f"invalid fused activation {activation}")


def activation_range_float(activation: int) -> tuple[float, float]:
    """Float clamp bounds of a FuseCode (operands.md §4)."""
    if activation == 0:
        return -math.inf, math.inf
    if activation == 1:
        return 0.0, math.inf
    if activation == 2:
        return -1.0, 1.0
    if activation == 3:
        return 0.0, 6.0
    raise ValueError(f"invalid fused activation {activation}")
