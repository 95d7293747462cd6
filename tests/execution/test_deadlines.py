"""Deadlines: already passed (PERSISTENT), passing during a long execution (TRANSIENT, the execution
stops early instead of finishing late), on the synchronous path of every device."""
import time

import pytest

import gpu_driver as gd
from gpu_driver.hal.types import ErrorStatus, boot_time_ns

from .conftest import image_request, seconds_of_one_run, slow_model


def test_deadline_already_passed(device):
    pm = device.prepare_model(slow_model(layers=2))
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(image_request(), deadline=boot_time_ns() - 1)
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT


def test_deadline_stops_a_long_execution_early(device):
    pm = device.prepare_model(slow_model())
    request = image_request()
    full = seconds_of_one_run(pm, request)
    budget_ns = int(full * 1e9 / 8)
    t0 = time.perf_counter()
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(request, deadline=boot_time_ns() + budget_ns)
    stopped = time.perf_counter() - t0
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert stopped < full, (stopped, full)
