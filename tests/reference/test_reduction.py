"""REDUCE_*, MEAN, ARGMAX, ARGMIN, TOPK_V2 on the reference device.

Expected values are hand-worked or taken from the AOSP conformance specs (runtime/test/specs); the
special-value rules are AOSP's (Reduce.cpp, ArgMinMax.cpp, TopK_V2.cpp).
"""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import BOOL, Const, In, Out, boolean, expect_status, i32, run1, run_executor, run_op

F32, F16, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
Q8A, Q8AS, B8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_BOOL8
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE
FLT_MAX = float(np.finfo(np.float32).max)
DTYPES = {F32: np.float32, F16: np.float16, I32: np.int32, Q8A: np.uint8, Q8AS: np.int8, B8: np.bool_}


def axes(*values) -> Const:
    return Const(I32, list(values), [len(values)])


def reduce(op, t, x, axis_values, keep, out_dims, scale=0.0, zp=0, executor=False):
    x = np.asarray(x, DTYPES[t])
    keep_arg = i32(int(keep)) if op == O.MEAN else boolean(bool(keep))
    ins = [In(t, x.shape, scale, zp), axes(*axis_values), keep_arg]
    out = Out(t, out_dims, scale, zp)
    if executor:
        return run_executor(op, ins, [out], [x])[0]
    return run1(op, ins, out, x)


X24 = np.arange(1, 25, dtype=np.float32).reshape(4, 3, 2) / 10  # 0.1 … 2.4 (the AOSP specs' input)


# ---- REDUCE_SUM / REDUCE_PROD / MEAN (float) ----------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16])
def test_sum_axes_keep_dims_and_duplicates(t):
    x = np.array([[-1, -2], [3, 4], [5, -6]])
    np.testing.assert_array_equal(reduce(O.REDUCE_SUM, t, x, [-1], False, [3]), [-3, 7, -1])
    np.testing.assert_array_equal(reduce(O.REDUCE_SUM, t, x, [0, -2, 0], True, [1, 2]), [[7, -4]])
    np.testing.assert_array_equal(reduce(O.REDUCE_SUM, t, x, [1, 0], False, [1]), [3])


def test_sum_aosp_spec():
    r = reduce(O.REDUCE_SUM, F32, X24, [1, 0, -3, -3], False, [2])
    np.testing.assert_allclose(r, [14.4, 15.6], rtol=1e-6)
    r = reduce(O.REDUCE_SUM, F32, X24, [0, 2], True, [1, 3, 1])
    np.testing.assert_allclose(r.ravel(), [8.4, 10.0, 11.6], rtol=1e-6)


def test_sum_adds_left_to_right_in_float32():
    # 1e8 + 1 + 1 … in float32 stays 1e8 (each +1 rounds away); a pairwise or float64 sum would not
    x = np.array([1e8] + [1.0] * 16, np.float32)
    assert reduce(O.REDUCE_SUM, F32, x, [0], False, [1])[0] == np.float32(1e8)


def test_empty_axis_list_reduces_nothing():
    # a constant cannot be empty: the axes come as a model input of size 0 (through the executor)
    x = np.array([[1.5, -2.0], [3.0, 4.0]], np.float32)
    for op, keep in ((O.REDUCE_SUM, False), (O.REDUCE_MAX, True)):
        ins = [In(F32, [2, 2]), In(I32, [0]), boolean(keep)]
        (r,) = run_executor(op, ins, [Out(F32, [2, 2])], [x, np.zeros(0, np.int32)])
        np.testing.assert_array_equal(r, x)


@pytest.mark.parametrize("t", [F32, F16])
def test_prod(t):
    x = np.array([[-1, -2], [3, 4], [5, -6]])
    np.testing.assert_array_equal(reduce(O.REDUCE_PROD, t, x, [1], False, [3]), [2, 12, -30])
    np.testing.assert_array_equal(reduce(O.REDUCE_PROD, t, x, [0, 1], True, [1, 1]), [[-720]])


def test_prod_zero_factor_wins_over_inf_and_nan():
    x = np.array([[np.inf, 0.0], [0.0, np.nan], [np.nan, 2.0], [np.inf, -1.0]], np.float32)
    r = reduce(O.REDUCE_PROD, F32, x, [1], False, [4])
    np.testing.assert_array_equal(r, [0.0, 0.0, np.nan, -np.inf])


def test_prod_underflow_then_inf_is_zero():
    # 1e-30 · 1e-30 underflows to 0, and AOSP's rule keeps 0 (a plain product would give 0·inf = NaN)
    x = np.array([1e-30, 1e-30, np.inf], np.float32)
    assert reduce(O.REDUCE_PROD, F32, x, [0], False, [1])[0] == 0.0


