"""HostAllocator: the reference device's allocator, over host numpy memory.

It has the allocator part of gpu_driver.backends.base.Backend (``alloc`` / ``view`` / ``upload`` /
``download`` / ``copy``, same names and semantics), so device-owned storage such as a driver-managed
buffer is handled the same way on every device.  Buffers are DeviceBuffers whose handle is a uint8
numpy array; copies complete at once, so ``blocking`` changes nothing.
"""
from __future__ import annotations

import numpy as np

from ..backends.base import DeviceBuffer


class HostAllocator:
    """Host memory with a device allocator's interface (no alignment constraint on views)."""

    alignment = 1

    def alloc(self, nbytes: int) -> DeviceBuffer:
        """A buffer of at least ``nbytes`` (≥ 1)."""
        n = max(int(nbytes), 1)
        return DeviceBuffer(np.empty(n, dtype=np.uint8), n)

    def view(self, buffer: DeviceBuffer, offset: int, nbytes: int) -> DeviceBuffer:
        """A buffer naming ``[offset, offset + nbytes)`` of ``buffer`` (shares its memory)."""
        root = buffer.base or buffer
        start, nbytes = buffer.offset + int(offset), max(int(nbytes), 1)
        if start + nbytes > root.nbytes:
            raise ValueError(f"view [{start}, {start + nbytes}) outside a {root.nbytes}-byte buffer")
        return DeviceBuffer(root.handle[start:start + nbytes], nbytes, start, root)

    def upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        """Copy the bytes of ``data`` to the start of ``buffer``."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.size > buffer.nbytes:
            raise ValueError(f"upload of {raw.size} bytes into a {buffer.nbytes}-byte buffer")
        buffer.handle[:raw.size] = raw

    def download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> np.ndarray:
        """Copy the start of ``buffer`` into the contiguous array ``out``."""
        raw = out.reshape(-1).view(np.uint8)
        if raw.size > buffer.nbytes:
            raise ValueError(f"download of {raw.size} bytes from a {buffer.nbytes}-byte buffer")
        raw[:] = buffer.handle[:raw.size]
        return out

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        """``nbytes`` from the start of ``src`` to the start of ``dst``."""
        if nbytes:
            dst.handle[:nbytes] = src.handle[:nbytes]
