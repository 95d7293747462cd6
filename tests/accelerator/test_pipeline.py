"""The preparation pipeline on PoCL: fusion, constant folding, memory planning, execution, I/O, timing,
concurrency, cache payloads and shape specialisation.  Values are checked against the reference device."""
import threading

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.accelerator import AcceleratorPreparedModel
from gpu_driver.backends.opencl import OpenCLTuning
from gpu_driver.cache.format import decode_plan, encode_plan
from gpu_driver.compiler.artifact import CompiledModel
from gpu_driver.compiler.pipeline import build_plan, lower, prepare_graph
from gpu_driver.compiler.planner import Interval, plan_arena
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.hal.types import NO_TIMING, ErrorStatus, MeasureTiming

from .helpers import add_model, chain_model, opencl_device, reference_outputs


def test_add_relu_mul_against_hand_values():
    dev = opencl_device()
    shape = (2, 3)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, shape)
    y = b.add_input(T.TENSOR_FLOAT32, shape)
    none = b.add_scalar(T.INT32, 0)
    t = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.ADD, [x, y, none], [t])
    r = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.RELU, [t], [r])
    c = b.add_constant(T.TENSOR_FLOAT32, shape, np.full(shape, 2.0, np.float32))
    o = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.MUL, [r, c, none], [o])
    b.set_outputs([o])
    model = b.finish()
    pm = dev.prepare_model(model)
    a = np.array([[1, -2, 3], [0.5, -0.25, 4]], np.float32)
    bb = np.array([[1, 1, -5], [0.5, 0.0, 1]], np.float32)
    (out,) = pm.execute([a, bb])
    np.testing.assert_array_equal(out, np.array([[4, 0, 0], [2, 0, 10]], np.float32))
    assert pm.memory_plan["kernels"] == 1  # ADD (with the RELU fused) and MUL as one elementwise chain
    unchained = lower(prepare_graph(model, fuse_chains=False))
    assert len(unchained.kernels) == 2  # the RELU joins ADD's clamp, keeping its NaN rule (ACT_NAN_LOW)


def test_fused_relu_is_reported_supported():
    dev = opencl_device()
    model = chain_model(3)
    assert dev.get_supported_operations(model) == [True] * 6


def test_fifty_layer_chain_reuses_two_activation_buffers():
    dev = opencl_device()
    shape = (1, 32, 32, 8)
    model = chain_model(50, shape)
    pm = dev.prepare_model(model)
    act_bytes = int(np.prod(shape)) * 4
    assert pm.memory_plan["kernels"] == 1  # the whole ADD+RELU chain is one fused elementwise kernel
    # the planner on the unchained lowering: 50 kernels (each ADD with its RELU fused), two activation buffers
    graph = prepare_graph(model, fuse_chains=False)
    plan, _ = build_plan(graph, lower(graph), dev.backend.tuning)
    assert len(plan.kernels) == 50
    assert plan.arena_bytes <= 2 * act_bytes
    assert plan.naive_arena_bytes >= 49 * act_bytes
    x = np.random.default_rng(3).uniform(-1, 1, shape).astype(np.float32)
    (out,) = pm.execute([x])
    (ref,) = reference_outputs(model, [x])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_planner_reuses_non_overlapping_lifetimes():
    ivs = [Interval("a", 1000, 0, 1), Interval("b", 1000, 1, 2), Interval("c", 1000, 2, 3), Interval("d", 10, 0, 3)]
    plan = plan_arena(ivs)
    assert all(off % 256 == 0 for off in plan.offsets.values())
    assert plan.offsets["a"] == plan.offsets["c"]
    # live-together tensors never overlap
    def rng(k, n):
        return range(plan.offsets[k], plan.offsets[k] + n)
    assert not set(rng("a", 1000)) & set(rng("b", 1000))
    assert not set(rng("d", 10)) & set(rng("b", 1000))
    assert plan.peak_bytes == 1024 + 1024 + 256


