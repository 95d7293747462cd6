"""HostAllocator: the reference device's allocator, over host numpy memory.

It is a gpu_driver.backends.base.Allocator (``alloc`` / ``view`` / ``upload`` / ``download`` /
``copy``, views and counted copies shared with the backends), so device-owned storage such as a
driver-managed buffer is handled the same way on every device.  Buffers are DeviceBuffers whose
handle is a uint8 numpy array; copies complete at once, so ``blocking`` changes nothing.
"""
from __future__ import annotations

import numpy as np

from ..backends.base import Allocator, DeviceBuffer


class HostAllocator(Allocator):
    """Host memory with a device allocator's interface (no alignment constraint on views)."""

    alignment = 1

    def alloc(self, nbytes: int) -> DeviceBuffer:
        """A buffer of at least ``nbytes`` (≥ 1)."""
        n = max(int(nbytes), 1)
        return DeviceBuffer(np.empty(n, dtype=np.uint8), n)

    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool) -> None:
        raw = data.reshape(-1).view(np.uint8)
        buffer.handle[:raw.size] = raw

    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool) -> None:
        raw = out.reshape(-1).view(np.uint8)
        raw[:] = buffer.handle[:raw.size]

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        """``nbytes`` from the start of ``src`` to the start of ``dst``."""
        if nbytes:
            dst.handle[:nbytes] = src.handle[:nbytes]
