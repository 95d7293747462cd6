"""EMBEDDING_LOOKUP, GATHER and HASHTABLE_LOOKUP on the reference device (AOSP conformance values,
hand-worked cases, invalid instances)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import Const, In, Out, expect_status, i32, run1, run_executor, run_op

F32, I32, Q8A, Q8AS, F16 = (T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                            T.TENSOR_FLOAT16)


def embedding(lookups, values, vtype=F32, scale=0.0, zp=0):
    lookups, values = np.asarray(lookups, np.int32), np.asarray(values)
    ins = [In(I32, list(lookups.shape)), In(vtype, list(values.shape), scale, zp)]
    return run1(O.EMBEDDING_LOOKUP, ins, Out(vtype, [], scale, zp), lookups, values)


# embedding_lookup.mod.py: values[i, j, k] = i + j/10 + k/100, lookups [1, 0, 2]
EMB_VALUES = np.array([[[i + j / 10 + k / 100 for k in range(4)] for j in range(2)] for i in range(3)], np.float32)


def test_embedding_lookup_cts():
    r = embedding([1, 0, 2], EMB_VALUES)
    np.testing.assert_array_equal(r, EMB_VALUES[[1, 0, 2]])
    np.testing.assert_allclose(r[0, 1], [1.10, 1.11, 1.12, 1.13], rtol=1e-6)


@pytest.mark.parametrize("vtype,dtype", [(I32, np.int32), (Q8A, np.uint8), (Q8AS, np.int8), (F16, np.float16)])
def test_embedding_lookup_types(vtype, dtype):
    values = np.arange(5 * 3, dtype=np.int64).reshape(5, 3).astype(dtype)
    scale, zp = (0.5, 1) if vtype in (Q8A, Q8AS) else (0.0, 0)
    r = embedding([4, 4, 0, 2], values, vtype, scale, zp)
    assert r.dtype == dtype
    np.testing.assert_array_equal(r, values[[4, 4, 0, 2]])


def test_embedding_lookup_out_of_range_fails():
    expect_status(ErrorStatus.GENERAL_FAILURE, embedding, [0, 3], EMB_VALUES)
    expect_status(ErrorStatus.GENERAL_FAILURE, embedding, [-1], EMB_VALUES)


def hashtable(lookups, keys, values, vtype=F32, scale=0.0, zp=0):
    lookups, keys, values = np.asarray(lookups, np.int32), np.asarray(keys, np.int32), np.asarray(values)
    ins = [In(I32, list(lookups.shape)), In(I32, list(keys.shape)), In(vtype, list(values.shape), scale, zp)]
    outs = [Out(vtype, [], scale, zp), Out(Q8A, [len(lookups)], 1.0, 0)]
    return run_op(O.HASHTABLE_LOOKUP, ins, outs, [lookups, keys, values])


def test_hashtable_lookup_quant8_cts():
    # hashtable_lookup_quant8.mod.py: table[i, j] = 10·i + j; keys [0, 123, 255]
    table = np.array([[10 * i + j for j in range(2)] for i in range(3)], np.uint8)
    out, hits = hashtable([123, 250, 255, 0], [0, 123, 255], table, Q8A, 0.5, 0)
    np.testing.assert_array_equal(out, [[10, 11], [0, 0], [20, 21], [0, 1]])
    np.testing.assert_array_equal(hits, [1, 0, 1, 1])
    assert hits.dtype == np.uint8


def test_hashtable_lookup_float_misses_are_zero_bytes():
    # hashtable_lookup_float.mod.py layout; the zero point (here 7) is not used for misses
    table = np.array([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], np.float32)
    out, hits = hashtable([1234, -292, -11, 0], [-11, 0, 1234], table)
    np.testing.assert_array_equal(out, [[5.5, 6.5], [0, 0], [1.5, 2.5], [3.5, 4.5]])
    np.testing.assert_array_equal(hits, [1, 0, 1, 1])
    out, _ = hashtable([5, 6], [1, 5], np.array([9, 8], np.uint8), Q8A, 0.5, 7)
    np.testing.assert_array_equal(out, [8, 0])
    out, hits = hashtable([3, 1, 2], [1, 2], np.array([[10], [20]], np.int32), I32)
    np.testing.assert_array_equal(out, [[0], [10], [20]])
    np.testing.assert_array_equal(hits, [0, 1, 1])


def test_hashtable_lookup_key_count_must_match():
    expect_status(ErrorStatus.INVALID_ARGUMENT, hashtable, [1], [1, 2, 3], np.zeros((2, 2), np.float32))


def test_embedding_lookup_rank1_values_rejected():
    expect_status(ErrorStatus.INVALID_ARGUMENT, embedding, [0], np.zeros(3, np.float32))


def gather(values, axis, indices, vtype=F32, scale=0.0, zp=0, const_indices=False):
    values, indices = np.asarray(values), np.asarray(indices, np.int32)
    idx = Const(I32, indices.ravel().tolist(), list(indices.shape)) if const_indices else In(I32, list(indices.shape))
    ins = [In(vtype, list(values.shape), scale, zp), i32(axis), idx]
    feeds = [values] if const_indices else [values, indices]
    return run_op(O.GATHER, ins, [Out(vtype, [], scale, zp)], feeds)[0]


@pytest.mark.parametrize("shape,axis,indices,expected", [
    # gather.mod.py examples
    ((2, 2), 0, [1, 0], [[0.7, 0.8], [-2.0, 0.2]]),
    ((4, 1), 0, [1, 3], [[0.2], [0.8]]),
    ((1, 2, 2), 0, [0, 0], [[[-2.0, 0.2], [0.7, 0.8]]] * 2),
])
def test_gather_spec(shape, axis, indices, expected):
    data = np.array([-2.0, 0.2, 0.7, 0.8], np.float32).reshape(shape)
    np.testing.assert_allclose(gather(data, axis, indices), expected, rtol=1e-6)


@pytest.mark.parametrize("axis,indices,expected", [
    (1, [1, 0], [[[4, 5, 6], [1, 2, 3]]]),
    (-1, [2, 0], [[[3, 1], [6, 4]]]),          # a negative axis counts from the end
    (2, [1, 1, 1], [[[2, 2, 2], [5, 5, 5]]]),  # repeated indices
])
def test_gather_inner_axes(axis, indices, expected):
    data = np.array([[[1, 2, 3], [4, 5, 6]]], np.float32)
    np.testing.assert_array_equal(gather(data, axis, indices), expected)


def test_gather_higher_rank_indices_spec():
    # gather_higher_rank.mod.py: [1, 3, 2] on axis 1 with indices [3, 2] -> [1, 3, 2, 2]
    data = np.array([[[1, 2], [3, 4], [5, 6]]], np.float32)
    out = gather(data, 1, [[2, 0], [1, 0], [0, 1]])
    assert out.shape == (1, 3, 2, 2)
    np.testing.assert_array_equal(out.ravel(), [5, 6, 1, 2, 3, 4, 1, 2, 1, 2, 3, 4])


@pytest.mark.parametrize("vtype,dtype", [(I32, np.int32), (Q8A, np.uint8), (Q8AS, np.int8), (F16, np.float16)])
def test_gather_types(vtype, dtype):
    values = np.arange(2 * 3 * 4).reshape(2, 3, 4).astype(dtype)
    scale, zp = (0.5, 3) if vtype in (Q8A, Q8AS) else (0.0, 0)
    out = gather(values, 1, [[2], [0]], vtype, scale, zp, const_indices=True)
    assert out.dtype == dtype and out.shape == (2, 2, 1, 4)
    np.testing.assert_array_equal(out, np.take(values, [[2], [0]], axis=1))


@pytest.mark.parametrize("index", [3, -1])
def test_gather_index_out_of_range_fails(index):
    expect_status(ErrorStatus.GENERAL_FAILURE, gather, np.zeros((2, 3), np.float32), 1, [0, index])


@pytest.mark.parametrize("axis", [2, -3])
def test_gather_bad_axis_rejected(axis):
    expect_status(ErrorStatus.INVALID_ARGUMENT, gather, np.zeros((2, 3), np.float32), axis, [0])


def test_gather_output_quant_must_equal_input():
    ins = [In(Q8A, [2]), i32(0), In(I32, [1])]
    expect_status(ErrorStatus.INVALID_ARGUMENT, run_op, O.GATHER, ins, [Out(Q8A, [1], 0.5, 1)],
                  [np.array([1, 2], np.uint8), np.array([0], np.int32)])


def test_gather_zero_sized_input_fails():
    ins = [In(F32, [0, 2]), i32(1), In(I32, [1])]
    expect_status(ErrorStatus.GENERAL_FAILURE, run_executor, O.GATHER, ins, [Out(F32, [])],
                  [np.zeros((0, 2), np.float32), np.array([0], np.int32)])
