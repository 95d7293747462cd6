"""MmapFd: a mapping of a caller's file descriptor (HIDL "mmap_fd": fd, protection, offset, size)."""
from __future__ import annotations

import mmap
import os
import weakref

from ..errors import invalid
from .base import Memory, log, map_fd, os_error, register_memory_kind

PROT_READ = mmap.PROT_READ
PROT_WRITE = mmap.PROT_WRITE


class MmapFd(Memory):
    """Maps ``size`` bytes of ``fd`` from ``offset`` with ``prot`` (PROT_READ | PROT_WRITE bits only)."""

    kind = "mmap_fd"

    def __init__(self, fd: int, size: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE):
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise invalid(f"MmapFd size must be a positive integer, got {size!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise invalid(f"MmapFd offset must be >= 0, got {offset!r}")
        if not isinstance(prot, int) or prot & ~(PROT_READ | PROT_WRITE) or not prot & PROT_READ:
            raise invalid(f"MmapFd protection must be PROT_READ with optional PROT_WRITE, got {prot!r}")
        try:
            st = os.fstat(fd)
        except (OSError, TypeError, OverflowError) as exc:
            raise invalid(f"MmapFd: bad file descriptor {fd!r}: {exc}") from None
        if st.st_size < offset + size:
            raise invalid(f"MmapFd: fd {fd} holds {st.st_size} bytes, mapping needs {offset + size}")
        try:
            self._fd = os.dup(fd)
        except OSError as exc:
            raise os_error(f"MmapFd: cannot duplicate fd {fd}", exc) from None
        # the duplicate is closed with this object, also when it is only garbage-collected
        self._close_fd = weakref.finalize(self, os.close, self._fd)
        self._size = size
        self._offset = offset
        self._prot = prot
        page = mmap.ALLOCATIONGRANULARITY
        base = offset - offset % page
        self._skip = offset - base
        access_prot = prot if prot & PROT_WRITE else PROT_READ
        try:
            self._map = map_fd(f"MmapFd {'read-write' if prot & PROT_WRITE else 'read-only'} mapping of fd {fd}",
                               self._fd, size + self._skip, access_prot, base)
        except Exception:  # e.g. PROT_WRITE on a read-only fd: INVALID_ARGUMENT
            self._close_fd()
            raise
        log.debug("MmapFd: %d bytes of fd %d from offset %d, %s", size, fd, offset,
                  "read-write" if prot & PROT_WRITE else "read-only")

    @property
    def size(self) -> int:
        return self._size

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def prot(self) -> int:
        return self._prot

    def view(self) -> memoryview:
        if self._map.closed:
            raise invalid("the MmapFd is closed")
        mv = memoryview(self._map)[self._skip:self._skip + self._size]
        return mv if self._prot & PROT_WRITE else mv.toreadonly()

    def fds(self) -> list[int]:
        return [self._fd]

    def describe(self) -> dict:
        return {"kind": self.kind, "size": self._size, "offset": self._offset, "prot": self._prot}

    def close(self) -> None:
        if not self._map.closed:
            try:
                self._map.close()
            except BufferError:
                return
        self._close_fd()  # once: a finalizer runs at most one time
        self._fd = -1


register_memory_kind("mmap_fd", lambda d: MmapFd(d["fds"][0], int(d["size"]), int(d.get("offset", 0)),
                                                 int(d.get("prot", PROT_READ | PROT_WRITE))))
