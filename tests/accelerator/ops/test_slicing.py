"""SLICE, STRIDED_SLICE, SPLIT, TILE and REVERSE on each accelerator device vs the reference (exact:
element copies)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, i32

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
QUANT = {Q8A: (0.5, 7), Q8AS: (0.25, -9)}
SHAPE = (2, 3, 4, 5)


def vec(values):
    return Const(I32T, np.asarray(values, np.int32))


@pytest.mark.parametrize("ty", [F32, F16, I32T, Q8A, Q8AS])
def test_slice(accelerator, ty):
    q = QUANT.get(ty, ())
    check_op(accelerator, OP.SLICE, [In(ty, SHAPE, *q), vec([1, 0, 1, 2]), vec([1, -1, 2, 3])], [Out(ty, *q)],
             what=ty.name)


@pytest.mark.parametrize("ty", [F32, F16, Q8A, Q8AS])
def test_strided_slice(accelerator, ty):
    q = QUANT.get(ty, ())
    # negative strides, clamped bounds, a begin and an end mask, axis 0 shrunk
    args = [In(ty, SHAPE, *q), vec([1, -1, 0, 10]), vec([2, -10, 3, -6]), vec([1, -2, 2, -1]), i32(4), i32(0), i32(1)]
    check_op(accelerator, OP.STRIDED_SLICE, args, [Out(ty, *q)], what=ty.name)


@pytest.mark.parametrize("ty,axis", [(F32, 1), (I32T, -1), (Q8AS, 0)])
def test_split(accelerator, ty, axis):
    q = QUANT.get(ty, ())
    shape = (2, 3, 6) if axis != 0 else (4, 3, 2)
    count = 3 if axis == 1 else 2
    check_op(accelerator, OP.SPLIT, [In(ty, shape, *q), i32(axis), i32(count)], [Out(ty, *q)] * count,
             what=ty.name)


@pytest.mark.parametrize("ty", [F32, F16, I32T, Q8A])
def test_tile(accelerator, ty):
    q = QUANT.get(ty, ())
    check_op(accelerator, OP.TILE, [In(ty, (2, 1, 3), *q), vec([2, 3, 1])], [Out(ty, *q)], what=ty.name)


@pytest.mark.parametrize("ty,axis", [(F32, 0), (F16, 2), (I32T, 3), (Q8A, 1), (Q8AS, 3)])
def test_reverse(accelerator, ty, axis):
    q = QUANT.get(ty, ())
    check_op(accelerator, OP.REVERSE, [In(ty, SHAPE, *q), vec([axis])], [Out(ty, *q)], what=ty.name)


def test_reverse_rank8(accelerator):
    check_op(accelerator, OP.REVERSE, [In(Q8A, (2, 1, 2, 3, 1, 2, 2, 3), 0.5, 4), vec([5])], [Out(Q8A, 0.5, 4)])


def test_slice_to_zero_sized_output(accelerator):
    """A zero size gives a zero-sized output and no launch."""
    check_op(accelerator, OP.SLICE, [In(F32, (2, 3)), vec([1, 3]), vec([1, 0])], [Out(F32)])
