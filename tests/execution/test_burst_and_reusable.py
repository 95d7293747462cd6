"""Bursts (memory slots, cached request bindings) and reusable executions: results, reuse with new
data, and misuse answered with the right DriverError."""
import threading

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.types import ErrorStatus, MeasureTiming
from gpu_driver.runtime.sync_fence import FenceState

from .conftest import AddJob, add_model, image_request, slow_model


def test_burst_runs_and_reuses(device, add_job):
    pm = device.prepare_model(add_model())
    burst = pm.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in add_job.request.pools]
    assert burst.cache_memory(add_job.request.pools[0]) == slots[0]
    for seed in range(3):
        fresh = AddJob(seed=seed + 10)
        add_job.set_inputs(fresh.x, fresh.y)
        shapes, timing = burst.execute_synchronously(add_job.request, slots, MeasureTiming.YES)
        assert shapes[0].dimensions == [4, 8] and timing.time_in_driver > 0
        np.testing.assert_array_equal(add_job.result, fresh.x + fresh.y)


def test_burst_slots(device, add_job):
    pm = device.prepare_model(add_model())
    burst = pm.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in add_job.request.pools]
    for bad in ([slots[0], 99], [slots[0]], ["x", slots[1]], 5):
        with pytest.raises(gd.DriverError) as err:
            burst.execute_synchronously(add_job.request, bad)
        assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    burst.free_memory(slots[1])
    with pytest.raises(gd.DriverError) as err:
        burst.execute_synchronously(add_job.request, slots)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(gd.DriverError):
        burst.free_memory(slots[1])
    with pytest.raises(gd.DriverError):
        burst.cache_memory(b"not a memory")


def _concurrent_second_call(first, second):
    """Start ``first()`` in a thread, call ``second()`` while it runs; the DriverError second raised."""
    started = threading.Event()
    result = {}

    def run():
        started.set()
        result["first"] = first()

    t = threading.Thread(target=run)
    t.start()
    started.wait()
    try:
        for _ in range(200):  # until the first call holds the object
            try:
                second()
            except gd.DriverError as exc:
                return exc
    finally:
        t.join()
    return None


def test_burst_from_two_threads(device):
    pm = device.prepare_model(slow_model())
    burst = pm.configure_execution_burst()
    request = image_request()
    slots = [burst.cache_memory(p) for p in request.pools]
    err = _concurrent_second_call(lambda: burst.execute_synchronously(request, slots),
                                  lambda: burst.execute_synchronously(request, slots))
    assert err is not None and err.status == ErrorStatus.GENERAL_FAILURE and "in flight" in err.message


def test_reusable_execution(device, add_job):
    pm = device.prepare_model(add_model())
    execution = pm.create_reusable_execution(add_job.request, MeasureTiming.YES)
    for seed in range(3):
        fresh = AddJob(seed=seed + 20)
        add_job.set_inputs(fresh.x, fresh.y)
        shapes, timing = execution.compute()
        assert shapes[0].dimensions == [4, 8] and timing.time_in_driver > 0
        np.testing.assert_array_equal(add_job.result, fresh.x + fresh.y)
    fence, callback = execution.compute_fenced()
    assert fence.wait(30) is FenceState.SIGNALED
    assert callback.get_execution_info()[0].time_in_driver > 0


def test_reusable_execution_one_at_a_time(device):
    pm = device.prepare_model(slow_model())
    execution = pm.create_reusable_execution(image_request())
    err = _concurrent_second_call(execution.compute, execution.compute)
    assert err is not None and err.status == ErrorStatus.GENERAL_FAILURE
    fence, _ = execution.compute_fenced()
    with pytest.raises(gd.DriverError):  # still computing until its fence signals
        execution.compute()
    assert fence.wait(60) is FenceState.SIGNALED
    execution.compute()


def test_bad_request_rejected_at_creation(device, add_job):
    pm = device.prepare_model(add_model())
    add_job.request.outputs[0].location.length = 3
    with pytest.raises(gd.DriverError) as err:
        pm.create_reusable_execution(add_job.request)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
