"""execute_fenced: truly asynchronous submission, fences gating and chaining work (across prepared
models), error propagation, time limits, the pollable descriptor, and argument checks."""
import select
import time

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.types import NO_TIMING, ErrorStatus, MeasureTiming
from gpu_driver.runtime.sync_fence import FenceState, SyncFence

from .conftest import AddJob, add_model, check_chain_of_three_is_submitted_faster_than_one_runs, image_request, slow_model


def test_fenced_result_and_timings(device, add_job):
    pm = device.prepare_model(add_model())
    fence, callback = pm.execute_fenced(add_job.request, measure_timing=MeasureTiming.YES)
    assert fence.wait(30) is FenceState.SIGNALED
    np.testing.assert_array_equal(add_job.result, add_job.expected)
    launched, fenced = callback.get_execution_info()
    assert launched.time_in_driver >= fenced.time_in_driver > 0
    _, callback = pm.execute_fenced(add_job.request)
    assert callback.get_execution_info(30) == (NO_TIMING, NO_TIMING)


def test_client_fence_gates_the_work(device, add_job):
    pm = device.prepare_model(add_model())
    gate = SyncFence()
    fence, _ = pm.execute_fenced(add_job.request, [gate])
    time.sleep(0.05)
    assert fence.get_state() is FenceState.ACTIVE
    assert not add_job.result.any()  # nothing written before the gate opens
    gate.signal()
    assert fence.wait(30) is FenceState.SIGNALED
    np.testing.assert_array_equal(add_job.result, add_job.expected)


def test_chain_of_three_is_submitted_faster_than_one_runs(device):
    check_chain_of_three_is_submitted_faster_than_one_runs(device.prepare_model(slow_model()))


def test_chain_across_prepared_models(device):
    # (x + y) feeds the second model's input through the shared pool: the second waits on the first
    first, second = device.prepare_model(add_model()), device.prepare_model(add_model())
    a = AddJob(seed=1)
    b = AddJob(seed=2)
    b.request.pools[0] = a.pool_out  # second model reads x + y as both its inputs
    n = a.x.nbytes
    b.request.inputs[1].location.offset = 0
    b.request.inputs[1].location.length = n
    f1, _ = first.execute_fenced(a.request)
    f2, _ = second.execute_fenced(b.request, [f1])
    assert f2.wait(30) is FenceState.SIGNALED
    np.testing.assert_array_equal(b.result, 2 * (a.x + a.y))


def test_error_fence_propagates(device, add_job):
    pm = device.prepare_model(add_model())
    gate = SyncFence()
    fence, callback = pm.execute_fenced(add_job.request, [gate])
    gate.signal(gd.DriverError(ErrorStatus.GENERAL_FAILURE, "producer failed"))
    assert fence.wait(30) is FenceState.ERROR
    with pytest.raises(gd.DriverError) as err:
        callback.get_execution_info()
    assert err.value.status == ErrorStatus.GENERAL_FAILURE and "producer failed" in err.value.message
    # and it propagates down a chain
    f2, _ = pm.execute_fenced(add_job.request, [fence])
    assert f2.wait(30) is FenceState.ERROR


def test_timeout_after_fence(device, add_job):
    pm = device.prepare_model(add_model())
    gate = SyncFence()
    fence, callback = pm.execute_fenced(add_job.request, [gate], timeout_after_fence=0)
    time.sleep(0.01)
    gate.signal()
    assert fence.wait(30) is FenceState.ERROR
    assert fence.error.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT


def test_fileno_becomes_readable(device, add_job):
    pm = device.prepare_model(add_model())
    gate = SyncFence()
    fence, _ = pm.execute_fenced(add_job.request, [gate])
    fd = fence.fileno()
    assert select.select([fd], [], [], 0.02)[0] == []
    gate.signal()
    assert select.select([fd], [], [], 30)[0] == [fd]
    assert fence.get_state() is FenceState.SIGNALED
    fence.close()


def test_bad_arguments(device, add_job):
    pm = device.prepare_model(add_model())
    for kwargs in ({"wait_for": [object()]}, {"wait_for": 3}, {"timeout_after_fence": -1}):
        with pytest.raises(gd.DriverError) as err:
            pm.execute_fenced(add_job.request, **kwargs)
        assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    dynamic = device.prepare_model(add_model(output_dims=(0, 0)))
    with pytest.raises(gd.DriverError) as err:
        dynamic.execute_fenced(add_job.request)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "fully specified" in err.value.message
    with pytest.raises(gd.DriverError):
        SyncFence.create_signaled().signal()


def test_fence_of_another_device(device, add_job):
    # a fence from a different device is waited for like a client's: the work starts once it signals
    others = [d for d in gd.get_devices() if d.name != device.name]
    if not others:
        pytest.skip("one device only")
    producer = others[0].prepare_model(slow_model(layers=4))
    f1, _ = producer.execute_fenced(image_request())
    f2, _ = device.prepare_model(add_model()).execute_fenced(add_job.request, [f1])
    assert f2.wait(60) is FenceState.SIGNALED and f1.get_state() is FenceState.SIGNALED
    np.testing.assert_array_equal(add_job.result, add_job.expected)


def test_fence_bad_arguments():
    fence = SyncFence()
    for call in (lambda: fence.wait("x"), lambda: fence.wait(-1), lambda: fence.add_done_callback(3),
                 lambda: fence.signal(3), lambda: gd.FencedExecutionCallback(fence).get_execution_info("x")):
        with pytest.raises(gd.DriverError) as err:
            call()
        assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    assert fence.get_state() is FenceState.ACTIVE
