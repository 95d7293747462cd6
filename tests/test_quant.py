"""Hand-worked checks of the exact integer helpers (operands.md §8)."""
import numpy as np
import pytest

from gpu_driver import quant


def test_round_half_away_differs_from_numpy_round():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4999])
    assert quant.round_half_away(x).tolist() == [1, 2, 3, -1, -3, 2]
    assert np.round(x).tolist() != quant.round_half_away(x).tolist()  # the numpy trap


@pytest.mark.parametrize("real, expected", [
    (0.5, (1 << 30, 0)),            # 0.5 = 0.5·2^0 → q=2^30
    (0.75, (3 << 29, 0)),           # 0.75·2^31 = 1610612736
    (1.5, (3 << 29, 1)),            # 1.5 = 0.75·2^1
    (0.25, (1 << 30, -1)),          # 0.25 = 0.5·2^-1
    (0.0, (0, 0)),
    (2.0 ** -40, (0, 0)),           # e = -39 < -31 → flushed to zero
])
def test_quantize_multiplier(real, expected):
    assert quant.quantize_multiplier(real) == expected


def test_quantize_multiplier_rounds_up_to_next_power():
    # q just below 1 rounds to 2^31 → halved and exponent bumped
    m, e = quant.quantize_multiplier(1.0 - 2.0 ** -40)
    assert (m, e) == (1 << 30, 1)


def test_srdhm_hand_worked():
    # (2^30 · 2^30 + 2^30) / 2^31 = 2^29 + 0.5 → truncates to 2^29
    assert quant.srdhm(1 << 30, 1 << 30) == 1 << 29
    # negative: (-3 · 2^30 + (1 - 2^30)) / 2^31 truncated toward zero = -2^31·… → -1
    assert quant.srdhm(-3, 1 << 30) == -1
    assert quant.srdhm(-(2 ** 31), -(2 ** 31)) == 2 ** 31 - 1  # the saturating case


@pytest.mark.parametrize("x, e, expected", [
    (5, 1, 3), (-5, 1, -3), (6, 2, 2), (-6, 2, -2), (7, 2, 2), (-7, 2, -2), (10, 0, 10), (1, 31, 0),
])
def test_rounding_divide_by_pot_ties_away(x, e, expected):
    # 5/2 = 2.5 → 3; 6/4 = 1.5 → 2; 7/4 = 1.75 → 2
    assert quant.rounding_divide_by_pot(x, e) == expected


def test_mbqm_matches_real_multiplier():
    m, s = quant.quantize_multiplier(0.3)
    # 1000 · 0.3 = 300 exactly (to rounding)
    assert quant.multiply_by_quantized_multiplier(1000, m, s) == 300
    m, s = quant.quantize_multiplier(3.0)
    assert quant.multiply_by_quantized_multiplier(-7, m, s) == -21


def test_activation_ranges():
    # RELU6 with scale 0.1, zp 10: qa(0) = 10, qa(6) = 70
    assert quant.activation_range_quantized(3, 0.1, 10, 0, 255) == (10, 70)
    # RELU1 scale 0.5 zp 128: qa(-1) = 126, qa(1) = 130
    assert quant.activation_range_quantized(2, 0.5, 128, 0, 255) == (126, 130)
    assert quant.activation_range_quantized(0, 0.5, 128, 0, 255) == (0, 255)
    assert quant.activation_range_float(1) == (0.0, float("inf"))
    with pytest.raises(ValueError):
        quant.activation_range_float(4)


def test_quantize_dequantize():
    # 0.26/0.1 = 2.6 → 3 → 13; -0.05/0.1 = -0.5 → -1 → 9 (ties away), clamp at 0
    assert quant.quantize([0.26, -0.05, -5.0], 0.1, 10, 0, 255).tolist() == [13, 9, 0]
    assert quant.dequantize([13, 9], 0.5, 10).tolist() == [1.5, -0.5]
