"""Pool factories for the memory tests: one Memory of each kind holding given bytes."""
from __future__ import annotations

import os
import tempfile

import numpy as np

import gpu_driver as gd

#: pool kinds every test runs with; "hwb_device" is a BLOB HardwareBuffer on the executing device
#: (host shared memory for the reference device, a device buffer for OpenCL)
KINDS = ["ashmem", "mmap_fd", "hwb_host", "hwb_device"]

_MMAP_OFFSET = 4096  # MmapFd pools map a file from a non-zero offset


def make_pool(kind: str, data: bytes | np.ndarray, device=None, size: int | None = None) -> gd.Memory:
    raw = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else bytes(data)
    size = max(size or len(raw), 1)
    raw = raw or bytes(size)  # device memory starts undefined (as an AHardwareBuffer's): clear it
    if kind == "ashmem":
        mem = gd.SharedMemory(size)
    elif kind == "mmap_fd":
        with tempfile.TemporaryFile() as f:
            f.truncate(_MMAP_OFFSET + size)
            mem = gd.MmapFd(f.fileno(), size, _MMAP_OFFSET)
    elif kind == "hwb_host":
        mem = gd.HardwareBuffer.blob(size)
    elif kind == "hwb_device":
        mem = gd.HardwareBuffer.blob(size, device=device)
    else:
        raise ValueError(kind)
    if raw:
        mem.write(0, raw)
    return mem


def read_f32(mem: gd.Memory, offset: int, count: int) -> np.ndarray:
    return np.frombuffer(mem.read(offset, count * 4), dtype=np.float32).copy()


def file_fd(size: int) -> int:
    """An fd of a temporary file of ``size`` bytes (closed by the caller)."""
    fd, path = tempfile.mkstemp()
    os.unlink(path)
    os.ftruncate(fd, size)
    return fd