@pytest.mark.parametrize("t", [F32, F16])
def test_mean_float(t):
    r = reduce(O.MEAN, t, X24, [1, 0, -3, -3], False, [2])
    np.testing.assert_allclose(r, [1.2, 1.3], rtol=1e-3 if t == F16 else 1e-6)
    r = reduce(O.MEAN, t, X24, [0, 2], True, [1, 3, 1])
    np.testing.assert_allclose(r.ravel(), [1.05, 1.25, 1.45], rtol=1e-3 if t == F16 else 1e-6)
    r = reduce(O.MEAN, t, [[2.0, 3.0], [3.0, 4.0]], [0, 1], False, [1])  # all axes removed → [1]
    np.testing.assert_array_equal(r, [3.0])


def test_mean_keep_dims_is_an_int32_greater_than_zero():
    r = reduce(O.MEAN, F32, [[1.0, 2.0], [3.0, 5.0]], [1], 7, [2, 1])
    np.testing.assert_array_equal(r, [[1.5], [4.0]])
    r = reduce(O.MEAN, F32, [[1.0, 2.0], [3.0, 5.0]], [1], -1, [2])
    np.testing.assert_array_equal(r, [1.5, 4.0])


# ---- MEAN (quantized) -------------------------------------------------------------------------------

def test_mean_quant8_aosp_specs():
    x = np.arange(1, 25).reshape(4, 3, 2)
    np.testing.assert_array_equal(reduce(O.MEAN, Q8A, x, [1, 0, -3, -3], False, [2], 0.8, 5), [12, 13])
    np.testing.assert_array_equal(reduce(O.MEAN, Q8A, x, [0, 2], True, [1, 3, 1], 0.8, 5).ravel(), [10, 12, 14])
    xs = x - 128
    np.testing.assert_array_equal(reduce(O.MEAN, Q8AS, xs, [1, 0, -3, -3], False, [2], 0.8, -123), [-116, -115])
    # stored sums −940, −924, −908 over 8: AOSP's int32 division truncates to −117, −115, −113 (the spec
    # lists −118, −116, −114, floored; the conformance tolerance of 1 accepts both)
    np.testing.assert_array_equal(reduce(O.MEAN, Q8AS, xs, [0, 2], True, [1, 3, 1], 0.8, -123).ravel(),
                                  [-117, -115, -113])


def test_mean_quant8_truncates_the_stored_sum_toward_zero():
    # stored sums 7, −7, 5 over 2 elements: 3, −3 (not −4), 2 — whatever the zero point
    r = reduce(O.MEAN, Q8AS, [[3, 4], [-3, -4], [2, 3]], [1], False, [3], 0.5, 10)
    np.testing.assert_array_equal(r, [3, -3, 2])
    r = reduce(O.MEAN, Q8A, [[255, 254, 0]], [1], False, [1], 0.5, 100)
    np.testing.assert_array_equal(r, [169])


# ---- REDUCE_MAX / REDUCE_MIN ------------------------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16])
def test_max_min_float(t):
    x = np.array([[-1, -2], [3, 4], [5, -6]])
    np.testing.assert_array_equal(reduce(O.REDUCE_MAX, t, x, [-1], False, [3]), [-1, 4, 5])
    np.testing.assert_array_equal(reduce(O.REDUCE_MIN, t, x, [-1], False, [3]), [-2, 3, -6])
    np.testing.assert_array_equal(reduce(O.REDUCE_MAX, t, x, [0, 1], True, [1, 1]), [[5]])


def test_max_min_aosp_spec():
    np.testing.assert_allclose(reduce(O.REDUCE_MAX, F32, X24, [1, 0, -3, -3], False, [2]), [2.3, 2.4])
    np.testing.assert_allclose(reduce(O.REDUCE_MIN, F32, X24, [0, 2], True, [1, 3, 1]).ravel(), [0.1, 0.3, 0.5])


@pytest.mark.parametrize("t,lowest", [(F32, FLT_MAX), (F16, 65504.0)])
def test_max_min_skip_nan_and_start_from_the_finite_bounds(t, lowest):
    x = np.array([[np.nan, 1.0, np.nan], [np.nan, np.nan, np.nan], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 2.0, 3.0]])
    np.testing.assert_array_equal(reduce(O.REDUCE_MAX, t, x, [1], False, [4]), [1.0, -lowest, -lowest, np.inf])
    np.testing.assert_array_equal(reduce(O.REDUCE_MIN, t, x, [1], False, [4]), [1.0, lowest, -np.inf, 2.0])


