"""execute_asynchronously: futures of (output shapes, timing), errors through the future, many in
flight, deadlines while queued, and priorities ordering a device's queue."""
import threading
import time

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus, MeasureTiming, Priority, boot_time_ns

from .conftest import AddJob, add_model, image_request, slow_model


def test_future_holds_result(device, add_job):
    pm = device.prepare_model(add_model())
    future = pm.execute_asynchronously(add_job.request, MeasureTiming.YES)
    shapes, timing = future.result(timeout=30)
    assert shapes[0].dimensions == [4, 8] and shapes[0].is_sufficient
    assert timing.time_in_driver > 0
    np.testing.assert_array_equal(add_job.result, add_job.expected)


def test_many_in_flight(device):
    pm = device.prepare_model(add_model())
    jobs = [AddJob(seed=i) for i in range(24)]
    futures = [pm.execute_asynchronously(j.request) for j in jobs]
    for j, f in zip(jobs, futures):
        f.result(timeout=60)
        np.testing.assert_array_equal(j.result, j.expected)


def test_bad_request_raises_at_once(device, add_job):
    pm = device.prepare_model(add_model())
    bad = Request(add_job.request.inputs[:1], add_job.request.outputs, add_job.request.pools)
    with pytest.raises(gd.DriverError) as err:
        pm.execute_asynchronously(bad)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_insufficient_output_through_future(device, add_job):
    pm = device.prepare_model(add_model(output_dims=(0, 0)))
    small = Request(add_job.request.inputs, [RequestArgument(DataLocation(1, 0, 8))], add_job.request.pools)
    future = pm.execute_asynchronously(small)
    with pytest.raises(gd.DriverError) as err:
        future.result(timeout=30)
    assert err.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert err.value.output_shapes[0].dimensions == [4, 8] and not err.value.output_shapes[0].is_sufficient


def test_deadline_passing_while_queued(device, add_job):
    blocker = device.prepare_model(slow_model())
    pm = device.prepare_model(add_model())
    first = blocker.execute_asynchronously(image_request())
    late = pm.execute_asynchronously(add_job.request, deadline=boot_time_ns() + 1_000_000)  # 1 ms
    first.result(timeout=60)
    with pytest.raises(gd.DriverError) as err:
        late.result(timeout=30)
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT


def test_high_priority_overtakes_queued_low(device):
    blocker = device.prepare_model(slow_model(), priority=Priority.LOW)
    low = device.prepare_model(add_model(), priority=Priority.LOW)
    high = device.prepare_model(add_model(), priority=Priority.HIGH)
    order, lock = [], threading.Lock()

    def record(tag):
        def done(_future):
            with lock:
                order.append(tag)
        return done

    futures = [blocker.execute_asynchronously(image_request())]
    futures[0].add_done_callback(record("blocker"))
    while not futures[0].running() and not futures[0].done():  # the blocker holds the device
        time.sleep(0.0005)
    for i in range(5):
        futures.append(low.execute_asynchronously(AddJob(seed=i).request))
        futures[-1].add_done_callback(record(f"low{i}"))
    futures.append(high.execute_asynchronously(AddJob(seed=9).request))
    futures[-1].add_done_callback(record("high"))
    for f in futures:
        f.result(timeout=60)
    assert order[:2] == ["blocker", "high"], order
    assert order[2:] == [f"low{i}" for i in range(5)]
