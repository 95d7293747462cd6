"""CONCATENATION and PACK on each accelerator device vs the reference (exact: copies, and quantized
inputs requantised into the output's params)."""
import numpy as np
import pytest

import gpu_driver as gd

from ..helpers import opencl_device
from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, In, Out, i32

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED


def axis_shapes(axis, sizes=(2, 3, 1)):
    shapes = []
    for k in sizes:
        s = [2, 3, 4, 5]
        s[axis] = k
        shapes.append(tuple(s))
    return shapes


@pytest.mark.parametrize("axis", [0, 1, 3])
def test_concatenation(accelerator, axis):
    rng = np.random.default_rng(15)
    shapes = axis_shapes(axis)
    check_op(accelerator, OP.CONCATENATION, [*[In(F32, s) for s in shapes], i32(axis)], [Out(F32)], rng)
    check_op(accelerator, OP.CONCATENATION, [*[In(Q8A, s, 0.1, 10) for s in shapes], i32(axis)], [Out(Q8A, 0.1, 10)],
             rng)
    ins = [In(Q8A, shapes[0], 0.1, 10), In(Q8A, shapes[1], 0.25, 128), In(Q8A, shapes[2], 0.05, 0)]
    check_op(accelerator, OP.CONCATENATION, [*ins, i32(axis)], [Out(Q8A, 0.2, 60)], rng)


@pytest.mark.parametrize("ty", [F16, Q8AS])
def test_concatenation_types(accelerator, ty):
    rng = np.random.default_rng(16)
    shapes = axis_shapes(2)
    q = (0.5, -3) if ty == Q8AS else ()
    check_op(accelerator, OP.CONCATENATION, [*[In(ty, s, *q) for s in shapes], i32(2)], [Out(ty, *q)], rng,
             what=ty.name)
    if ty == Q8AS:  # requantised inputs, clamping at both ends of the output range
        ins = [In(ty, shapes[0], 0.5, -3), In(ty, shapes[1], 0.07, 100), In(ty, shapes[2], 1.5, -128)]
        check_op(accelerator, OP.CONCATENATION, [*ins, i32(2)], [Out(ty, 0.4, 5)], rng, what="Q8AS requantised")


def test_concatenation_float16_special_values(accelerator):
    """float16 is copied bit for bit (infinities, NaN, signed zero)."""
    a = np.array([np.inf, -np.inf, np.nan, -0.0], np.float16)
    b = np.array([65504, 6e-8, 1.0], np.float16)
    check_op(accelerator, OP.CONCATENATION, [In(F16, (4,)), In(F16, (3,)), i32(0)], [Out(F16)], data=[a, b])


def test_concatenation_rank1(accelerator):
    check_op(accelerator, OP.CONCATENATION, [In(F32, (3,)), In(F32, (5,)), i32(0)], [Out(F32)])


@pytest.mark.parametrize("ty,q,axis", [(F32, (), 0), (F32, (), 1), (F16, (), 3), (I32T, (), 2), (Q8A, (0.5, 4), 1),
                                        (Q8AS, (0.25, -9), 3)])
def test_pack(accelerator, ty, q, axis):
    rng = np.random.default_rng(17)
    check_op(accelerator, OP.PACK, [i32(axis), *[In(ty, (2, 3, 4), *q) for _ in range(3)]], [Out(ty, *q)], rng,
             what=f"{ty.name} axis {axis}")


def test_pack_single_input(accelerator):
    check_op(accelerator, OP.PACK, [i32(1), In(F32, (5,))], [Out(F32)])


def _concatenation_model(shapes, axis, types):
    """CONCATENATION of inputs ``shapes`` (each with its (type, scale, zero point)) along ``axis``,
    the output typed as the first input."""
    b = gd.ModelBuilder()
    ins = [b.add_input(t, list(s), *q) for s, (t, *q) in zip(shapes, types)]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    out = b.add_operand(types[0][0], out_shape, *types[0][1:])
    b.add_operation(OP.CONCATENATION, [*ins, b.add_scalar(OT.INT32, axis)], [out])
    b.set_outputs([out])
    return b.finish()


def test_forty_inputs_take_two_launches(accelerator):
    """40 float inputs of 1..100 columns (rows longer than one work item's block) along axis 1 of
    3 rows: two launches (32 inputs, then 8), the values numpy.concatenate's."""
    rng = np.random.default_rng(41)
    shapes = [(3, int(n)) for n in rng.integers(1, 101, 40)]
    data = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    pm = accelerator.prepare_model(_concatenation_model(shapes, 1, [(F32,)] * 40))
    np.testing.assert_array_equal(pm.execute(data)[0], np.concatenate(data, axis=1))
    assert pm.memory_plan["kernels"] == 2


def test_requantised_inputs_launch_apart_from_the_copies():
    """Q8A inputs: the two with the output's params copied in one launch, the one with other params
    requantised in its own, q_out = round(0.5 * (q - 10) / 0.25) + 20 by hand for that one."""
    device = opencl_device()
    shapes = [(2, 1, 3), (2, 2, 3), (2, 1, 3)]
    types = [(Q8A, 0.25, 20), (Q8A, 0.5, 10), (Q8A, 0.25, 20)]
    data = [np.arange(6, dtype=np.uint8).reshape(shapes[0]), np.full(shapes[1], 14, np.uint8),
            np.full(shapes[2], 7, np.uint8)]
    pm = device.prepare_model(_concatenation_model(shapes, 1, types))
    expected = np.concatenate([data[0], np.full(shapes[1], 28, np.uint8), data[2]], axis=1)
    np.testing.assert_array_equal(pm.execute(data)[0], expected)
    assert pm.memory_plan["kernels"] == 2
