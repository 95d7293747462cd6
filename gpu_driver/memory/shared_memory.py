"""SharedMemory: ashmem-like anonymous shared memory (``os.memfd_create``), fd-backed."""
from __future__ import annotations

import mmap
import os
import weakref

from .base import Memory, register_memory_kind


class SharedMemory(Memory):
    """Anonymous shared memory of ``size`` bytes (HIDL "ashmem"); pass it to another process by fd."""

    kind = "ashmem"

    def __init__(self, size: int, *, name: str = "gpu_driver", fd: int | None = None):
        from ..errors import invalid

        if not isinstance(size, int) or size <= 0:
            raise invalid(f"SharedMemory size must be a positive integer, got {size!r}")
        self._close_fd = None
        if fd is None:
            fd = os.memfd_create(name, os.MFD_CLOEXEC)
            # the fd this object created is closed with it, also when it is only garbage-collected
            self._close_fd = weakref.finalize(self, os.close, fd)
            try:
                os.ftruncate(fd, size)
            except OSError:
                self._close_fd()
                raise
            self._owns_fd = True
        else:
            self._owns_fd = False
            if os.fstat(fd).st_size < size:
                raise invalid(f"shared memory fd {fd} is smaller than {size} bytes")
        self._fd = fd
        self._size = size
        self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)

    @classmethod
    def from_bytes(cls, data) -> "SharedMemory":
        mv = memoryview(data).cast("B")
        mem = cls(max(mv.nbytes, 1))
        mem.write(0, mv)
        return mem

    @property
    def size(self) -> int:
        return self._size

    def view(self) -> memoryview:
        return memoryview(self._map)

    def fds(self) -> list[int]:
        return [self._fd]

    def close(self) -> None:
        if self._map is not None and not self._map.closed:
            try:
                self._map.close()
            except BufferError:  # views still alive; the mapping goes with them
                return
        if self._close_fd is not None:
            self._close_fd()  # once: a finalizer runs at most one time
            self._fd = -1


register_memory_kind("ashmem", lambda d: SharedMemory(int(d["size"]), fd=d["fds"][0]))
