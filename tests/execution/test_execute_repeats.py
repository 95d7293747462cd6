"""PreparedModel.execute called again: a call whose inputs have the last call's shapes and dtypes (in
this thread) reuses its Request and pools; anything else builds them again.  Every answer is the
hand-worked sum of the inputs of that call, on every device."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.types import ErrorStatus, OperandType as T, OperationType as O


def _add(dims) -> gd.hal.Model:
    """z = x + y over float32 tensors of ``dims`` (0 = a dimension given at execution)."""
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, dims)
    y = b.add_input(T.TENSOR_FLOAT32, dims)
    z = b.add_operand(T.TENSOR_FLOAT32, dims)
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [z]).set_outputs([z])
    return b.finish()


def test_repeats_copy_each_calls_inputs(device):
    pm = device.prepare_model(_add([2, 3]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k in range(4):
        y = np.full((2, 3), 10.0 * k, np.float32)
        (z,) = pm.execute([x, y])
        np.testing.assert_array_equal(z, x + 10.0 * k)       # 0..5 plus 0, 10, 20, 30
    plan = pm._thread_pools.plan            # the repeats ran one Request
    assert plan is not None and plan.request.pools[0] is pm._thread_pools.__dict__["in"]
    # the same arrays written in place between calls: the new values are read
    x[0, 0] = 100.0
    (z,) = pm.execute([x, y])
    assert z[0, 0] == 130.0 and z[1, 2] == 35.0
    # a returned output is the caller's: the next call does not change it
    (z2,) = pm.execute([x, np.zeros((2, 3), np.float32)])
    assert z[0, 0] == 130.0 and z2[0, 0] == 100.0
    assert pm._thread_pools.plan is plan


def test_other_shapes_dtypes_and_layouts_build_again(device):
    pm = device.prepare_model(_add([0, 2]))
    ones = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(pm.execute([ones, ones])[0], np.full((3, 2), 2.0))
    # another first dimension: the output has the new shape
    np.testing.assert_array_equal(pm.execute([np.ones((5, 2), np.float32), np.ones((5, 2), np.float32)])[0],
                                  np.full((5, 2), 2.0))
    # float64 and list inputs are converted as on a first call
    (z,) = pm.execute([np.full((5, 2), 1.5), [[1, 2]] * 5])
    np.testing.assert_array_equal(z, [[2.5, 3.5]] * 5)
    assert z.dtype == np.float32
    # a transposed (non-contiguous) view of the planned shape
    t = np.arange(10, dtype=np.float32).reshape(2, 5).T
    np.testing.assert_array_equal(pm.execute([t, np.ones((5, 2), np.float32)])[0], t + 1)
    np.testing.assert_array_equal(pm.execute([t, t])[0], 2 * t)


def test_threads_keep_their_own_requests(device):
    pm = device.prepare_model(_add([4]))
    errors = []

    def run(base: float):
        try:
            for k in range(30):
                x = np.full(4, base, np.float32)
                y = np.arange(4, dtype=np.float32) * k
                (z,) = pm.execute([x, y])
                np.testing.assert_array_equal(z, base + np.arange(4) * k)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(100.0 * i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_accelerator_inputs_get_device_pools_read_in_place(device):
    """On an accelerator's own queue (CUDA; PoCL's threaded lane, not its inline one) each tensor input
    of execute() gets a pool of its own in device memory, bound to the kernels in place: one
    host-to-device copy per input and call, enqueued before the execution's kernels."""
    from gpu_driver.memory import HardwareBuffer

    pm = device.prepare_model(_add([2, 3]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    np.testing.assert_array_equal(pm.execute([x, y])[0], x + 0.5)
    pools = pm._thread_pools.plan.request.pools
    backend = getattr(pm, "backend", None)
    if backend is None or pm.lane is not backend:
        assert len(pools) == 2                          # the reference, an inline lane: host pools only
        return
    assert len(pools) == 4 and all(isinstance(p, HardwareBuffer) and p.resides_on(backend) for p in pools[2:])
    counters = backend.allocator.counters
    counters.reset()
    for k in range(3):
        x[1, 2] = 100.0 * k                             # changed in place: the new value is copied
        (z,) = pm.execute([x, y])
        np.testing.assert_array_equal(z[1], [3.5, 4.5, 100.0 * k + 0.5])
    assert counters.snapshot()["h2d_bytes"] == 3 * (x.nbytes + y.nbytes)
    # an execution refused after its inputs were enqueued (a deadline already passed) waits for their
    # copies before raising; the next call runs as usual
    with pytest.raises(gd.DriverError) as err:
        pm.execute([x, y], deadline=gd.hal.types.boot_time_ns() - 1)
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    np.testing.assert_array_equal(pm.execute([y, y])[0], np.ones((2, 3)))


def test_inputs_read_on_the_host_stay_in_host_pools(device):
    """A model specialised on an input's value (a scalar it reads at preparation of the shapes) keeps
    every input in the shared host pool, where the host reads it."""
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [2, 3])
    act = b.add_input(T.INT32, [])
    z = b.add_operand(T.TENSOR_FLOAT32, [2, 3])
    b.add_operation(O.ADD, [x, x, act], [z]).set_outputs([z])
    pm = device.prepare_model(b.finish())
    x_value = np.array([[-1, 2, 3], [4, -5, 6]], np.float32)
    for fused, want in ((0, 2 * x_value), (1, np.maximum(2 * x_value, 0))):   # NONE, RELU
        np.testing.assert_array_equal(pm.execute([x_value, np.array(fused, np.int32)])[0], want)
    assert not [key for key in pm._thread_pools.__dict__ if isinstance(key, tuple)]   # no ("own", i) pool


def test_inputs_fall_back_to_host_pools_when_device_memory_is_refused(device, monkeypatch):
    """A device pool that cannot be allocated (too large, out of memory): the input goes through the
    shared host pool and the execution runs as before."""
    from gpu_driver.memory import HardwareBuffer

    def refused(*args, **kwargs):
        raise gd.DriverError(ErrorStatus.GENERAL_FAILURE, "no device memory")

    monkeypatch.setattr(HardwareBuffer, "blob", refused)
    pm = device.prepare_model(_add([2, 3]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k in range(2):
        np.testing.assert_array_equal(pm.execute([x, x + k])[0], 2 * x + k)
    assert len(pm._thread_pools.plan.request.pools) == 2