def test_constant_folding():
    dev = opencl_device()
    shape = (4, 4)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, shape)
    none = b.add_scalar(T.INT32, 0)
    c1 = b.add_constant(T.TENSOR_FLOAT32, shape, np.full(shape, 1.5, np.float32))
    c2 = b.add_constant(T.TENSOR_FLOAT32, shape, np.full(shape, 2.0, np.float32))
    c = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.MUL, [c1, c2, none], [c])           # all-constant: folded to 3.0
    o = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.ADD, [x, c, none], [o])
    b.set_outputs([o])
    model = b.finish()
    graph = prepare_graph(model)
    assert [n.type for n in graph.nodes] == [O.ADD]
    pm = dev.prepare_model(model)
    assert pm.memory_plan["kernels"] == 1
    x_val = np.arange(16, dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(pm.execute([x_val])[0], x_val + 3.0)


def test_output_insufficient_size():
    dev = opencl_device()
    shape = (2, 3, 4)
    pm = dev.prepare_model(add_model(shape, output_dims=[0, 0, 0]))  # output shape left to the driver
    n = int(np.prod(shape)) * 4
    pool_in = gd.SharedMemory(2 * n)
    pool_in.write(0, np.ones(shape, np.float32).tobytes())
    pool_in.write(n, np.ones(shape, np.float32).tobytes())
    pool_out = gd.SharedMemory(n)
    inputs = [RequestArgument(DataLocation(0, 0, n), []), RequestArgument(DataLocation(0, n, n), [])]
    small = Request(inputs, [RequestArgument(DataLocation(1, 0, n - 4), [])], [pool_in, pool_out])
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(small)
    assert err.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert err.value.output_shapes[0].dimensions == list(shape)
    assert not err.value.output_shapes[0].is_sufficient
    ok = Request(inputs, [RequestArgument(DataLocation(1, 0, n), [])], [pool_in, pool_out])
    shapes, timing = pm.execute_synchronously(ok)
    assert shapes[0].dimensions == list(shape) and shapes[0].is_sufficient
    assert timing == NO_TIMING
    np.testing.assert_array_equal(np.frombuffer(pool_out.read(0, n), np.float32), np.full(24, 2.0, np.float32))


def test_timing_fields():
    dev = opencl_device()
    pm = dev.prepare_model(chain_model(4))
    x = np.ones((1, 32, 32, 8), np.float32)
    _, timing = pm.execute([x], measure_timing=MeasureTiming.YES, return_timing=True)
    assert timing.time_on_device != NO_TIMING.time_on_device
    assert timing.time_in_driver != NO_TIMING.time_in_driver
    assert 0 <= timing.time_on_device <= timing.time_in_driver
    _, timing = pm.execute([x], measure_timing=MeasureTiming.NO, return_timing=True)
    assert timing == NO_TIMING


def test_transfer_counters():
    dev = opencl_device()
    shape = (2, 3, 4)
    pm = dev.prepare_model(add_model(shape))
    before = pm.transfer_counters
    pm.execute([np.ones(shape, np.float32), np.ones(shape, np.float32)])
    after = pm.transfer_counters
    assert after["h2d_count"] - before["h2d_count"] >= 2
    assert after["h2d_bytes"] - before["h2d_bytes"] >= 2 * 96
    assert after["d2h_count"] - before["d2h_count"] >= 1
    assert after["d2h_bytes"] - before["d2h_bytes"] >= 96


def test_concurrent_executions_on_one_prepared_model():
    dev = opencl_device()
    model = chain_model(6, shape=(1, 16, 16, 4))
    pm = dev.prepare_model(model)
    ref = gd.get_device("reference").prepare_model(model)
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-1, 1, (1, 16, 16, 4)).astype(np.float32) for _ in range(6)]
    expected = [ref.execute([x])[0] for x in xs]
    errors = []

    def worker(k):
        try:
            for j in range(15):
                i = (k + j) % len(xs)
                np.testing.assert_allclose(pm.execute([xs[i]])[0], expected[i], rtol=1e-5, atol=1e-5)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_several_prepared_models_per_device():
    dev = opencl_device()
    a = dev.prepare_model(add_model((3,)))
    b = dev.prepare_model(add_model((5,), activation=1))
    np.testing.assert_array_equal(a.execute([np.ones(3, np.float32), np.ones(3, np.float32)])[0], np.full(3, 2.0))
    np.testing.assert_array_equal(b.execute([np.full(5, -3, np.float32), np.ones(5, np.float32)])[0], np.zeros(5))


