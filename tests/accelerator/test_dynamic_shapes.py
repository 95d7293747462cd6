"""Models with unknown input dimensions on the OpenCL device: supported when every operation is
supported for concrete shapes (decided on a representative specialisation), specialised per input-shape
signature at execution (LRU-bounded cache), output shapes reported per execution, vs the reference."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.accelerator import AcceleratorPreparedModel
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus

from .helpers import opencl_device, reference_outputs
from .ops.harness import F32_ATOL, F32_RTOL

F32 = T.TENSOR_FLOAT32


def _conv_fc_model(in_dims, rng, padding=1):
    """conv 3×3 (3→4 channels, stride 1, implicit padding SAME=1/VALID=2, RELU) → FC (→ 5 units).

    With an unknown batch the FC's input [N, H, W, 4] is flattened to [N, H·W·4]."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, in_dims)
    w = b.add_constant(F32, [4, 3, 3, 3], rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32))
    bias = b.add_constant(F32, [4], rng.uniform(-1, 1, 4).astype(np.float32))
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    h = b.add_operand(F32, [in_dims[0], 0, 0, 4])
    b.add_operation(O.CONV_2D, [x, w, bias, i32(padding), i32(1), i32(1), i32(1)], [h])
    out_h = in_dims[1] - (2 if padding == 2 else 0)
    units_in = out_h * (in_dims[2] - (2 if padding == 2 else 0)) * 4
    fw = b.add_constant(F32, [5, units_in], rng.uniform(-0.2, 0.2, (5, units_in)).astype(np.float32))
    fb = b.add_constant(F32, [5], rng.uniform(-1, 1, 5).astype(np.float32))
    y = b.add_operand(F32, [0, 5])
    b.add_operation(O.FULLY_CONNECTED, [h, fw, fb, i32(0)], [y])
    b.set_outputs([y])
    return b.finish()


