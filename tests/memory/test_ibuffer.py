"""IBuffer copyTo / copyFrom (interface.md §6.2): every rule, round trips through every mappable pool
kind, dynamic shapes, and concurrent use."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole
from gpu_driver.hal.types import ErrorStatus
from gpu_driver.memory import PROT_READ, HardwareBufferFormat

from .conftest import add_model
from .pools import KINDS, file_fd, make_pool

INVALID = ErrorStatus.INVALID_ARGUMENT
FAILURE = ErrorStatus.GENERAL_FAILURE


def _status(fn, *args):
    with pytest.raises(gd.DriverError) as e:
        fn(*args)
    return e.value.status


@pytest.fixture
def fixed(device, prepared_add):
    """An uninitialized f32 [2, 3] buffer on ``device``."""
    return device.allocate(BufferDesc([]), [prepared_add(device)], [BufferRole(0, 0)], [BufferRole(0, 0)])[0]


@pytest.fixture
def dynamic(device):
    """An uninitialized f32 [0, 3] buffer (first axis from use) on ``device``."""
    pm = device.prepare_model(add_model((0, 3)))
    return device.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])[0]


@pytest.mark.parametrize("src_kind", KINDS)
@pytest.mark.parametrize("dst_kind", KINDS)
def test_round_trip(device, fixed, src_kind, dst_kind):
    value = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    fixed.copy_from(make_pool(src_kind, value, device), [])
    assert fixed.initialized and fixed.dimensions == (2, 3)
    dst = make_pool(dst_kind, b"", device, size=24)
    fixed.copy_to(dst)
    np.testing.assert_array_equal(np.frombuffer(dst.read(0, 24), np.float32).reshape(2, 3), value)


def test_copy_to_rules(device, fixed):
    # uninitialized → GENERAL_FAILURE
    assert _status(fixed.copy_to, gd.SharedMemory(24)) == FAILURE
    fixed.copy_from(gd.SharedMemory(24), [2, 3])
    # size must match exactly → INVALID_ARGUMENT
    assert _status(fixed.copy_to, gd.SharedMemory(28)) == INVALID
    assert _status(fixed.copy_to, gd.SharedMemory(20)) == INVALID
    # unmappable destinations → GENERAL_FAILURE
    img = gd.HardwareBuffer(6, 1, 1, HardwareBufferFormat.R8G8B8A8_UNORM, stride=6)
    assert img.size == 24 and _status(fixed.copy_to, img) == FAILURE
    fd = file_fd(24)
    ro = gd.MmapFd(fd, 24, 0, PROT_READ)
    assert _status(fixed.copy_to, ro) == FAILURE
    assert _status(fixed.copy_to, 7) == FAILURE
    assert fixed.initialized  # copyTo failures leave the buffer as it was


def test_copy_from_rules(device, fixed):
    src = gd.SharedMemory.from_bytes(np.ones(6, np.float32))
    cases = [
        (gd.SharedMemory(28), []),                # size mismatch
        (src, [2, 3, 1]),                          # rank mismatch
        (src, [3, 2]),                             # incompatible dims
        (src, [0, 3]),                             # not fully specified
        (src, [2, -3]),                            # not uint32
    ]
    for mem, dims in cases:
        fixed.copy_from(src, [])
        assert fixed.initialized
        assert _status(fixed.copy_from, mem, dims) == INVALID, dims
        assert not fixed.initialized, dims  # a failed copyFrom makes it uninitialized
    fixed.copy_from(src, [])
    img = gd.HardwareBuffer(6, 1, 1, HardwareBufferFormat.R8G8B8A8_UNORM, stride=6)
    assert _status(fixed.copy_from, img, []) == FAILURE and not fixed.initialized


def test_copy_from_dynamic_shapes(device, dynamic):
    # empty dimensions need fully specified buffer dims
    assert _status(dynamic.copy_from, gd.SharedMemory(24), []) == INVALID
    assert _status(dynamic.copy_from, gd.SharedMemory(24), [2, 0]) == INVALID
    assert _status(dynamic.copy_from, gd.SharedMemory(24), [2, 4]) == INVALID  # axis 1 is 3
    for rows in (2, 5, 1):
        value = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        dynamic.copy_from(gd.SharedMemory.from_bytes(value), [rows, 3])
        assert dynamic.dimensions == (rows, 3) and dynamic.nbytes == value.nbytes
        dst = gd.SharedMemory(value.nbytes)
        dynamic.copy_to(dst)
        np.testing.assert_array_equal(dst.array(np.float32).reshape(rows, 3), value)
    assert dynamic.initial_dims == (0, 3)


def test_concurrent_reads_and_writes(device, fixed):
    """Readers always see one whole value; writers never crash or hang."""
    values = [np.full(6, float(k), np.float32) for k in range(4)]
    sources = [gd.SharedMemory.from_bytes(v) for v in values]
    fixed.copy_from(sources[0], [])
    errors: list[BaseException] = []
    seen = set()

    def reader():
        dst = gd.SharedMemory(24)
        try:
            for _ in range(40):
                fixed.copy_to(dst)
                arr = dst.array(np.float32)
                assert (arr == arr[0]).all()
                seen.add(float(arr[0]))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def writer(k):
        try:
            for _ in range(40):
                fixed.copy_from(sources[k], [2, 3])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)] + [
        threading.Thread(target=writer, args=(k,)) for k in range(1, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "hang"
    assert not errors, errors
    assert seen <= {0.0, 1.0, 2.0, 3.0} and fixed.initialized


def test_dropped_buffer_token_stops_resolving(device, prepared_add):
    buf, token = device.allocate(BufferDesc([]), [prepared_add(device)], [BufferRole(0, 0)], [])
    assert device.resolve_buffer_token(token) is buf
    del buf
    import gc

    gc.collect()
    with pytest.raises(gd.DriverError) as e:
        device.resolve_buffer_token(token)
    assert e.value.status == INVALID