@pytest.mark.parametrize("t,lo", [(Q8A, 0), (Q8AS, -128)])
def test_max_min_quant8_raw_values(t, lo):
    x = np.array([[lo, lo + 255, lo + 7], [lo + 3, lo + 2, lo + 9]])
    np.testing.assert_array_equal(reduce(O.REDUCE_MAX, t, x, [1], False, [2], 0.5, lo + 3), [lo + 255, lo + 9])
    np.testing.assert_array_equal(reduce(O.REDUCE_MIN, t, x, [0], True, [1, 3], 0.5, lo + 3),
                                  [[lo, lo + 2, lo + 7]])


# ---- REDUCE_ALL / REDUCE_ANY ------------------------------------------------------------------------

def test_all_any():
    x = np.array([[True, False, True], [True, True, True], [False, False, False]])
    np.testing.assert_array_equal(reduce(O.REDUCE_ALL, B8, x, [1], False, [3]), [False, True, False])
    np.testing.assert_array_equal(reduce(O.REDUCE_ANY, B8, x, [1], False, [3]), [True, True, False])
    np.testing.assert_array_equal(reduce(O.REDUCE_ANY, B8, x, [0], True, [1, 3]), [[True, True, True]])
    np.testing.assert_array_equal(reduce(O.REDUCE_ALL, B8, x, [-1, 0], False, [1]), [False])


# ---- ARGMAX / ARGMIN --------------------------------------------------------------------------------

def quant(t, scale, zp) -> tuple[float, int]:
    """(scale, zero point) of an operand of type ``t``: as given for quantized types, (0, 0) otherwise."""
    return (scale, zp) if t in (Q8A, Q8AS) else (0.0, 0)


def arg(op, t, x, axis, out_dims, scale=0.0, zp=0):
    x = np.asarray(x, DTYPES[t])
    scale, zp = quant(t, scale, zp)
    return run1(op, [In(t, x.shape, scale, zp), i32(axis)], Out(I32, out_dims), x)


@pytest.mark.parametrize("t", [F32, F16, I32, Q8A, Q8AS])
def test_argmax_argmin_first_index_on_ties(t):
    x = [[1, 2, 4, 4, 0], [3, 0, 3, 1, 0]]
    np.testing.assert_array_equal(arg(O.ARGMAX, t, x, 1, [2], 1.0, 0), [2, 0])
    np.testing.assert_array_equal(arg(O.ARGMIN, t, x, -1, [2], 1.0, 0), [4, 1])
    np.testing.assert_array_equal(arg(O.ARGMAX, t, x, 0, [5], 1.0, 0), [1, 0, 0, 0, 0])


def test_argmax_aosp_specs():
    np.testing.assert_array_equal(arg(O.ARGMAX, F32, [[1.0, 2.0], [4.0, 3.0]], 1, [2]), [1, 0])
    np.testing.assert_array_equal(arg(O.ARGMAX, F32, [1.0, 2.0, 4.0], 0, [1]), [2])  # rank 1 → [1]
    np.testing.assert_array_equal(arg(O.ARGMIN, Q8A, [[1, 2], [4, 3]], 0, [2], 1.0, 0), [0, 0])


def test_argmax_int32_beyond_float_precision():
    x = [16777217, 16777216, 16777217]
    np.testing.assert_array_equal(arg(O.ARGMAX, I32, x, 0, [1]), [0])
    np.testing.assert_array_equal(arg(O.ARGMIN, I32, x, 0, [1]), [1])


def test_argmax_nan_first_element_wins_later_nan_never():
    x = [[np.nan, 5.0, 1.0], [1.0, np.nan, 5.0], [np.nan, np.nan, np.nan]]
    np.testing.assert_array_equal(arg(O.ARGMAX, F32, x, 1, [3]), [0, 2, 0])
    np.testing.assert_array_equal(arg(O.ARGMIN, F32, x, 1, [3]), [0, 0, 0])


def test_argmax_rank_5():
    x = np.zeros((2, 1, 2, 1, 3), np.float32)
    x[1, 0, 1, 0, 2] = 1.0
    np.testing.assert_array_equal(arg(O.ARGMAX, F32, x, 4, [2, 1, 2, 1]).ravel(), [0, 0, 0, 2])


# ---- TOPK_V2 ----------------------------------------------------------------------------------------

def topk(t, x, k, scale=0.0, zp=0):
    x = np.asarray(x, DTYPES[t])
    scale, zp = quant(t, scale, zp)
    dims = list(x.shape[:-1]) + [k]
    return run_op(O.TOPK_V2, [In(t, x.shape, scale, zp), i32(k)], [Out(t, dims, scale, zp), Out(I32, dims)], [x])