def _pool_model(in_dims):
    """conv-free spatial model: AVERAGE_POOL 2×2 stride 2 (VALID) → LOGISTIC; unknown H and W."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, in_dims)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    p = b.add_operand(F32, [in_dims[0], 0, 0, in_dims[3]])
    b.add_operation(O.AVERAGE_POOL_2D, [x, i32(2), i32(2), i32(2), i32(2), i32(2), i32(0)], [p])
    y = b.add_operand(F32, [in_dims[0], 0, 0, in_dims[3]])
    b.add_operation(O.LOGISTIC, [p], [y])
    b.set_outputs([y])
    return b.finish()


def _close(actual, expected):
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, atol=F32_ATOL, rtol=F32_RTOL)


def test_unknown_batch_conv_fc_two_batch_sizes():
    dev = opencl_device()
    rng = np.random.default_rng(5)
    model = _conv_fc_model([0, 6, 6, 3], rng, padding=2)
    assert dev.get_supported_operations(model) == [True, True]
    pm = dev.prepare_model(model)
    assert isinstance(pm, AcceleratorPreparedModel) and pm.memory_plan["specialized"] is False
    for batch in (1, 3, 1):
        x = rng.uniform(-1, 1, (batch, 6, 6, 3)).astype(np.float32)
        (out,) = pm.execute([x])
        assert out.shape == (batch, 5)
        _close(out, reference_outputs(model, [x])[0])
    assert len(pm._specs) == 2  # one specialisation per signature, the repeat is cached


def test_unknown_spatial_dims():
    dev = opencl_device()
    rng = np.random.default_rng(6)
    model = _pool_model([2, 0, 0, 3])
    assert dev.get_supported_operations(model) == [True, True]
    pm = dev.prepare_model(model)
    for h, w in ((4, 6), (7, 3)):
        x = rng.uniform(-3, 3, (2, h, w, 3)).astype(np.float32)
        (out,) = pm.execute([x])
        assert out.shape == (2, h // 2, w // 2, 3)
        _close(out, reference_outputs(model, [x])[0])


def test_output_insufficient_then_retry():
    dev = opencl_device()
    rng = np.random.default_rng(7)
    model = _conv_fc_model([0, 6, 6, 3], rng, padding=2)
    pm = dev.prepare_model(model)
    x = rng.uniform(-1, 1, (4, 6, 6, 3)).astype(np.float32)
    pool_in = gd.SharedMemory.from_bytes(x)
    inputs = [RequestArgument(DataLocation(0, 0, x.nbytes), list(x.shape))]
    need = 4 * 5 * 4
    pool_out = gd.SharedMemory(need)
    small = Request(inputs, [RequestArgument(DataLocation(1, 0, need - 4), [])], [pool_in, pool_out])
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(small)
    assert err.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert err.value.output_shapes[0].dimensions == [4, 5] and not err.value.output_shapes[0].is_sufficient
    ok = Request(inputs, [RequestArgument(DataLocation(1, 0, need), [])], [pool_in, pool_out])
    shapes, _ = pm.execute_synchronously(ok)
    assert shapes[0].dimensions == [4, 5] and shapes[0].is_sufficient
    out = np.frombuffer(pool_out.read(0, need), np.float32).reshape(4, 5)
    _close(out, reference_outputs(model, [x])[0])
    # the numpy convenience starts from a small guess and retries with the reported size
    _close(pm.execute([x])[0], reference_outputs(model, [x])[0])


def test_specialisations_are_lru_bounded():
    dev = opencl_device()
    b = gd.ModelBuilder()
    x = b.add_input(F32, [0, 2])
    o = b.add_operand(F32, [0, 2])
    b.add_operation(O.RELU, [x], [o])
    b.set_outputs([o])
    pm = dev.prepare_model(b.finish())
    pm.MAX_SPECIALIZATIONS = 3
    for rows in (1, 2, 3, 1, 4):
        v = np.linspace(-1, 1, rows * 2, dtype=np.float32).reshape(rows, 2)
        np.testing.assert_array_equal(pm.execute([v])[0], np.maximum(v, 0))
    assert list(pm._specs) == [((3, 2),), ((1, 2),), ((4, 2),)]  # (2, 2) was least recently used


def test_unsupported_specialisation_fails_that_execution():
    """A specialisation whose operations the kernels cannot run (pipeline.check_supported; reachable
    through size-dependent ``supports`` conditions — forced here by giving the kernel pipeline an IF,
    which it does not lower: the device runs IF through accelerator.control_flow) fails its execution with
    GENERAL_FAILURE naming the operation; the prepared model stays usable."""
    dev = opencl_device()
    branches = []
    for op in (O.FLOOR, O.RELU):
        sub = gd.ModelBuilder()
        a = sub.add_input(F32, [0, 3])
        r = sub.add_operand(F32, [0, 3])
        sub.add_operation(op, [a], [r]).set_outputs([r])
        branches.append(sub)
    b = gd.ModelBuilder()
    cond, x = b.add_input(T.TENSOR_BOOL8, [1]), b.add_input(F32, [0, 3])
    o = b.add_operand(F32, [0, 3])
    b.add_operation(O.IF, [cond, b.add_subgraph(branches[0]), b.add_subgraph(branches[1]), x], [o])
    b.set_outputs([o])
    model = b.finish()
    pm = AcceleratorPreparedModel(dev, model)  # the pipeline path, bypassing the support check
    for _ in range(2):
        with pytest.raises(gd.DriverError) as err:
            pm.execute([np.ones(1, np.bool_), np.zeros((2, 3), np.float32)])
        assert err.value.status == ErrorStatus.GENERAL_FAILURE
        assert "IF" in err.value.message and "[2, 3]" in err.value.message


def test_memory_domain_buffers_take_their_shape_from_use():
    """A device buffer allocated for a dynamic-shape model: each execution's output shape becomes the
    buffer's shape, and the next execution reads it (as an input, no dims given) with that shape."""
    from gpu_driver.hal.model import BufferDesc, BufferRole

    dev = opencl_device()
    b = gd.ModelBuilder()
    x, y = b.add_input(F32, [0, 3]), b.add_input(F32, [0, 3])
    o = b.add_operand(F32, [0, 3])
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [o])
    b.set_outputs([o])
    pm = dev.prepare_model(b.finish())
    buf, _ = dev.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    out_buf, _ = dev.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0)])
    tok = lambda pool: RequestArgument(DataLocation(pool, 0, 0), [])  # noqa: E731
    for rows in (2, 4, 1):
        v = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) - 1.5
        vm = gd.SharedMemory.from_bytes(v)
        arg = RequestArgument(DataLocation(0, 0, v.nbytes), [rows, 3])
        shapes, _ = pm.execute_synchronously(Request([arg, arg], [tok(1)], [vm, buf.token]))
        assert shapes[0].dimensions == [rows, 3] and buf.dimensions == (rows, 3)
        shapes, _ = pm.execute_synchronously(Request([tok(1), arg], [tok(2)], [vm, buf.token, out_buf.token]))
        assert shapes[0].dimensions == [rows, 3] and out_buf.dimensions == (rows, 3)
        res = gd.SharedMemory(v.nbytes)
        out_buf.copy_to(res)
        np.testing.assert_array_equal(res.array(np.float32).reshape(rows, 3), 3 * v)