def test_cache_payload_round_trip():
    dev = opencl_device()
    model = chain_model(5, shape=(1, 8, 8, 4))
    pm = dev.prepare_model(model)
    compiled = pm.cache_payload()
    plan2 = decode_plan(encode_plan(compiled.plan))
    assert plan2 == compiled.plan
    counters = dev.backend.allocator.counters.snapshot()
    again = dev.load_prepared(CompiledModel(compiled.binary, plan2, compiled.constants), model)
    assert again.memory_plan == pm.memory_plan
    x = np.random.default_rng(1).uniform(-1, 1, (1, 8, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(again.execute([x])[0], pm.execute([x])[0])
    assert dev.backend.allocator.counters.snapshot()["h2d_count"] > counters["h2d_count"]


def test_dynamic_shapes_specialise_per_signature():
    dev = opencl_device()
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [0, 4])
    c = b.add_constant(T.TENSOR_FLOAT32, [1, 4], np.arange(4, dtype=np.float32))
    none = b.add_scalar(T.INT32, 0)
    o = b.add_operand(T.TENSOR_FLOAT32, [0, 4])
    b.add_operation(O.ADD, [x, c, none], [o])
    b.set_outputs([o])
    model = b.finish()
    pm = AcceleratorPreparedModel(dev, model)  # the pipeline path, whatever the ADD lowering claims
    assert pm.memory_plan["specialized"] is False
    for rows in (2, 5, 2):
        v = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        np.testing.assert_array_equal(pm.execute([v])[0], v + np.arange(4, dtype=np.float32))
    assert len(pm._specs) == 2


def test_plan_round_trips_through_the_cache_encoding():
    model = chain_model(3, shape=(2, 2))
    graph = prepare_graph(model)
    lowered = lower(graph)
    plan, constants = build_plan(graph, lowered, OpenCLTuning())
    assert decode_plan(encode_plan(plan)) == plan
    assert len(constants) == 3
    assert plan.storage[plan.inputs[0].key].region == "input"
    assert plan.input_shapes == [(2, 2)]


def test_launch_tuning_maps_the_shape_of_work_to_local_sizes():
    from gpu_driver.backends.cuda import CudaTuning
    from gpu_driver.compiler.ir import Work

    ocl, cuda = OpenCLTuning(), CudaTuning(132)
    assert ocl.local_size(Work.ELEMENTS, (1000,)) == (64,) and ocl.local_size(Work.ELEMENTS, (10,)) is None
    assert ocl.local_size(Work.ROWS, (40,)) == (32,) and ocl.local_size(Work.ROWS, (0,)) is None
    # register tiles: up to 16 channel blocks x 4 pixel blocks, fewer pixel blocks while that leaves
    # under 16 groups: (3, 9, 8) in 3x4 groups is 1*3*8 = 24 groups; (3, 9, 5) would be 1*3*5 = 15, so
    # 3x2 (25); (12, 28, 1) 7 -> 14 -> 28 groups with 4, 2, 1; (42, 7, 1) 3*2 = 6 -> 3*4 -> 3*7 = 21
    assert ocl.local_size(Work.REGISTER_TILES, (3, 9, 8)) == (3, 4, 1)
    assert ocl.local_size(Work.REGISTER_TILES, (3, 9, 5)) == (3, 2, 1)
    assert ocl.local_size(Work.REGISTER_TILES, (12, 28, 1)) == (12, 1, 1)
    assert ocl.local_size(Work.REGISTER_TILES, (42, 7, 1)) == (16, 1, 1)
    # chunks of a reduction: one per work group where the device says so (a CPU), else the default
    assert ocl.local_size(Work.CHUNKS, (1, 16, 1)) is None
    ocl.chunks_alone = True
    assert ocl.local_size(Work.CHUNKS, (1, 16, 1)) == (1, 1, 1) and ocl.local_size(Work.CHUNKS, (4,)) == (1,)
    assert ocl.local_size(Work.CHANNEL_LANES, (96, 2, 2)) == (48, 1, 1)
    assert ocl.local_size(Work.CHANNEL_LANES, (12, 1, 1)) is None and ocl.local_size(Work.GRID, (5, 5)) is None
    # CUDA resolves every launch to a block: the grid default where the work states no preference
    assert cuda.local_size(Work.ELEMENTS, (10,)) == (10,) and cuda.local_size(Work.GRID, (100, 100)) == (32, 8)
    assert cuda.local_size(Work.GRID, (100, 2, 9)) == (16, 2, 4) and cuda.local_size(Work.GRID, (999,)) == (256,)
    # work groups sharing local memory get the one size their kernels are written for, on every backend
    assert ocl.local_size(Work.GROUP_TILES, (32, 16, 1)) == cuda.local_size(Work.GROUP_TILES, (64, 64, 1)) == (16, 16, 1)
    assert cuda.group_gemm and cuda.compute_units == 132 and not ocl.group_gemm


def test_kernels_declare_the_local_size_of_their_launches(monkeypatch):
    """A kernel whose every launch has one local size is declared with it (reqd_work_group_size on
    OpenCL); one the runtime sizes is not; the model still computes the reference's values."""
    dev = opencl_device()
    monkeypatch.setattr(dev, "private_cache", False, raising=False)  # compiled here: the source is kept
    model = chain_model(3, shape=(1, 32, 32, 8))  # 8192 elements: 128 work items in runs of 64
    pm = dev.prepare_model(model)
    plan = pm.cache_payload().plan
    fixed = {k.name: k.local_size for k in plan.kernels if k.local_size is not None}
    assert fixed, "the chain's kernels have stated local sizes"
    for name, local in fixed.items():
        x, y, z = (*local, 1, 1)[:3]
        assert f"#define KERNEL KERNEL_FIXED_LOCAL({x}, {y}, {z})" in pm.source
    x = np.random.default_rng(3).uniform(-1, 1, (1, 32, 32, 8)).astype(np.float32)
    np.testing.assert_allclose(pm.execute([x])[0], reference_outputs(model, [x])[0], rtol=1e-5, atol=1e-5)
