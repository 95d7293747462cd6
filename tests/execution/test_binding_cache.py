"""A prepared model's cache of validated request bindings: the same request again runs without being
validated again, yet every change between executions is seen (arguments edited in place, another
pool, a driver buffer freed or uninitialized), and the cache keeps no client memory alive."""
import gc
import weakref

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole, DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus

from .conftest import AddJob, add_model


def _status(pm, request):
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(request)
    return err.value.status


def test_arguments_edited_in_place_are_validated_again(device, add_job):
    pm = device.prepare_model(add_model())
    pm.execute_synchronously(add_job.request)
    out = add_job.request.outputs[0]
    out.location.length = 3  # the same Request object, now invalid
    assert _status(pm, add_job.request) == ErrorStatus.INVALID_ARGUMENT
    out.location.length = add_job.x.nbytes
    out.has_no_value = 1  # equal to True and hashed alike, but not a bool
    assert _status(pm, add_job.request) == ErrorStatus.INVALID_ARGUMENT
    out.has_no_value = False
    add_job.request.inputs[1].dimensions = [4, 9]
    assert _status(pm, add_job.request) == ErrorStatus.INVALID_ARGUMENT
    add_job.request.inputs[1].dimensions = []
    for seed in (1, 2):  # valid again, and new input bytes are read each time
        fresh = AddJob(seed=seed)
        add_job.set_inputs(fresh.x, fresh.y)
        pm.execute_synchronously(add_job.request)
        np.testing.assert_array_equal(add_job.result, fresh.x + fresh.y)


def test_another_pool_of_the_same_shape(device, add_job):
    pm = device.prepare_model(add_model())
    pm.execute_synchronously(add_job.request)
    other = AddJob(seed=5)
    request = Request(add_job.request.inputs, add_job.request.outputs, [other.pool_in, other.pool_out])
    pm.execute_synchronously(request)
    np.testing.assert_array_equal(other.result, other.x + other.y)
    small = Request(add_job.request.inputs, add_job.request.outputs, [other.pool_in, gd.SharedMemory(16)])
    assert _status(pm, small) == ErrorStatus.INVALID_ARGUMENT  # the output no longer fits its pool


def _buffer_input(device, pm, value):
    """A driver buffer with the role of input 0 of ``pm``, holding ``value``."""
    buf, _token = device.allocate(BufferDesc(list(value.shape)), [pm], [BufferRole(0, 0)], [])
    buf.copy_from(gd.SharedMemory.from_bytes(value), list(value.shape))
    return buf


def test_driver_buffer_state_is_checked_every_time(device, add_job):
    pm = device.prepare_model(add_model())
    buf = _buffer_input(device, pm, add_job.x)
    n = add_job.x.nbytes
    args = [RequestArgument(DataLocation(2, 0, 0)), RequestArgument(DataLocation(0, n, n))]
    request = Request(args, add_job.request.outputs, [add_job.pool_in, add_job.pool_out, buf.token])
    for _ in range(2):
        pm.execute_synchronously(request)
        np.testing.assert_array_equal(add_job.result, add_job.x + add_job.y)
    buf.set_uninitialized()
    assert _status(pm, request) == ErrorStatus.GENERAL_FAILURE
    buf.copy_from(gd.SharedMemory.from_bytes(add_job.y), list(add_job.shape))
    pm.execute_synchronously(request)
    np.testing.assert_array_equal(add_job.result, add_job.y + add_job.y)
    del buf
    gc.collect()
    assert _status(pm, request) == ErrorStatus.INVALID_ARGUMENT  # the token names no live buffer


def test_the_cache_keeps_no_memory_alive(device):
    pm = device.prepare_model(add_model())
    job = AddJob(seed=3)
    pm.execute_synchronously(job.request)
    pm.execute_synchronously(job.request)
    pools = [weakref.ref(p) for p in job.request.pools]
    del job
    gc.collect()
    assert all(ref() is None for ref in pools)


def test_arguments_are_captured_at_binding(device):
    """A binding keeps its own copy of the arguments: editing a request's argument objects afterwards
    changes neither a cached binding nor a burst's nor a reusable execution's."""
    pm = device.prepare_model(add_model())
    job = AddJob(seed=7)
    n = job.x.nbytes
    wide = gd.SharedMemory(2 * n)  # room for the output at offset 0 or n
    out = RequestArgument(DataLocation(2, 0, n))
    pools = [job.pool_in, job.pool_out, wide]
    pm.execute_synchronously(Request(job.request.inputs, [out], pools))
    execution = pm.create_reusable_execution(Request(job.request.inputs, [out], pools))
    burst = pm.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in pools]
    burst.execute_synchronously(Request(job.request.inputs, [out], pools), slots)
    out.location.offset = n  # the same argument object, another valid place
    pm.execute_synchronously(Request(job.request.inputs, [out], pools))  # bound for offset n
    wide.write(0, bytes(2 * n))
    fresh = Request(job.request.inputs, [RequestArgument(DataLocation(2, 0, n))], pools)  # offset 0 again
    for run in (lambda: pm.execute_synchronously(fresh), execution.compute,
                lambda: burst.execute_synchronously(fresh, slots)):
        run()
        got = np.frombuffer(wide.read(0, 2 * n), np.float32).reshape(2, *job.shape)
        np.testing.assert_array_equal(got[0], job.x + job.y)  # written at offset 0 ...
        np.testing.assert_array_equal(got[1], 0)              # ... and nowhere else
        wide.write(0, bytes(2 * n))


def test_reusable_execution_with_a_driver_buffer_keeps_its_request(device, add_job):
    """A reusable execution whose request names a driver buffer is bound again at every computation,
    from the request as it was created."""
    pm = device.prepare_model(add_model())
    buf = _buffer_input(device, pm, add_job.x)
    n = add_job.x.nbytes
    args = [RequestArgument(DataLocation(2, 0, 0)), RequestArgument(DataLocation(0, n, n))]
    request = Request(args, add_job.request.outputs, [add_job.pool_in, add_job.pool_out, buf.token])
    execution = pm.create_reusable_execution(request)
    args[1].location.offset = 0  # edited afterwards: the execution still reads y
    request.pools[2] = 12345      # and still names the buffer
    execution.compute()
    np.testing.assert_array_equal(add_job.result, add_job.x + add_job.y)
