"""HardwareBuffer: descriptions, lock/unlock semantics, CPU writes visible to the device after unlock."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus
from gpu_driver.memory import HardwareBufferFormat as Fmt
from gpu_driver.memory import HardwareBufferUsage as U

from .conftest import add_model

INVALID = ErrorStatus.INVALID_ARGUMENT


def _status(fn, *args, **kw):
    with pytest.raises(gd.DriverError) as e:
        fn(*args, **kw)
    return e.value.status


@pytest.mark.parametrize("args,kw", [
    ((0,), {}),                                        # width 0
    ((16, 2), {}),                                     # BLOB with height 2
    ((16, 1, 2), {}),                                  # BLOB with 2 layers
    ((16,), {"format": 0x7777}),                       # unknown format
    ((16,), {"usage": 1 << 40}),                       # unknown usage bit
    ((4, 4, 1, Fmt.R8_UNORM, U.GPU_DATA_BUFFER), {}),  # GPU_DATA_BUFFER is BLOB-only
    ((4, 4, 1, Fmt.R8_UNORM), {"stride": 3}),          # stride < width
])
def test_bad_descriptions_are_refused(args, kw):
    assert _status(gd.HardwareBuffer, *args, **kw) == INVALID


def test_too_large_is_a_general_failure():
    assert _status(gd.HardwareBuffer, 1 << 16, 1 << 16, 1, Fmt.R8G8B8A8_UNORM) == ErrorStatus.GENERAL_FAILURE


def test_descriptions():
    blob = gd.HardwareBuffer.blob(100)
    assert (blob.kind, blob.size, blob.width, blob.height, blob.stride, blob.format) == (
        "hardware_buffer_blob", 100, 100, 1, 100, Fmt.BLOB)
    img = gd.HardwareBuffer(5, 3, 2, Fmt.R8G8B8_UNORM)
    assert img.kind == "hardware_buffer" and img.stride == 16 and img.size == 16 * 3 * 2 * 3
    assert img.describe()["format"] == int(Fmt.R8G8B8_UNORM)
    assert img.lock().shape == (2, 3, 16, 3)
    img.unlock()


def test_lock_semantics(device):
    hb = gd.HardwareBuffer.blob(64, device=device)
    # unlock without lock
    assert _status(hb.unlock) == INVALID
    # lock usage: CPU flags only, at least one
    assert _status(hb.lock, U.GPU_DATA_BUFFER) == INVALID
    assert _status(hb.lock, 0) == INVALID
    arr = hb.lock(U.CPU_WRITE_OFTEN | U.CPU_READ_OFTEN)
    assert hb.locked and arr.shape == (64,) and arr.dtype == np.uint8 and arr.flags.writeable
    # no double lock
    assert _status(hb.lock, U.CPU_READ_OFTEN) == INVALID
    arr[:] = np.arange(64, dtype=np.uint8)
    hb.unlock()
    assert not hb.locked
    # the array is dead after unlock: writing through it fails
    with pytest.raises(ValueError):
        arr[0] = 1
    # a read-only lock gives a read-only array with the written bytes
    ro = hb.lock(U.CPU_READ_RARELY)
    assert not ro.flags.writeable
    np.testing.assert_array_equal(ro, np.arange(64, dtype=np.uint8))
    hb.unlock()


def test_lock_needs_matching_allocation_usage():
    write_only = gd.HardwareBuffer.blob(16, U.CPU_WRITE_OFTEN | U.GPU_DATA_BUFFER)
    assert _status(write_only.lock, U.CPU_READ_OFTEN) == INVALID
    write_only.lock(U.CPU_WRITE_RARELY)
    write_only.unlock()
    gpu_only = gd.HardwareBuffer.blob(16, U.GPU_DATA_BUFFER)
    assert _status(gpu_only.lock, U.CPU_WRITE_OFTEN) == INVALID


def test_writes_visible_to_the_device_after_unlock(device):
    prepared = device.prepare_model(add_model((4, 16)))
    inp = gd.HardwareBuffer.blob(512, device=device)
    out = gd.HardwareBuffer.blob(256, device=device)
    req = Request([RequestArgument(DataLocation(0, 0, 256)), RequestArgument(DataLocation(0, 256, 256))],
                  [RequestArgument(DataLocation(1, 0, 256))], [inp, out])
    for value in (1.0, 5.0):
        view = inp.lock(U.CPU_WRITE_OFTEN)
        view.view(np.float32)[:] = value
        inp.unlock()
        prepared.execute_synchronously(req)
        res = out.lock(U.CPU_READ_OFTEN)
        np.testing.assert_array_equal(res.view(np.float32), 2 * value)
        out.unlock()


def test_device_buffer_lock_transfers_are_counted(opencl):
    hb = gd.HardwareBuffer.blob(1024, device=opencl)
    c = opencl.backend.allocator.counters
    c.reset()
    hb.lock(U.CPU_READ_OFTEN)
    hb.unlock()
    assert c.snapshot()["d2h_bytes"] == 1024 and c.snapshot()["h2d_bytes"] == 0  # read lock: no write-back
    c.reset()
    hb.lock(U.CPU_WRITE_OFTEN)[:] = 7
    hb.unlock()
    assert c.snapshot()["h2d_bytes"] == 1024
    assert hb.read(1000, 3) == b"\x07\x07\x07"


def test_unaligned_ranges_on_a_device_buffer(opencl):
    hb = gd.HardwareBuffer.from_bytes(bytes(range(256)) * 4, device=opencl)
    hb.write(301, b"xyz")
    assert hb.read(299, 7) == bytes([299 % 256, 300 % 256]) + b"xyz" + bytes([304 % 256, 305 % 256])


def _add_and_reshape():
    """out0 = x + y (2×3) and out1 = RESHAPE(out0) (6): two outputs of one stored value."""
    F = gd.OperandType.TENSOR_FLOAT32
    b = gd.ModelBuilder()
    x, y = b.add_input(F, (2, 3)), b.add_input(F, (2, 3))
    s = b.add_operand(F, (2, 3))
    b.add_operation(gd.OperationType.ADD, [x, y, b.add_scalar(gd.OperandType.INT32, 0)], [s])
    r = b.add_operand(F, (6,))
    b.add_operation(gd.OperationType.RESHAPE, [s, b.add_constant(gd.OperandType.TENSOR_INT32, (1,),
                                                                 np.array([6], np.int32))], [r])
    b.set_outputs([s, r])
    return b.finish()


def test_device_buffers_bound_in_place_without_copies(opencl):
    """Hardware buffers in the device's memory, each used by one argument from its start, are the
    kernels' own arguments: no host transfer and no device copy; two outputs of one stored value each
    get it; fresh buffers every execution are rebound."""
    pm = opencl.prepare_model(_add_and_reshape())
    counters = opencl.backend.allocator.counters
    rng = np.random.default_rng(2)
    for _ in range(3):
        x, y = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
        pools = [gd.HardwareBuffer.from_bytes(v.tobytes(), device=opencl) for v in (x, y)]
        pools += [gd.HardwareBuffer.blob(24, device=opencl) for _ in range(2)]
        request = Request([RequestArgument(DataLocation(k, 0, 24)) for k in (0, 1)],
                          [RequestArgument(DataLocation(k, 0, 24)) for k in (2, 3)], pools)
        counters.reset()
        pm.execute_synchronously(request)
        assert counters.snapshot() == {"h2d_bytes": 0, "h2d_count": 0, "d2h_bytes": 0, "d2h_count": 0}
        np.testing.assert_array_equal(np.frombuffer(pools[2].read(0, 24), np.float32).reshape(2, 3), x + y)
        np.testing.assert_array_equal(np.frombuffer(pools[3].read(0, 24), np.float32), (x + y).reshape(6))
