"""SharedMemory: ashmem-like anonymous shared memory (``os.memfd_create``), fd-backed."""
from __future__ import annotations

import mmap
import os
import weakref

from ..errors import invalid
from .base import Memory, byte_view, log, map_fd, new_memfd, register_memory_kind


class SharedMemory(Memory):
    """Anonymous shared memory of ``size`` bytes (HIDL "ashmem"); pass it to another process by fd.

    INVALID_ARGUMENT for a size that is not a positive integer or a bad ``fd``; GENERAL_FAILURE when the
    OS cannot provide the memory (e.g. more than the address space holds).
    """

    kind = "ashmem"

    def __init__(self, size: int, *, name: str = "gpu_driver", fd: int | None = None):
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise invalid(f"SharedMemory size must be a positive integer, got {size!r}")
        self._close_fd = None
        self._map = None
        if fd is None:
            fd = new_memfd(name, size)
            # the fd this object created is closed with it, also when it is only garbage-collected
            self._close_fd = weakref.finalize(self, os.close, fd)
            self._owns_fd = True
        else:
            self._owns_fd = False
            try:
                held = os.fstat(fd).st_size
            except (OSError, TypeError, OverflowError) as exc:
                raise invalid(f"SharedMemory: bad file descriptor {fd!r}: {exc}") from None
            if held < size:
                raise invalid(f"shared memory fd {fd} is smaller than {size} bytes")
        self._fd = fd
        self._size = size
        try:
            self._map = map_fd(f"SharedMemory of {size} bytes", fd, size, mmap.PROT_READ | mmap.PROT_WRITE)
        except Exception:
            if self._close_fd is not None:
                self._close_fd()
            raise
        log.debug("SharedMemory: %d bytes on fd %d (%s)", size, fd, "created" if self._owns_fd else "adopted")

    @classmethod
    def from_bytes(cls, data) -> "SharedMemory":
        mv = byte_view(data)
        mem = cls(max(mv.nbytes, 1))
        mem.write(0, mv)
        return mem

    @property
    def size(self) -> int:
        return self._size

    def view(self) -> memoryview:
        if self._map is None or self._map.closed:
            raise invalid("the SharedMemory is closed")
        return memoryview(self._map)

    def fds(self) -> list[int]:
        return [self._fd]

    def close(self) -> None:
        if self._map is not None and not self._map.closed:
            try:
                self._map.close()
            except BufferError:  # views still alive; the mapping goes with them
                log.debug("SharedMemory: fd %d stays mapped while views of it are alive", self._fd)
                return
            log.debug("SharedMemory: %d bytes on fd %d unmapped", self._size, self._fd)
        if self._close_fd is not None:
            self._close_fd()  # once: a finalizer runs at most one time
            self._fd = -1


register_memory_kind("ashmem", lambda d: SharedMemory(int(d["size"]), fd=d["fds"][0]))
