"""Every pool kind as model constants (CONSTANT_REFERENCE) and as request data, on the reference and
OpenCL devices; zero host copies when the request pools live on the executing device."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal import serialize
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.hal.types import ErrorStatus, OperandLifeTime
from gpu_driver.memory import HardwareBufferFormat, HardwareBufferUsage

from .conftest import add_model
from .pools import KINDS, make_pool, read_f32

SHAPE = (8, 8)  # 256 bytes: large enough to become a CONSTANT_REFERENCE operand
N = 64


def _const_model_in(kind: str, device, const: np.ndarray) -> gd.Model:
    model = add_model(SHAPE, const)
    ref_ops = [o for o in model.main.operands if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE]
    assert len(ref_ops) == 1 and len(model.pools) == 1
    old = model.pools[0]
    model.pools[0] = make_pool(kind, old.read(0, old.size), device)
    return model


@pytest.mark.parametrize("kind", KINDS)
def test_pool_kind_as_constants(device, kind):
    rng = np.random.default_rng(1)
    const = rng.standard_normal(SHAPE).astype(np.float32)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    prepared = device.prepare_model(_const_model_in(kind, device, const))
    (out,) = prepared.execute([x])
    np.testing.assert_allclose(out, x + const, rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_pool_kind_as_request_data(device, kind):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, SHAPE[0], SHAPE[1])).astype(np.float32)
    prepared = device.prepare_model(add_model(SHAPE))
    nbytes = a.nbytes
    # inputs at offsets 0 and 256 of one pool, the output at offset 256 of another
    inp = make_pool(kind, np.concatenate([a.ravel(), b.ravel()]), device)
    out = make_pool(kind, b"", device, size=2 * nbytes)
    req = Request([RequestArgument(DataLocation(0, 0, nbytes)), RequestArgument(DataLocation(0, nbytes, nbytes))],
                  [RequestArgument(DataLocation(1, nbytes, nbytes))], [inp, out])
    shapes, _ = prepared.execute_synchronously(req)
    assert shapes[0].dimensions == list(SHAPE) and shapes[0].is_sufficient
    np.testing.assert_allclose(read_f32(out, nbytes, N).reshape(SHAPE), a + b, rtol=1e-6)
    np.testing.assert_array_equal(read_f32(out, 0, N), 0)  # nothing written outside the argument


def test_device_resident_request_has_zero_host_copies(opencl):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, SHAPE[0], SHAPE[1])).astype(np.float32)
    prepared = opencl.prepare_model(add_model(SHAPE))
    inp = gd.HardwareBuffer.blob(512, device=opencl)
    out = gd.HardwareBuffer.blob(256, device=opencl)
    view = inp.lock()
    view[:] = np.concatenate([a.ravel(), b.ravel()]).view(np.uint8)
    inp.unlock()
    req = Request([RequestArgument(DataLocation(0, 0, 256)), RequestArgument(DataLocation(0, 256, 256))],
                  [RequestArgument(DataLocation(1, 0, 256))], [inp, out])
    counters = opencl.backend.allocator.counters
    counters.reset()
    for _ in range(3):
        prepared.execute_synchronously(req)
    assert counters.snapshot() == {"h2d_bytes": 0, "h2d_count": 0, "d2h_bytes": 0, "d2h_count": 0}
    res = out.lock(HardwareBufferUsage.CPU_READ_OFTEN)
    np.testing.assert_allclose(res.view(np.float32).reshape(SHAPE), a + b, rtol=1e-6)
    out.unlock()
    assert counters.d2h_bytes == 256  # the CPU read is the only transfer, and it is counted


def test_shared_memory_request_is_counted(opencl):
    """The control for the zero-copy test: the same request from shared memory moves bytes."""
    prepared = opencl.prepare_model(add_model(SHAPE))
    inp, out = gd.SharedMemory(512), gd.SharedMemory(256)
    req = Request([RequestArgument(DataLocation(0, 0, 256)), RequestArgument(DataLocation(0, 256, 256))],
                  [RequestArgument(DataLocation(1, 0, 256))], [inp, out])
    counters = opencl.backend.allocator.counters
    counters.reset()
    prepared.execute_synchronously(req)
    snap = counters.snapshot()
    assert snap["h2d_bytes"] == 512 and snap["d2h_bytes"] == 256


def test_image_hardware_buffer_as_whole_input_and_output(device):
    """A non-BLOB buffer (R8G8B8A8, 4 bytes a pixel) is a whole execution input/output, offset 0."""
    prepared = device.prepare_model(add_model((4, 16)))  # 256 bytes = 16 x 4 RGBA pixels
    fmt = HardwareBufferFormat.R8G8B8A8_UNORM
    a = gd.HardwareBuffer(16, 4, 1, fmt, device=device)
    b = gd.HardwareBuffer(16, 4, 1, fmt, device=device)
    out = gd.HardwareBuffer(16, 4, 1, fmt, device=device)
    assert a.kind == "hardware_buffer" and a.stride == 16 and a.size == 256
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    for hb, v in ((a, x), (b, 2 * x)):
        pixels = hb.lock()
        assert pixels.shape == (4, 16, 4)
        pixels[...] = v.view(np.uint8).reshape(4, 16, 4)
        hb.unlock()
    req = Request([RequestArgument(DataLocation(0, 0, 256)), RequestArgument(DataLocation(1, 0, 256))],
                  [RequestArgument(DataLocation(2, 0, 256))], [a, b, out])
    prepared.execute_synchronously(req)
    res = out.lock(HardwareBufferUsage.CPU_READ_RARELY)
    np.testing.assert_allclose(res.reshape(-1).view(np.float32).reshape(4, 16), 3 * x)
    out.unlock()


def test_image_hardware_buffer_refused_elsewhere(device):
    fmt = HardwareBufferFormat.R8_UNORM
    img = gd.HardwareBuffer(256, 1, 1, fmt, device=device)
    # not with an offset
    prepared = device.prepare_model(add_model((4, 16)))
    big = gd.HardwareBuffer(512, 1, 1, fmt, device=device)
    req = Request([RequestArgument(DataLocation(0, 256, 256)), RequestArgument(DataLocation(1, 0, 256))],
                  [RequestArgument(DataLocation(2, 0, 256))], [big, img, gd.SharedMemory(256)])
    with pytest.raises(gd.DriverError) as e:
        prepared.execute_synchronously(req)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    # not as a model pool
    model = add_model(SHAPE, np.ones(SHAPE, np.float32))
    model.pools[0] = gd.HardwareBuffer(256, 1, 1, fmt, device=device)
    with pytest.raises(gd.DriverError) as e:
        device.prepare_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    # not mappable as a pool
    with pytest.raises(gd.DriverError) as e:
        img.view()
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


def test_host_hardware_buffer_crosses_a_process_boundary():
    """A host BLOB/image buffer is fd-backed: serialize.pack → unpack maps the same bytes."""
    blob = gd.HardwareBuffer.from_bytes(b"0123456789abcdef")
    img = gd.HardwareBuffer(3, 2, 1, HardwareBufferFormat.R8G8B8A8_UNORM)
    req = Request([], [], [blob, img])
    data, fds = serialize.pack(req)
    back = serialize.unpack(data, fds)
    b2, i2 = back.pools
    assert b2.kind == "hardware_buffer_blob" and b2.read(0, 16) == b"0123456789abcdef"
    assert (i2.kind, i2.width, i2.height, i2.stride, i2.size) == ("hardware_buffer", 3, 2, img.stride, img.size)
    b2.write(0, b"Z")
    assert blob.read(0, 1) == b"Z"  # shared mapping


def test_device_hardware_buffer_cannot_cross_a_process_boundary(opencl):
    hb = gd.HardwareBuffer.blob(64, device=opencl)
    assert hb.fds() == [] and hb.backend is opencl.backend
    data, fds = serialize.pack(Request([], [], [hb]))
    with pytest.raises(gd.DriverError) as e:
        serialize.unpack(data, fds)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


def test_pools_dropped_without_close_release_their_fds():
    """A pool that is only garbage-collected closes the fd it created (a long-running client that
    builds many requests must not run out of file descriptors)."""
    import gc
    import os

    from gpu_driver.memory import HardwareBuffer, SharedMemory

    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    gc.collect()
    before = open_fds()
    for _ in range(200):
        SharedMemory(4096).write(0, b"x")
        HardwareBuffer.blob(4096)
    gc.collect()
    assert open_fds() <= before + 2
