"""CAST and QUANTIZE on the reference device: hand-worked values (saturation, truncation, rounding
ties, NaN, infinities), AOSP spec examples, invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import In, Out, expect_status, run1, run_executor

F32, F16, I32, Q8A, Q8AS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                            T.TENSOR_QUANT8_ASYMM_SIGNED)
INVALID = ErrorStatus.INVALID_ARGUMENT
DTYPE = {F32: np.float32, F16: np.float16, I32: np.int32, Q8A: np.uint8, Q8AS: np.int8, T.TENSOR_BOOL8: np.bool_,
         T.TENSOR_QUANT16_SYMM: np.int16}


def cast(src, dst, x, q_in=(), q_out=()):
    x = np.asarray(x, DTYPE[src])
    return run1(O.CAST, [In(src, x.shape, *q_in)], Out(dst, x.shape, *q_out), x)


@pytest.mark.parametrize("src", [F32, F16])
def test_cast_float_to_quant8_clamps_then_truncates(src):
    out = cast(src, Q8A, [-3.0, -0.5, 0.9, 1.5, 254.9, 255.0, 300.0, float("inf"), float("nan")], q_out=(0.5, 7))
    np.testing.assert_array_equal(out, [0, 0, 0, 1, 254, 255, 255, 255, 0])   # quantization ignored


def test_cast_float_to_int32_truncates():
    out = cast(F32, I32, [-2.7, -0.5, 0.5, 2.7, 1e10, float("nan")])
    np.testing.assert_array_equal(out, [-2, 0, 0, 2, -2 ** 31, -2 ** 31])


def test_cast_int_and_quant8_conversions():
    np.testing.assert_array_equal(cast(I32, Q8A, [-5, 0, 200, 256, 70000], q_out=(2.0, 3)), [0, 0, 200, 255, 255])
    np.testing.assert_array_equal(cast(Q8A, I32, [0, 7, 255], q_in=(0.5, 128)), [0, 7, 255])  # raw values
    np.testing.assert_array_equal(cast(Q8A, F32, [0, 7, 255], q_in=(0.5, 128)), [0.0, 7.0, 255.0])
    # int32 -> float16 rounds to nearest even (2049 -> 2048, 2051 -> 2052); beyond 65519 -> inf
    np.testing.assert_array_equal(cast(I32, F16, [2049, 2051, 70000]), np.array([2048, 2052, np.inf], np.float16))
    # float32 -> float16 rounds to nearest even
    out = cast(F32, F16, [1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1e6])
    np.testing.assert_array_equal(out, np.array([1.0, 1.0 + 2.0 ** -9, np.inf], np.float16))


@pytest.mark.parametrize("t", [T.TENSOR_BOOL8, Q8AS, T.TENSOR_QUANT16_SYMM, F32, Q8A])
def test_cast_identity_copies(t):
    x = np.asarray([1, 0, 1, 1] if t == T.TENSOR_BOOL8 else [-3, 0, 5, 100] if t != Q8A else [0, 3, 200, 255],
                   DTYPE[t])
    q = (0.5, 0) if t not in (T.TENSOR_BOOL8, F32) else ()
    np.testing.assert_array_equal(cast(t, t, x, q, q), x)


def test_cast_invalid():
    expect_status(INVALID, cast, Q8AS, Q8A, [1, 2], (0.5, 0), (0.5, 0))        # signed casts only to itself
    expect_status(INVALID, cast, F32, Q8AS, [1.0], (), (0.5, 0))
    expect_status(INVALID, cast, T.TENSOR_BOOL8, I32, [True])


def test_cast_zero_sized_input_fails():
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.CAST, [In(F32, [0, 2])], [Out(I32, [0, 2])],
                  [np.zeros((0, 2), np.float32)])


def quantize(src, dst, x, scale, zp):
    x = np.asarray(x, DTYPE[src])
    return run1(O.QUANTIZE, [In(src, x.shape)], Out(dst, x.shape, scale, zp), x)


@pytest.mark.parametrize("src", [F32, F16])
def test_quantize_rounds_half_away_and_clamps(src):
    # scale 0.5, zp 100: x/0.5 = [−2.5, −0.5, 0.5, 1.5, 2.5] -> round half away [−3, −1, 1, 2, 3]
    out = quantize(src, Q8A, [-1.25, -0.25, 0.25, 0.75, 1.25, 1000.0, -1000.0], 0.5, 100)
    np.testing.assert_array_equal(out, [97, 99, 101, 102, 103, 255, 0])
    out = quantize(src, Q8AS, [-1.25, 0.25, 100.0, -100.0], 0.5, -1)
    np.testing.assert_array_equal(out, [-4, 0, 127, -128])


def test_quantize_special_values():
    # NaN gives qmax (std::min / std::max keep their first argument for NaN)
    out = quantize(F32, Q8A, [float("nan"), float("inf"), float("-inf"), -0.0], 0.25, 10)
    np.testing.assert_array_equal(out, [255, 255, 0, 10])
    out = quantize(F32, Q8AS, [float("nan")], 0.25, 10)
    np.testing.assert_array_equal(out, [127])


def test_quantize_linspace_hand():
    # as AOSP quantize.mod.py: [−10, −5, 0, 5, 10] to (0.5, 127) -> 127 + [−20, −10, 0, 10, 20];
    # to (0.01, 120) -> 120 + [−1000, −500, 0, 500, 1000] clamped
    x = np.linspace(-10.0, 10.0, 5, dtype=np.float32)
    np.testing.assert_array_equal(quantize(F32, Q8A, x, 0.5, 127), [107, 117, 127, 137, 147])
    np.testing.assert_array_equal(quantize(F16, Q8A, x, 0.01, 120), [0, 0, 120, 255, 255])


def test_quantize_invalid_and_zero_sized():
    expect_status(INVALID, quantize, I32, Q8A, [1], 0.5, 0)
    expect_status(INVALID, run1, O.QUANTIZE, [In(F32, [1])], Out(F32, [1]), np.zeros(1, np.float32))
    (r,) = run_executor(O.QUANTIZE, [In(F32, [0, 3])], [Out(Q8A, [0, 3], 0.5, 1)], [np.zeros((0, 3), np.float32)])
    assert r.shape == (0, 3)
