"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL on the reference device: hand-worked values
(broadcasting, every input type, quantized inputs compared by real value, raw TENSOR_BOOL8 bytes, NaN),
AOSP spec examples, invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import In, Out, expect_status, run1, run_executor

F32, F16, I32, Q8A, Q8AS, B8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                                T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_BOOL8)
INVALID = ErrorStatus.INVALID_ARGUMENT
DTYPE = {F32: np.float32, F16: np.float16, I32: np.int32, Q8A: np.uint8, Q8AS: np.int8, B8: np.bool_}


def compare(op, t, a, b, qa=(0.0, 0), qb=(0.0, 0), out_dims=None):
    a, b = np.asarray(a, DTYPE[t]), np.asarray(b, DTYPE[t])
    dims = out_dims if out_dims is not None else np.broadcast_shapes(a.shape, b.shape)
    return run1(op, [In(t, a.shape, *qa), In(t, b.shape, *qb)], Out(B8, dims), a, b)


@pytest.mark.parametrize("t", [F32, F16, I32])
def test_every_comparison_broadcast_hand(t):
    # a [2, 1] = [[1], [3]] against b [3] = [0, 1, 3]
    a, b = [[1], [3]], [0, 1, 3]
    expected = {O.EQUAL: [[0, 1, 0], [0, 0, 1]], O.NOT_EQUAL: [[1, 0, 1], [1, 1, 0]],
                O.GREATER: [[1, 0, 0], [1, 1, 0]], O.GREATER_EQUAL: [[1, 1, 0], [1, 1, 1]],
                O.LESS: [[0, 0, 1], [0, 0, 0]], O.LESS_EQUAL: [[0, 1, 1], [0, 0, 1]]}
    for op, want in expected.items():
        out = compare(op, t, a, b)
        assert out.dtype == np.bool_ and out.shape == (2, 3)
        np.testing.assert_array_equal(out, np.asarray(want, bool), err_msg=op.name)


def test_quantized_compares_real_values():
    # AOSP equal.mod.py "quantized_different_scale": (1.0, 128) [129, 130, 131] = reals [1, 2, 3],
    # (2.0, 128) [129] = real 2
    out = compare(O.EQUAL, Q8A, [129, 130, 131], [129], (1.0, 128), (2.0, 128))
    np.testing.assert_array_equal(out, [False, True, False])
    # different zero points: (1.0, 129) [131] = real 2
    out = compare(O.GREATER, Q8A, [129, 130, 131], [131], (1.0, 128), (1.0, 129))
    np.testing.assert_array_equal(out, [False, False, True])


def test_quantized_no_requantization_overflow():
    # AOSP "quantized_overflow_second_input_if_requantized": (0 − 31)·1.64771 = −51.08 vs
    # (200 − 240)·1.49725 = −59.89: not equal, and greater
    qa, qb = (1.64771, 31), (1.49725, 240)
    assert not compare(O.EQUAL, Q8A, [0], [200], qa, qb)[0]
    assert compare(O.GREATER, Q8A, [0], [200], qa, qb)[0]


def test_quant8_signed_hand():
    # (0.5, −1) [−1, 1, 3] = reals [0, 1, 2]; (0.25, 0) [4] = real 1
    out = compare(O.LESS_EQUAL, Q8AS, [-1, 1, 3], [4], (0.5, -1), (0.25, 0))
    np.testing.assert_array_equal(out, [True, True, False])


def test_bool8_compares_bytes():
    out = compare(O.LESS, B8, [False, False, True, True], [False, True, False, True])
    np.testing.assert_array_equal(out, [False, True, False, False])


def test_float_nan_and_signed_zero():
    nan = float("nan")
    a, b = [nan, nan, 0.0, 1.0], [nan, 1.0, -0.0, nan]
    np.testing.assert_array_equal(compare(O.EQUAL, F32, a, b), [False, False, True, False])
    np.testing.assert_array_equal(compare(O.NOT_EQUAL, F32, a, b), [True, True, False, True])
    np.testing.assert_array_equal(compare(O.GREATER_EQUAL, F16, a, b), [False, False, True, False])


def test_unknown_output_shape_inferred():
    out = compare(O.LESS, F32, [[1.0, 5.0]], [[2.0], [0.0]], out_dims=[0, 0])
    np.testing.assert_array_equal(out, [[True, False], [False, False]])


def test_invalid():
    # shapes that do not broadcast
    expect_status(INVALID, compare, O.EQUAL, F32, [1.0, 2.0], [1.0, 2.0, 3.0], out_dims=[3])
    # mixed input types
    expect_status(INVALID, run1, O.EQUAL, [In(F32, [2]), In(I32, [2])], Out(B8, [2]),
                  np.zeros(2, np.float32), np.zeros(2, np.int32))
    # output not TENSOR_BOOL8
    expect_status(INVALID, run1, O.LESS, [In(F32, [2]), In(F32, [2])], Out(F32, [2]),
                  np.zeros(2, np.float32), np.zeros(2, np.float32))
    # quant16 inputs are not comparable
    expect_status(INVALID, run1, O.GREATER, [In(T.TENSOR_QUANT16_ASYMM, [2], 1.0, 0)] * 2, Out(B8, [2]),
                  np.zeros(2, np.uint16), np.zeros(2, np.uint16))


def test_zero_sized_input_fails():
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.EQUAL, [In(F32, [0, 3]), In(F32, [3])],
                  [Out(B8, [0, 3])], [np.zeros((0, 3), np.float32), np.zeros(3, np.float32)])
