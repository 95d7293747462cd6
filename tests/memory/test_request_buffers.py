"""Driver buffers named in requests: the request-time rules of interface.md §6.1 / §9.2 item 8, the
initialized state after successful and failed executions, and buffers whose shape comes from use."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole, DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus

from .conftest import add_model, two_output_model

INVALID = ErrorStatus.INVALID_ARGUMENT
FAILURE = ErrorStatus.GENERAL_FAILURE
A = np.arange(6, dtype=np.float32).reshape(2, 3)


def tok(pool_index: int, dims=()) -> RequestArgument:
    return RequestArgument(DataLocation(pool_index, 0, 0), list(dims))


def mem(pool_index: int, offset: int = 0, length: int = 24) -> RequestArgument:
    return RequestArgument(DataLocation(pool_index, offset, length))


def _status(prepared, request, **kw):
    with pytest.raises(gd.DriverError) as e:
        prepared.execute_synchronously(request, **kw)
    return e.value.status


@pytest.fixture
def setup(device, prepared_add):
    """(prepared a + b, buffer with roles in 0 / in 1 / out 0, initialized to A, a pool holding A)."""
    pm = prepared_add(device)
    buf, _ = device.allocate(BufferDesc([]), [pm], [BufferRole(0, 0), BufferRole(0, 1)], [BufferRole(0, 0)])
    a = gd.SharedMemory.from_bytes(A)
    buf.copy_from(a, [])
    return pm, buf, a


def test_buffer_as_input_and_output(device, setup):
    pm, buf, a = setup
    out_buf, _ = device.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    shapes, _ = pm.execute_synchronously(Request([tok(1), mem(0)], [tok(2)], [a, buf.token, out_buf.token]))
    assert shapes[0].dimensions == [2, 3] and out_buf.initialized and out_buf.dimensions == (2, 3)
    res = gd.SharedMemory(24)
    out_buf.copy_to(res)
    np.testing.assert_array_equal(res.array(np.float32).reshape(2, 3), 2 * A)
    # the same buffer as both inputs is fine
    out = gd.SharedMemory(24)
    pm.execute_synchronously(Request([tok(0), tok(0)], [mem(1)], [buf.token, out]))
    np.testing.assert_array_equal(out.array(np.float32).reshape(2, 3), 2 * A)
    # request dimensions equal to the buffer's are fine; the byte length may be given
    pm.execute_synchronously(Request([RequestArgument(DataLocation(0, 0, 24), [2, 3]), mem(1)], [mem(2)],
                                     [buf.token, a, out]))


def test_role_violations(device, setup, prepared_add):
    pm, buf, a = setup
    out = gd.SharedMemory(24)
    input_only, _ = device.allocate(BufferDesc([]), [pm], [BufferRole(0, 1)], [])
    input_only.copy_from(a, [])
    other_pm = device.prepare_model(add_model())
    foreign, _ = device.allocate(BufferDesc([]), [other_pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    foreign.copy_from(a, [])
    cases = {
        "input buffer as output": Request([mem(0), mem(0)], [tok(1)], [a, input_only.token]),
        "wrong io index": Request([tok(1), mem(0)], [mem(2)], [a, input_only.token, out]),
        "wrong prepared model": Request([tok(1), mem(0)], [mem(2)], [a, foreign.token, out]),
        "unknown token": Request([mem(0), mem(0)], [tok(1)], [a, 987654]),
        "incompatible dims": Request([tok(1, [3, 2]), mem(0)], [mem(2)], [a, buf.token, out]),
        "incompatible output dims": Request([mem(0), mem(0)], [tok(1, [2, 4])], [a, buf.token]),
        "offset": Request([RequestArgument(DataLocation(1, 256, 0)), mem(0)], [mem(2)], [a, buf.token, out]),
        "input and output": Request([tok(1), mem(0)], [tok(1)], [a, buf.token]),
    }
    for name, req in cases.items():
        assert _status(pm, req) == INVALID, name
    assert buf.initialized  # rejected requests never ran: nothing changed


def test_same_buffer_twice_as_output(device):
    pm = device.prepare_model(two_output_model())
    buf, _ = device.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0), BufferRole(0, 1)])
    a = gd.SharedMemory.from_bytes(A)
    assert _status(pm, Request([mem(0), mem(0)], [tok(1), tok(1)], [a, buf.token])) == INVALID
    other, _ = device.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0), BufferRole(0, 1)])
    pm.execute_synchronously(Request([mem(0), mem(0)], [tok(1), tok(2)], [a, buf.token, other.token]))
    assert buf.initialized and other.initialized


def test_uninitialized_input_is_a_general_failure(device, prepared_add):
    pm = prepared_add(device)
    buf, _ = device.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    req = Request([tok(1), mem(0)], [mem(2)], [gd.SharedMemory(24), buf.token, gd.SharedMemory(24)])
    assert _status(pm, req) == FAILURE


def test_failed_execution_leaves_outputs_uninitialized(device, setup):
    pm, buf, a = setup
    assert buf.initialized
    req = Request([mem(0), mem(0)], [tok(1)], [a, buf.token])
    assert _status(pm, req, deadline=0) == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    assert not buf.initialized
    pm.execute_synchronously(req)
    assert buf.initialized


def test_released_buffer_token_is_refused(device, prepared_add):
    pm = prepared_add(device)
    buf, token = device.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0)])
    del buf
    gc.collect()
    a = gd.SharedMemory.from_bytes(A)
    assert _status(pm, Request([mem(0), mem(0)], [tok(1)], [a, token])) == INVALID


def test_buffer_takes_its_shape_from_use(reference):
    """Unknown dims at allocation: each execution's output shape becomes the buffer's shape, and the
    next execution reads it with that shape (reference device: shapes resolved per execution)."""
    pm = reference.prepare_model(add_model((0, 3)))
    buf, _ = reference.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    out_buf, _ = reference.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0)])
    assert buf.dimensions == (0, 3)
    for rows in (2, 4, 1):
        x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        xm = gd.SharedMemory.from_bytes(x)
        n = x.nbytes
        shapes, _ = pm.execute_synchronously(Request([RequestArgument(DataLocation(0, 0, n), [rows, 3]),
                                                      RequestArgument(DataLocation(0, 0, n), [rows, 3])],
                                                     [tok(1)], [xm, buf.token]))
        assert shapes[0].dimensions == [rows, 3] and buf.dimensions == (rows, 3)
        # now read it as an input without giving dimensions: they come from the buffer
        shapes, _ = pm.execute_synchronously(Request([tok(1), RequestArgument(DataLocation(0, 0, n), [rows, 3])],
                                                     [tok(2)], [xm, buf.token, out_buf.token]))
        assert shapes[0].dimensions == [rows, 3] and out_buf.dimensions == (rows, 3)
        res = gd.SharedMemory(n)
        out_buf.copy_to(res)
        np.testing.assert_array_equal(res.array(np.float32).reshape(rows, 3), 3 * x)
    # dims given in a request must match the buffer's current shape
    x = gd.SharedMemory(24)
    assert _status(pm, Request([tok(1, [2, 3]), mem(0)], [tok(2)], [x, buf.token, out_buf.token])) == INVALID
