"""LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT and SELECT on the reference device: hand-worked values, AOSP spec
examples (SELECT's quantized requantization), invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import In, Out, expect_status, run1, run_executor

F32, F16, I32, Q8A, Q8AS, B8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                                T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_BOOL8)
INVALID = ErrorStatus.INVALID_ARGUMENT
DTYPE = {F32: np.float32, F16: np.float16, I32: np.int32, Q8A: np.uint8, Q8AS: np.int8}


def logical(op, a, b, out_dims=None):
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    dims = out_dims if out_dims is not None else np.broadcast_shapes(a.shape, b.shape)
    return run1(op, [In(B8, a.shape), In(B8, b.shape)], Out(B8, dims), a, b)


def test_and_or_broadcast_hand():
    a, b = [[True], [False]], [True, False]          # [2, 1] against [2] -> [2, 2]
    np.testing.assert_array_equal(logical(O.LOGICAL_AND, a, b), [[True, False], [False, False]])
    np.testing.assert_array_equal(logical(O.LOGICAL_OR, a, b), [[True, True], [True, False]])


def test_not_hand():
    x = np.array([[True, False, False]])
    np.testing.assert_array_equal(run1(O.LOGICAL_NOT, [In(B8, [1, 3])], Out(B8, [1, 3]), x), [[False, True, True]])


def select(t, cond, x, y, qx=(0.0, 0), qy=(0.0, 0), qo=(0.0, 0)):
    cond, x, y = np.asarray(cond, bool), np.asarray(x, DTYPE[t]), np.asarray(y, DTYPE[t])
    return run1(O.SELECT, [In(B8, cond.shape), In(t, x.shape, *qx), In(t, y.shape, *qy)],
                Out(t, x.shape, *qo), cond, x, y)


@pytest.mark.parametrize("t", [F32, F16, I32])
def test_select_hand(t):
    # AOSP select_v1_2 "two_dim"
    out = select(t, [[False, True], [False, True]], [[1, 2], [3, 4]], [[5, 6], [7, 8]])
    np.testing.assert_array_equal(out, [[5, 2], [7, 4]])
    assert out.dtype == DTYPE[t]


def test_select_quant8_requantizes_chosen_element():
    # the quantizations of AOSP select_v1_2's quant8 variation: x (1.5, 129), y (0.5, 127), output (1.0, 128).
    # x 130 -> real 1.5 -> 129.5 -> 130 (half away from zero); x 131 -> real 3 -> 131; y 137 -> real 5 -> 133
    out = select(Q8A, [True, False, True], [130, 130, 131], [135, 137, 139], (1.5, 129), (0.5, 127), (1.0, 128))
    np.testing.assert_array_equal(out, [130, 133, 131])


def test_select_quant_saturates():
    # x (4.0, 0): 100 -> real 400 -> 400/1 + 10 > 255 -> 255; y (0.1, 200): 0 -> real −20 -> −10 -> 0
    out = select(Q8A, [True, False], [100, 100], [0, 0], (4.0, 0), (0.1, 200), (1.0, 10))
    np.testing.assert_array_equal(out, [255, 0])
    # signed: x (1.0, 0) −128 -> real −128 -> −128·4 − 3 < −128 -> −128; y (0.5, 0) 5 -> 2.5/0.25 − 3 = 7
    out = select(Q8AS, [True, False], [-128, -128], [5, 5], (1.0, 0), (0.5, 0), (0.25, -3))
    np.testing.assert_array_equal(out, [-128, 7])


def test_invalid():
    expect_status(INVALID, logical, O.LOGICAL_AND, [True, False], [True, False, True], out_dims=[3])
    expect_status(INVALID, run1, O.LOGICAL_OR, [In(F32, [2]), In(F32, [2])], Out(F32, [2]),
                  np.zeros(2, np.float32), np.zeros(2, np.float32))
    # SELECT does not broadcast
    expect_status(INVALID, select, F32, [True, False], [1.0, 2.0], [[3.0, 4.0]])
    expect_status(INVALID, select, F32, [True], [1.0, 2.0], [3.0, 4.0])
    # condition must be TENSOR_BOOL8
    expect_status(INVALID, run1, O.SELECT, [In(I32, [2]), In(F32, [2]), In(F32, [2])], Out(F32, [2]),
                  np.zeros(2, np.int32), np.zeros(2, np.float32), np.zeros(2, np.float32))
    # x and y of one type
    expect_status(INVALID, run1, O.SELECT, [In(B8, [2]), In(F32, [2]), In(F16, [2])], Out(F32, [2]),
                  np.zeros(2, bool), np.zeros(2, np.float32), np.zeros(2, np.float16))


def test_zero_sized_input_fails():
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.LOGICAL_NOT, [In(B8, [0, 2])], [Out(B8, [0, 2])],
                  [np.zeros((0, 2), bool)])
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.SELECT,
                  [In(B8, [0]), In(F32, [0]), In(F32, [0])], [Out(F32, [0])],
                  [np.zeros(0, bool), np.zeros(0, np.float32), np.zeros(0, np.float32)])
