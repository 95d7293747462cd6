"""The shape operations on each accelerator device vs the reference (exact copies): the aliases (RESHAPE,
SQUEEZE, EXPAND_DIMS), the gathers (TRANSPOSE, CHANNEL_SHUFFLE, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, both layouts), FILL and RANK, for every type they allow."""
import numpy as np
import pytest

import gpu_driver

from .harness import check_op, compare
from .models import F32, I32T, OP, OT, Q8A, Const, In, NoValue, Out, Scalar, i32

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED
#: (type, scale, zero point) of the tensors of each tested type
TYPES = {"f32": (F32, 0.0, 0), "f16": (F16, 0.0, 0), "q8a": (Q8A, 0.5, 7), "q8as": (Q8AS, 0.25, -5),
         "i32": (I32T, 0.0, 0)}
IMAGE_TYPES = ["f32", "f16", "q8a", "q8as"]


def tensor(kind, shape):
    t, scale, zp = TYPES[kind]
    return In(t, shape, scale, zp), Out(t, scale, zp)


def vec(values):
    return Const(I32T, np.array(values, np.int32))


def boolean(v):
    return Scalar(OT.BOOL, bool(v))


@pytest.mark.parametrize("kind", ["f32", "f16", "q8a", "q8as", "i32"])
def test_aliases(accelerator, kind):
    rng = np.random.default_rng(17)
    x, o = tensor(kind, (2, 3, 4))
    check_op(accelerator, OP.RESHAPE, [x, vec([4, -1])], [o], rng, what=kind)
    x1, o1 = tensor(kind, (1, 6, 1))
    if kind != "i32":  # SQUEEZE has no int32 form
        check_op(accelerator, OP.SQUEEZE, [x1, vec([-1])], [o1], rng, what=kind)
        check_op(accelerator, OP.SQUEEZE, [x1, NoValue(I32T)], [o1], rng, what=f"{kind} all")
    check_op(accelerator, OP.EXPAND_DIMS, [x, i32(-2)], [o], rng, what=kind)


@pytest.mark.parametrize("kind", IMAGE_TYPES)
def test_transpose(accelerator, kind):
    rng = np.random.default_rng(18)
    for shape, perm in [((5,), [0]), ((3, 4), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4, 5), [3, 1, 0, 2])]:
        x, o = tensor(kind, shape)
        check_op(accelerator, OP.TRANSPOSE, [x, vec(perm)], [o], rng, what=f"{kind} {perm}")
    x, o = tensor(kind, (3, 5))
    check_op(accelerator, OP.TRANSPOSE, [x, NoValue(I32T)], [o], rng, what=f"{kind} omitted perm")


@pytest.mark.parametrize("kind", IMAGE_TYPES)
def test_channel_shuffle(accelerator, kind):
    rng = np.random.default_rng(19)
    for shape, groups, axis in [((2, 12), 3, -1), ((6, 2, 5), 2, 0), ((2, 3, 8, 2), 4, 2)]:
        x, o = tensor(kind, shape)
        check_op(accelerator, OP.CHANNEL_SHUFFLE, [x, i32(groups), i32(axis)], [o], rng, what=f"{kind} {shape}")


@pytest.mark.parametrize("kind", IMAGE_TYPES)
def test_depth_space(accelerator, kind):
    rng = np.random.default_rng(16)
    for nchw in (False, True):
        x, o = tensor(kind, (2, 8, 3, 2) if nchw else (2, 3, 2, 8))
        check_op(accelerator, OP.DEPTH_TO_SPACE, [x, i32(2), boolean(nchw)], [o], rng, what=f"{kind} {nchw}")
        x, o = tensor(kind, (1, 2, 6, 3) if nchw else (1, 6, 3, 2))
        check_op(accelerator, OP.SPACE_TO_DEPTH, [x, i32(3), boolean(nchw)], [o], rng, what=f"{kind} {nchw}")
    x, o = tensor(kind, (1, 1, 1, 4))
    check_op(accelerator, OP.DEPTH_TO_SPACE, [x, i32(2)], [o], rng, what=kind)


@pytest.mark.parametrize("kind", IMAGE_TYPES)
def test_batch_space(accelerator, kind):
    rng = np.random.default_rng(20)
    for nchw in (False, True):
        x, o = tensor(kind, (6, 2, 3, 2) if nchw else (6, 3, 2, 2))
        check_op(accelerator, OP.BATCH_TO_SPACE_ND, [x, vec([2, 3]), boolean(nchw)], [o], rng,
                 what=f"{kind} {nchw}")
        x, o = tensor(kind, (2, 3, 5, 2) if nchw else (2, 5, 2, 3))
        # padded to 6 × 4: blocks (3, 2), zero point padding for quantized types
        check_op(accelerator, OP.SPACE_TO_BATCH_ND, [x, vec([3, 2]), vec([[1, 0], [0, 2]]), boolean(nchw)], [o],
                 rng, what=f"{kind} {nchw}")
    x, o = tensor(kind, (1, 4, 4, 1))
    check_op(accelerator, OP.SPACE_TO_BATCH_ND, [x, vec([2, 2]), vec([[0, 0], [0, 0]])], [o], rng, what=kind)


@pytest.mark.parametrize("kind, value", [("f32", Scalar(OT.FLOAT32, -2.5)), ("f16", Scalar(OT.FLOAT16, 0.1)),
                                         ("i32", Scalar(OT.INT32, -123456789))])
def test_fill(accelerator, kind, value):
    _x, o = tensor(kind, ())
    o.shape = (0, 0, 0)
    check_op(accelerator, OP.FILL, [In(I32T, (3,)), value], [o], data=[np.array([2, 3, 5], np.int32)], what=kind)


@pytest.mark.parametrize("kind", ["f32", "f16", "q8a", "q8as", "i32"])
def test_rank(accelerator, kind):
    x, _o = tensor(kind, (2, 1, 3))
    check_op(accelerator, OP.RANK, [x], [Out(OT.INT32)], np.random.default_rng(21), what=kind)


def test_rank_feeds_fill(accelerator):
    # rank.mod.py's internal_output: FILL reads a scalar RANK computed inside the model
    b = gpu_driver.ModelBuilder()
    x = b.add_input(F32, [2, 3])
    dims = b.add_input(I32T, [3])
    r = b.add_operand(OT.INT32)
    out = b.add_operand(I32T, [2, 3, 4])
    b.add_operation(OP.RANK, [x], [r])
    b.add_operation(OP.FILL, [dims, r], [out])
    b.set_outputs([out])
    model = b.finish()
    assert all(accelerator.get_supported_operations(model))
    act, _exp = compare(accelerator, model, [np.zeros((2, 3), np.float32), np.array([2, 3, 4], np.int32)])
    assert (act[0] == 2).all()
