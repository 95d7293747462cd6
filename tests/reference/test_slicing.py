"""SLICE, STRIDED_SLICE, SPLIT, TILE and REVERSE on the reference device: hand-worked values, AOSP spec
examples, Python-slicing oracles on random instances, and invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import ErrorStatus, OperationType as O
from gpu_driver.ops.catalog import lookup
from gpu_driver.ops.definition import TensorInfo

from .nnref import F16, F32, I32, Q8A, Q8AS
from .single_op import Const, In, Out, build, expect_status, i32, run1, run_executor, run_op

INVALID = ErrorStatus.INVALID_ARGUMENT


def vec(values) -> Const:
    v = np.asarray(values, np.int32).reshape(-1)
    return Const(I32, v, [v.size])


def x_in(x, ty=F32, scale=0.0, zp=0) -> In:
    return In(ty, list(np.shape(x)), scale, zp)


def strided(x, begin, end, strides, begin_mask=0, end_mask=0, shrink=0, ty=F32):
    args = [x_in(x, ty), vec(begin), vec(end), vec(strides), i32(begin_mask), i32(end_mask), i32(shrink)]
    return run1(O.STRIDED_SLICE, args, Out(ty, []), np.asarray(x))


# ---- SLICE --------------------------------------------------------------------------------------------------

def test_slice_spec():
    # slice.mod.py: [3, 2, 3, 1] int32, begin [1, 0, 0, 0], size [2, 1, −1, 1]
    x = np.array([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6], np.int32).reshape(3, 2, 3, 1)
    r = run1(O.SLICE, [x_in(x, I32), vec([1, 0, 0, 0]), vec([2, 1, -1, 1])], Out(I32, []), x)
    assert r.shape == (2, 1, 3, 1)
    np.testing.assert_array_equal(r.ravel(), [3, 3, 3, 5, 5, 5])


def test_slice_arguments_as_model_inputs():
    # the output shape is only known at execution
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = build(O.SLICE, [x_in(x), In(I32, [2]), In(I32, [2])], [Out(F32, [0, 0])])
    (r,) = gpu_driver.get_device("reference").prepare_model(model).execute(
        [x, np.array([1, 1], np.int32), np.array([1, 2], np.int32)])
    np.testing.assert_array_equal(r, [[4, 5]])


def test_slice_zero_sized():
    # a zero-sized input slices to a zero-sized output; a zero size gives one too
    x = np.zeros((0, 3), np.float32)
    (r,) = run_executor(O.SLICE, [x_in(x), vec([0, 1]), vec([0, 2])], [Out(F32, [])], [x])
    assert r.shape == (0, 2)
    r = run1(O.SLICE, [In(Q8AS, [2, 3], 0.5, 1), vec([1, 3]), vec([1, 0])], Out(Q8AS, [], 0.5, 1),
             np.ones((2, 3), np.int8))
    assert r.shape == (1, 0)


# ---- STRIDED_SLICE ------------------------------------------------------------------------------------------

def test_strided_slice_hand():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # rows 2, 0 backwards (end −4 clamps to −1: "before the start"), columns 1, 3
    np.testing.assert_array_equal(strided(x, [-1, 1], [-4, 100], [-2, 2]), [[9, 11], [1, 3]])
    # masks: the whole range in the stride's direction; shrink removes axis 0
    np.testing.assert_array_equal(strided(x, [1, 3], [2, 0], [1, -1], end_mask=2, shrink=1), [7, 6, 5, 4])
    # every axis shrunk: shape [1]
    r = strided(x, [2, 1], [3, 2], [1, 1], shrink=3)
    assert r.shape == (1,) and r[0] == 9
    # an empty range gives a zero-sized output
    assert strided(x, [2, 0], [1, 4], [1, 1]).shape == (0, 4)


def test_strided_slice_spec_b155662254():
    r = strided(np.array([0.0, 1, 2, 3], np.float32), [0], [1], [1], shrink=1)
    np.testing.assert_array_equal(r, [0.0])


@pytest.mark.parametrize("seed", range(4))
def test_strided_slice_random_against_python_slices(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    dims = tuple(int(d) for d in rng.integers(1, 6, rank))
    x = rng.integers(0, 256, dims).astype(np.uint8)
    begin = [int(v) for v in rng.integers(-7, 7, rank)]
    end = [int(v) for v in rng.integers(-7, 7, rank)]
    strides = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in range(rank)]
    bm, em = int(rng.integers(0, 16)), int(rng.integers(0, 16))
    # Python slices clamp begin/end exactly as the operation does; a mask bit is an omitted bound
    index = tuple(slice(None if bm >> a & 1 else begin[a], None if em >> a & 1 else end[a], strides[a])
                  for a in range(rank))
    args = [x_in(x, Q8A, 0.5, 2), vec(begin), vec(end), vec(strides), i32(bm), i32(em), i32(0)]
    r = run1(O.STRIDED_SLICE, args, Out(Q8A, [], 0.5, 2), x)
    np.testing.assert_array_equal(r, x[index])


def test_strided_slice_float16():
    x = np.array([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]], np.float16)
    r = run1(O.STRIDED_SLICE, [x_in(x, F16), vec([0, 2]), vec([2, 0]), vec([1, -2]), i32(0), i32(2), i32(0)],
             Out(F16, []), x)
    np.testing.assert_array_equal(r, x[:, 2::-2])


@pytest.mark.parametrize("begin,end,strides,shrink", [
    ([0, 0], [2, 3], [1, 1], 1),    # strided_slice_invalid: shrunk axis of length 2
    ([1, 0], [0, 3], [-1, 1], 1),   # strided_slice_invalid: shrunk axis with a negative stride
    ([0, 0], [2, 3], [1, 0], 0),    # zero stride
    ([0], [2], [1], 0),             # begin/end/strides must have rank entries
])
def test_strided_slice_invalid(begin, end, strides, shrink):
    expect_status(INVALID, strided, np.zeros((2, 3), np.float32), begin, end, strides, shrink=shrink)


# ---- SPLIT --------------------------------------------------------------------------------------------------

def test_split_spec_negative_axis():
    # split_float_5.mod.py: axis −2 of [2, 2, 2] into two [2, 1, 2]
    x = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
    a, b = run_op(O.SPLIT, [x_in(x), i32(-2), i32(2)], [Out(F32, []), Out(F32, [])], [x])
    np.testing.assert_array_equal(a.ravel(), [1, 2, 5, 6])
    np.testing.assert_array_equal(b.ravel(), [3, 4, 7, 8])


@pytest.mark.parametrize("ty", [I32, Q8AS, F16])
def test_split_three_ways(ty):
    x = np.arange(24).reshape(2, 6, 2).astype(np.int32 if ty == I32 else np.int8 if ty == Q8AS else np.float16)
    q = (0.5, -1) if ty == Q8AS else (0.0, 0)
    outs = run_op(O.SPLIT, [x_in(x, ty, *q), i32(1), i32(3)], [Out(ty, [], *q)] * 3, [x])
    for got, want in zip(outs, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis,count,outs", [(0, 4, 4), (2, 1, 1), (1, 2, 3)])
def test_split_invalid(axis, count, outs):
    # 4 does not divide 2; axis 2 out of range; num_splits differs from the output count
    x = np.zeros((2, 4), np.float32)
    expect_status(INVALID, run_op, O.SPLIT, [x_in(x), i32(axis), i32(count)], [Out(F32, [])] * outs, [x])


# ---- TILE ---------------------------------------------------------------------------------------------------

def test_tile_spec():
    # tile_3.mod.py: [1, 2, 3] by [2, 3, 1]
    x = np.array([11, 12, 13, 21, 22, 23], np.float32).reshape(1, 2, 3)
    r = run1(O.TILE, [x_in(x), vec([2, 3, 1])], Out(F32, []), x)
    assert r.shape == (2, 6, 3)
    np.testing.assert_array_equal(r.ravel(), [11, 12, 13, 21, 22, 23] * 6)


@pytest.mark.parametrize("ty", [I32, Q8A])
def test_tile_multiples_as_model_input(ty):
    x = np.array([[1, 2], [3, 4]], np.int32 if ty == I32 else np.uint8)
    q = (0.5, 127) if ty == Q8A else (0.0, 0)
    model = build(O.TILE, [x_in(x, ty, *q), In(I32, [2])], [Out(ty, [0, 0], *q)])
    (r,) = gpu_driver.get_device("reference").prepare_model(model).execute([x, np.array([2, 3], np.int32)])
    np.testing.assert_array_equal(r, np.tile(x, (2, 3)))


def test_tile_invalid():
    x = np.zeros((2, 2), np.float32)
    expect_status(INVALID, run1, O.TILE, [x_in(x), vec([1, -1])], Out(F32, []), x)
    expect_status(INVALID, run1, O.TILE, [x_in(x), vec([1, 1, 1])], Out(F32, []), x)


# ---- REVERSE ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reverse_spec(axis):
    # reverse.mod.py: [2, 3, 4] = 0..23 along each axis
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    r = run1(O.REVERSE, [x_in(x), vec([axis])], Out(F32, []), x)
    np.testing.assert_array_equal(r, np.flip(x, axis))


def test_reverse_rank8_quant():
    x = np.arange(2 ** 8, dtype=np.uint8).reshape((2,) * 8)
    r = run1(O.REVERSE, [x_in(x, Q8A, 0.5, 4), vec([5])], Out(Q8A, [], 0.5, 4), x)
    np.testing.assert_array_equal(r, np.flip(x, 5))


@pytest.mark.parametrize("axis", [[-1], [3], [0, 1]])
def test_reverse_invalid_axis(axis):
    # axis ∈ [0, rank), exactly one entry
    x = np.zeros((2, 2, 2), np.float32)
    expect_status(INVALID, run1, O.REVERSE, [x_in(x), vec(axis)], Out(F32, []), x)


@pytest.mark.parametrize("op,args", [
    (O.TILE, [vec([1, 1])]),
    (O.REVERSE, [vec([0])]),
    (O.STRIDED_SLICE, [vec([0, 0]), vec([1, 1]), vec([1, 1]), i32(0), i32(0), i32(0)]),
])
def test_zero_sized_input_fails(op, args):
    # only SLICE accepts zero-sized inputs (operations.md §0.6)
    infos = [TensorInfo(F32, (0, 2), value=np.zeros((0, 2), np.float32))]
    infos += [TensorInfo(a.type, tuple(a.dims), value=np.asarray(a.value)) for a in args]
    with pytest.raises(Exception) as info:
        lookup(op).define(infos, [TensorInfo(F32, None, known_shape=False)])
    assert info.value.status == ErrorStatus.GENERAL_FAILURE