def test_topk_aosp_specs():
    v, i = topk(F32, [[-2.0, -3.0, 0.2], [0.8, 0.1, -0.1]], 2)
    np.testing.assert_array_equal(v, np.float32([[0.2, -2.0], [0.8, 0.1]]))
    np.testing.assert_array_equal(i, [[2, 0], [0, 1]])
    v, i = topk(Q8A, [[1, 2, 3], [251, 250, 249]], 2, 2.0, 128)
    np.testing.assert_array_equal(v, [[3, 2], [251, 250]])
    np.testing.assert_array_equal(i, [[2, 1], [0, 1]])
    v, i = topk(F32, [-2.0, -3.0, -4.0, 0.2, 0.8, 0.1, -0.1, -0.8], 2)
    np.testing.assert_array_equal(i, [4, 3])


@pytest.mark.parametrize("t", [F32, F16, I32, Q8A, Q8AS])
def test_topk_equal_values_larger_index_first(t):
    v, i = topk(t, [[5, 7, 5, 7, 1]], 4, 1.0, 0)
    np.testing.assert_array_equal(v, [[7, 7, 5, 5]])
    np.testing.assert_array_equal(i, [[3, 1, 2, 0]])


def test_topk_nan_orders_above_every_number():
    v, i = topk(F32, [[1.0, np.nan, np.inf, np.nan]], 3)
    np.testing.assert_array_equal(i, [[3, 1, 2]])
    np.testing.assert_array_equal(v, np.float32([[np.nan, np.nan, np.inf]]))


# ---- invalid models and bad data --------------------------------------------------------------------

def test_invalid_reductions():
    expect_status(INVALID, reduce, O.REDUCE_SUM, F32, [1.0, 2.0], [1], False, [1])        # axis out of range
    expect_status(INVALID, reduce, O.REDUCE_SUM, F32, [1.0, 2.0], [-2], False, [1])
    expect_status(INVALID, reduce, O.REDUCE_SUM, F32, np.zeros((1, 1, 1, 1, 2)), [0], False, [1, 1, 1, 2])
    expect_status(INVALID, reduce, O.REDUCE_SUM, Q8A, [1, 2], [0], False, [1], 0.5, 0)  # type not allowed
    expect_status(INVALID, reduce, O.REDUCE_ALL, F32, [1.0, 2.0], [0], False, [1])
    ins = [In(F32, [2]), axes(0), i32(0)]  # REDUCE_* keep_dims must be a BOOL
    expect_status(INVALID, run1, O.REDUCE_MAX, ins, Out(F32, [1]), np.zeros(2, np.float32))
    ins = [In(F32, [2]), axes(0), Const(BOOL, False)]  # MEAN keep_dims must be an INT32
    expect_status(INVALID, run1, O.MEAN, ins, Out(F32, [1]), np.zeros(2, np.float32))


@pytest.mark.parametrize("op", [O.MEAN, O.REDUCE_MAX, O.REDUCE_MIN])
def test_quantized_output_must_match_the_input(op):
    keep = i32(0) if op == O.MEAN else boolean(False)
    ins = [In(Q8A, [2], 0.5, 3), axes(0), keep]
    expect_status(INVALID, run1, op, ins, Out(Q8A, [1], 0.25, 3), np.zeros(2, np.uint8))


def test_invalid_arg_and_topk():
    expect_status(INVALID, arg, O.ARGMAX, F32, [[1.0, 2.0]], 2, [1])
    expect_status(INVALID, arg, O.ARGMIN, F32, [[1.0, 2.0]], -3, [1])
    expect_status(INVALID, topk, F32, [[1.0, 2.0]], 3)
    expect_status(INVALID, topk, F32, [[1.0, 2.0]], 0)
    ins = [In(F32, [2]), i32(0)]
    expect_status(INVALID, run1, O.ARGMAX, ins, Out(F32, [1]), np.zeros(2, np.float32))  # output must be int32


@pytest.mark.parametrize("op", [O.REDUCE_SUM, O.MEAN, O.REDUCE_MAX])
def test_zero_sized_input_fails(op):
    expect_status(FAILURE, reduce, op, F32, np.zeros((0, 3), np.float32), [1], False, [0], executor=True)


def test_zero_sized_argmax_fails():
    ins = [In(F32, [0, 3]), i32(0)]
    expect_status(FAILURE, run_executor, O.ARGMAX, ins, [Out(I32, [3])], [np.zeros((0, 3), np.float32)])
