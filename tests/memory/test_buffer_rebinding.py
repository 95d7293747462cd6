"""Driver buffers on the repeated-execution path: cached bindings re-check their tokens cheaply yet see
every change, a model buffer bound in place in one request and copied in the next gets the right
bytes, and the buffer's readers/writer lock still excludes a writer while a reader holds it."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole, DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus
from gpu_driver.runtime.driver_buffer import _RWLock

SHAPE = (2, 3)
NBYTES = 24
X = np.arange(6, dtype=np.float32).reshape(SHAPE)
Y = np.full(SHAPE, 0.5, np.float32)


def mem(pool: int) -> RequestArgument:
    return RequestArgument(DataLocation(pool, 0, NBYTES))


def tok(pool: int) -> RequestArgument:
    return RequestArgument(DataLocation(pool, 0, 0))


def _status(pm, request) -> ErrorStatus:
    with pytest.raises(gd.DriverError) as err:
        pm.execute_synchronously(request)
    return err.value.status


def _value(buffer) -> np.ndarray:
    out = gd.SharedMemory(NBYTES)
    buffer.copy_to(out)
    return out.array(np.float32).reshape(SHAPE).copy()


def test_cached_binding_sees_new_and_dropped_buffers(device, prepared_add):
    pm = prepared_add(device)
    src, _ = device.allocate(BufferDesc(list(SHAPE)), [pm], [BufferRole(0, 0)], [])
    src.copy_from(gd.SharedMemory.from_bytes(X), [])
    dst, _ = device.allocate(BufferDesc(list(SHAPE)), [pm], [], [BufferRole(0, 0)])
    y = gd.SharedMemory.from_bytes(Y)
    request = Request([tok(0), mem(1)], [tok(2)], [src.token, y, dst.token])
    pm.execute_synchronously(request)
    np.testing.assert_array_equal(_value(dst), X + 0.5)
    # another buffer allocated between two executions of the cached request: still the same buffers
    other, _ = device.allocate(BufferDesc(list(SHAPE)), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    other.copy_from(gd.SharedMemory.from_bytes(Y), [])
    pm.execute_synchronously(request)
    np.testing.assert_array_equal(_value(dst), X + 0.5)
    # the same pools in other roles: the other buffer is read, the source one written
    pm.execute_synchronously(Request([tok(0), mem(1)], [tok(2)], [other.token, y, dst.token]))
    np.testing.assert_array_equal(_value(dst), Y + 0.5)
    del src
    gc.collect()
    assert _status(pm, request) == ErrorStatus.INVALID_ARGUMENT  # its token names no live buffer
    np.testing.assert_array_equal(_value(dst), Y + 0.5)  # refused before it began: output untouched


def test_in_place_and_copied_requests_alternate(device, prepared_add):
    """One buffer read in place, then written in place, then neither (shared memory only), in turns on
    the same executable: each request binds exactly its own pools."""
    pm = prepared_add(device)
    buf, _ = device.allocate(BufferDesc(list(SHAPE)), [pm], [BufferRole(0, 0), BufferRole(0, 1)],
                             [BufferRole(0, 0)])
    buf.copy_from(gd.SharedMemory.from_bytes(X), [])
    x_value = X.copy()
    x, y, out = gd.SharedMemory.from_bytes(X), gd.SharedMemory.from_bytes(Y), gd.SharedMemory(NBYTES)
    read = Request([tok(0), mem(1)], [mem(2)], [buf.token, y, out])        # out = buf + y
    write = Request([mem(0), mem(1)], [tok(2)], [x, y, buf.token])         # buf = x + y
    plain = Request([mem(0), mem(1)], [mem(2)], [y, y, out])               # out = y + y
    expected_buf = x_value.copy()
    for _ in range(3):
        pm.execute_synchronously(read)
        np.testing.assert_array_equal(out.array(np.float32).reshape(SHAPE), expected_buf + Y)
        pm.execute_synchronously(plain)
        np.testing.assert_array_equal(out.array(np.float32).reshape(SHAPE), Y + Y)
        pm.execute_synchronously(write)
        expected_buf = x_value + Y
        np.testing.assert_array_equal(_value(buf), expected_buf)
        pm.execute_synchronously(Request([tok(0), tok(1)], [mem(2)], [buf.token, buf.token, out]))
        np.testing.assert_array_equal(out.array(np.float32).reshape(SHAPE), 2 * expected_buf)
        x_value = x_value + 1
        x = gd.SharedMemory.from_bytes(x_value)  # another pool object for the next round's write
        write = Request([mem(0), mem(1)], [tok(2)], [x, y, buf.token])


@pytest.mark.parametrize("held, wanted", [("read", "write"), ("write", "read"), ("write", "write")])
def test_lock_excludes_conflicting_holders(held, wanted):
    lock = _RWLock()
    (lock.acquire_read if held == "read" else lock.acquire_write)()
    got = threading.Event()

    def take():
        mutex = lock.quick(wanted == "write")
        got.set()
        mutex.release()

    thread = threading.Thread(target=take)
    thread.start()
    assert not got.wait(0.2)  # blocked while the conflicting holder holds it
    (lock.release_read if held == "read" else lock.release_write)()
    assert got.wait(5)
    thread.join()
    lock.acquire_read()  # two readers share it
    shared = threading.Thread(target=lambda: (lock.quick(False).release(), got.clear()))
    shared.start()
    shared.join(5)
    assert not got.is_set()
    lock.release_read()


def test_ring_of_more_buffers_than_bindings_kept(device, prepared_add):
    """State passed round a ring of six driver buffers (execution i reads buffer i % 6 and writes buffer
    (i + 1) % 6): no binding alternates with another, so an accelerator rebinds its one launch list
    every step (and keeps no list of its own for any); every step reads and writes exactly its own
    buffers."""
    pm = prepared_add(device)
    ring = [device.allocate(BufferDesc(list(SHAPE)), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])[0]
            for _ in range(6)]
    ring[0].copy_from(gd.SharedMemory.from_bytes(X), [])
    y = gd.SharedMemory.from_bytes(Y)
    for step in range(15):
        src, dst = ring[step % 6], ring[(step + 1) % 6]
        pm.execute_synchronously(Request([tok(0), mem(1)], [tok(2)], [src.token, y, dst.token]))
        np.testing.assert_array_equal(_value(dst), X + 0.5 * (step + 1))
        if step >= 5:  # the value a lap ago, left as it was
            np.testing.assert_array_equal(_value(ring[(step + 2) % 6]), X + 0.5 * (step - 4))
    specs = getattr(pm, "_specs", None)
    if specs is not None:  # an accelerator: a bounded number of launch lists
        (spec,) = specs.values()
        assert len(spec.exe.alternates) <= spec.exe.MAX_ALTERNATES


def test_ping_pong_then_other_buffers(device, prepared_add):
    """State ping-ponging between two driver buffers (from the third step an accelerator switches
    between launch lists kept per binding), then moved on to a third buffer and back: every step reads
    and writes exactly its own buffers."""
    pm = prepared_add(device)
    a, b, c = (device.allocate(BufferDesc(list(SHAPE)), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])[0]
               for _ in range(3))
    a.copy_from(gd.SharedMemory.from_bytes(X), [])
    y = gd.SharedMemory.from_bytes(Y)
    route = [a, b] * 4 + [c, a, b, c, b, a, b, a]
    for step, (src, dst) in enumerate(zip(route, route[1:])):
        pm.execute_synchronously(Request([tok(0), mem(1)], [tok(2)], [src.token, y, dst.token]))
        np.testing.assert_array_equal(_value(dst), X + 0.5 * (step + 1))
