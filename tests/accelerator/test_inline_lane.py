"""PoCL's inline lane: small models run on PoCL's basic device in the calling thread, large ones on
the threaded device, both in one context; the choice (compiler.cost.estimated_work against
OpenCLBackend.inline_work_limit) is stored in the compiled model and in the cache identity; fenced
work on the inline lane stays asynchronous (its own in-order worker) and chains with the other lane."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.backends import pocl_worker_wait
from gpu_driver.cache.format import decode_plan, encode_plan
from gpu_driver.compiler.artifact import CompiledModel
from gpu_driver.compiler.cost import estimated_work
from gpu_driver.graph import build_graph
from gpu_driver.hal.types import OperandType as T, OperationType as O
from gpu_driver.runtime.sync_fence import FenceState

from ..execution.conftest import AddJob, add_model, check_chain_of_three_is_submitted_faster_than_one_runs, slow_model

HUGE = str(10 ** 15)


@pytest.fixture
def pocl():
    devices = [d for d in gd.get_devices() if getattr(getattr(d, "backend", None), "inline", None) is not None]
    if not devices:
        pytest.skip("no OpenCL device with an inline lane (PoCL with its pthread and basic devices)")
    return devices[0]


def _fully_connected():
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, (2, 4))
    w = b.add_constant(T.TENSOR_FLOAT32, (3, 4), np.arange(12, dtype=np.float32).reshape(3, 4))
    bias = b.add_constant(T.TENSOR_FLOAT32, (3,), np.zeros(3, np.float32))
    out = b.add_operand(T.TENSOR_FLOAT32, (2, 3))
    b.add_operation(O.FULLY_CONNECTED, [x, w, bias, b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([out])
    return b.finish()


def _depthwise():
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, (1, 4, 4, 2))
    w = b.add_constant(T.TENSOR_FLOAT32, (1, 3, 3, 2), np.ones((1, 3, 3, 2), np.float32))
    bias = b.add_constant(T.TENSOR_FLOAT32, (2,), np.zeros(2, np.float32))
    out = b.add_operand(T.TENSOR_FLOAT32, (1, 4, 4, 2))
    b.add_operation(O.DEPTHWISE_CONV_2D, [x, w, bias, b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, 1),
                                          b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, 1),
                                          b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([out])
    return b.finish()


def test_estimated_work_counts_elements_and_multiply_adds():
    work = lambda model: estimated_work(build_graph(model, model.main))
    # ADD: x, y, the activation scalar, the output
    assert work(add_model((4, 8))) == 32 + 32 + 1 + 32
    # FULLY_CONNECTED: 8 + 12 + 3 + 1 + 6 elements, 6 outputs × 4 multiply-adds
    assert work(_fully_connected()) == 30 + 6 * 4
    # DEPTHWISE 3×3: 32 + 18 + 2 + 5 scalars + 32 elements, 32 outputs × 9 multiply-adds
    assert work(_depthwise()) == 89 + 32 * 9


def test_small_models_run_inline_large_ones_threaded(pocl, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "1000")
    small = pocl.prepare_model(add_model())
    large = pocl.prepare_model(slow_model(layers=1))
    assert small.cache_payload().plan.lane == "inline" and small.lane is pocl.backend.inline
    assert large.cache_payload().plan.lane == "" and large.lane is pocl.backend
    job = AddJob(seed=5)
    small.execute_synchronously(job.request)
    np.testing.assert_array_equal(job.result, job.x + job.y)


@pytest.mark.parametrize("limit", ["0", HUGE], ids=["threaded", "inline"])
def test_each_lane_computes_the_model(pocl, monkeypatch, limit):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", limit)
    pm = pocl.prepare_model(_fully_connected())
    assert pm.cache_payload().plan.lane == ("" if limit == "0" else "inline")
    x = np.array([[1, 2, 3, 4], [-1, 0, 1, 0]], np.float32)
    # hand-worked: row r of w is [4r, 4r+1, 4r+2, 4r+3]
    expected = np.array([[20, 60, 100], [2, 2, 2]], np.float32)
    np.testing.assert_array_equal(pm.execute([x])[0], expected)


def test_the_lane_is_kept_by_the_cache(pocl, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", HUGE)
    model = _fully_connected()
    compiled = pocl.prepare_model(model).cache_payload()
    plan = decode_plan(encode_plan(compiled.plan))
    assert plan.lane == "inline"
    again = pocl.load_prepared(CompiledModel(compiled.binary, plan, compiled.constants), model)
    assert again.lane is pocl.backend.inline
    np.testing.assert_array_equal(again.execute([np.ones((2, 4), np.float32)])[0], [[6, 22, 38], [6, 22, 38]])


def test_the_limit_is_part_of_the_cache_identity(pocl, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "0")
    threaded = pocl.backend.runtime_version
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "1000")
    assert pocl.backend.runtime_version != threaded and "inline lane" in threaded


def test_inline_fenced_chain_is_submitted_faster_than_one_runs(pocl, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", HUGE)
    pm = pocl.prepare_model(slow_model(layers=8))
    assert pm.lane.runs_in_caller
    check_chain_of_three_is_submitted_faster_than_one_runs(pm)


@pytest.mark.parametrize("order", ["inline_then_threaded", "threaded_then_inline"])
def test_fences_chain_across_lanes(pocl, monkeypatch, order):
    limits = ["0", HUGE] if order == "threaded_then_inline" else [HUGE, "0"]
    models = []
    for limit in limits:
        monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", limit)
        models.append(pocl.prepare_model(add_model()))
    assert {m.lane.runs_in_caller for m in models} == {True, False}
    a, b = AddJob(seed=1), AddJob(seed=2)
    b.request.pools[0] = a.pool_out  # the second reads x + y as both its inputs
    b.request.inputs[1].location.offset = 0
    for _ in range(5):
        a.set_inputs(a.x + 1, a.y)
        f1, _ = models[0].execute_fenced(a.request)
        f2, _ = models[1].execute_fenced(b.request, [f1])
        assert f2.wait(30) is FenceState.SIGNALED
        np.testing.assert_array_equal(b.result, 2 * (a.x + a.y))


def test_inline_model_from_many_threads(pocl, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", HUGE)
    pm = pocl.prepare_model(add_model())

    def work(seed):
        for k in range(50):
            job = AddJob(seed=seed * 100 + k)
            pm.execute_synchronously(job.request)
            np.testing.assert_array_equal(job.result, job.x + job.y)

    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(work, i) for i in range(4)]:
            done.result()


def test_the_inline_device_is_a_lane_not_a_device(pocl):
    names = [d.backend.device_name for d in gd.get_devices() if hasattr(d, "backend")]
    assert pocl.backend.inline.device_name not in names
    assert pocl.backend.inline.runs_in_caller and not pocl.backend.runs_in_caller


def test_each_kernel_launch_adds_to_the_inline_allowance(pocl, monkeypatch):
    """Without GPU_DRIVER_INLINE_WORK the allowance grows with the model's kernel count (on the
    threaded device every launch waits for the workers); with it, the variable is the whole limit."""
    monkeypatch.delenv("GPU_DRIVER_INLINE_WORK", raising=False)
    backend = pocl.backend
    limit, per_kernel = backend.inline_work_limit, backend.inline_work_per_kernel
    # a launch hands on sooner while PoCL's idle workers spin (backends/pocl_worker_wait.py)
    spinning = pocl_worker_wait.statistics() is not None
    assert limit > 0 and per_kernel == (backend.INLINE_WORK_PER_KERNEL_SPINNING if spinning
                                        else backend.INLINE_WORK_PER_KERNEL) > 0
    assert backend.lane_for(limit) == "inline" and backend.lane_for(limit + 1) == ""
    assert backend.lane_for(limit + 10 * per_kernel, kernels=10) == "inline"
    assert backend.lane_for(limit + 10 * per_kernel + 1, kernels=10) == ""
    assert f"+ {per_kernel} per kernel" in backend.runtime_version
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "1000")
    assert backend.inline_work_per_kernel == 0
    assert backend.lane_for(1000, kernels=50) == "inline" and backend.lane_for(1001, kernels=50) == ""
    monkeypatch.setenv("GPU_DRIVER_INLINE_WORK", "0")
    assert backend.lane_for(0, kernels=50) == ""
