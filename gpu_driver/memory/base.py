"""The Memory family: pools that carry constants and request data (interface.md §4, §7.1).

Every pool exposes its byte size, a writable byte view for host access, the file descriptors that
let it cross a process boundary, and a description for :mod:`gpu_driver.hal.serialize`.
"""
from __future__ import annotations

import abc
import errno
import fcntl
import mmap
import os
from typing import Any, Callable

import numpy as np

from ..errors import DriverError, failure, invalid
from ..vlog import vlog

log = vlog("memory")
_FACTORIES: dict[str, Callable[[dict], "Memory"]] = {}


def register_memory_kind(kind: str, factory: Callable[[dict], "Memory"]) -> None:
    _FACTORIES[kind] = factory


def memory_from_description(desc: dict[str, Any]) -> "Memory":
    """Rebuild a pool from :meth:`Memory.describe` output (with ``desc['fds']`` holding real fds)."""
    factory = _FACTORIES.get(desc.get("kind"))
    if factory is None:
        raise invalid(f"unknown memory kind {desc.get('kind')!r}")
    return factory(desc)


#: errno values that mean the caller's fd or sizes are at fault (INVALID_ARGUMENT); any other OS
#: refusal (out of memory, too many open files, …) is GENERAL_FAILURE
_CALLER_ERRNOS = {errno.EBADF, errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENODEV, errno.EOVERFLOW}


def os_error(what: str, exc: Exception) -> DriverError:
    """An OS refusal as a DriverError: INVALID_ARGUMENT when the caller's arguments are at fault (a bad or
    read-only fd, a size or offset the OS cannot take), GENERAL_FAILURE otherwise (out of memory, …)."""
    caller = isinstance(exc, (OverflowError, TypeError, ValueError)) or (
        isinstance(exc, OSError) and exc.errno in _CALLER_ERRNOS)
    if caller:
        return invalid(f"{what}: {exc}")
    return failure(f"{what}: {exc}")


#: the seals every memfd this library creates carries once sized: no process holding the fd can
#: shrink it under another's mapping (which would fault that process with SIGBUS), grow it, or unseal it
SIZE_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def new_memfd(name: str, nbytes: int) -> int:
    """A new anonymous shared-memory fd (close-on-exec) of ``nbytes`` bytes, its size sealed
    (:data:`SIZE_SEALS`); DriverError when the OS refuses."""
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError as exc:
        raise os_error("cannot create shared memory", exc) from None
    try:
        os.ftruncate(fd, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SIZE_SEALS)
    except (OSError, OverflowError) as exc:
        os.close(fd)
        raise os_error(f"cannot size shared memory to {nbytes} bytes", exc) from None
    return fd


def size_sealed(fd: int) -> bool:
    """Whether ``fd`` is a memfd whose size no holder can change (F_SEAL_SHRINK and F_SEAL_GROW set)."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        return False  # not a memfd (a regular file, a pipe…)
    return seals & (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW) == fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


def map_fd(what: str, fd: int, length: int, prot: int, offset: int = 0) -> mmap.mmap:
    """``mmap`` of ``length`` bytes of ``fd`` from ``offset`` (MAP_SHARED) for ``what``; DriverError when
    the OS refuses."""
    try:
        return mmap.mmap(fd, length, mmap.MAP_SHARED, prot, offset=offset)
    except (OSError, OverflowError, ValueError) as exc:
        raise os_error(f"{what}: cannot map {length} bytes of fd {fd} at offset {offset}", exc) from None


def byte_view(data) -> memoryview:
    """``data`` as a flat byte view (INVALID_ARGUMENT when it is not a contiguous bytes-like object)."""
    try:
        return memoryview(data).cast("B")
    except (TypeError, ValueError) as exc:
        raise invalid(f"memory write needs contiguous bytes-like data, got {type(data).__name__}: {exc}") from None


class Memory(abc.ABC):
    """A memory pool (HAL ``hidl_memory`` / canonical ``Memory``)."""

    #: HIDL name of the memory kind: "ashmem", "mmap_fd", "hardware_buffer_blob", "hardware_buffer".
    kind: str = ""

    @property
    @abc.abstractmethod
    def size(self) -> int:
        """Size of the pool in bytes."""

    @abc.abstractmethod
    def view(self) -> memoryview:
        """A byte view of the whole pool for host access (writable unless mapped read-only)."""

    def fds(self) -> list[int]:
        """File descriptors that back this pool (empty when it cannot cross a process boundary)."""
        return []

    def describe(self) -> dict[str, Any]:
        """A msgpack-able description, without the fds (see hal.serialize)."""
        return {"kind": self.kind, "size": self.size}

    @property
    def writable(self) -> bool:
        return not self.view().readonly

    def check_range(self, offset: int, length: int) -> None:
        """INVALID_ARGUMENT unless ``offset`` and ``length`` are integers and the bytes
        ``[offset, offset + length)`` lie inside the pool: every read, write and array view checks
        this before it touches the bytes (no silent short read, no wrap-around of negative offsets)."""
        for name, v in (("offset", offset), ("length", length)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise invalid(f"{type(self).__name__} {name} must be an integer, got {v!r}")
        if offset < 0 or length < 0 or offset + length > self.size:
            raise invalid(f"bytes [{offset}, {offset + length}) are outside the {self.size}-byte "
                          f"{type(self).__name__}" + (" (negative length)" if length < 0 else ""))

    def _array_range(self, dtype, offset: int, count: int) -> tuple[np.dtype, int]:
        """The dtype and element count of :meth:`array` (``count < 0``: every whole element from
        ``offset`` to the end), range-checked."""
        try:
            dtype = np.dtype(dtype)
        except TypeError as exc:
            raise invalid(f"not a numpy dtype: {dtype!r} ({exc})") from None
        self.check_range(offset, 0)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise invalid(f"{type(self).__name__} count must be an integer, got {count!r}")
        if count < 0:
            count = (self.size - offset) // dtype.itemsize
        self.check_range(offset, count * dtype.itemsize)
        return dtype, int(count)

    def array(self, dtype, offset: int = 0, count: int = -1) -> np.ndarray:
        """A numpy view of ``count`` elements of ``dtype`` starting at byte ``offset`` (``count < 0``:
        to the end of the pool)."""
        dtype, count = self._array_range(dtype, offset, count)
        return np.frombuffer(self.view(), dtype=dtype, count=count, offset=offset)

    def read(self, offset: int, length: int) -> bytes:
        """A copy of ``length`` bytes from ``offset`` (INVALID_ARGUMENT past the end)."""
        self.check_range(offset, length)
        return bytes(self.view()[offset:offset + length])

    def write(self, offset: int, data) -> None:
        """Copy the bytes of ``data`` to ``offset`` (INVALID_ARGUMENT past the end or into a read-only pool)."""
        mv = byte_view(data)
        self.check_range(offset, mv.nbytes)
        view = self.view()
        if view.readonly:
            raise invalid(f"the {type(self).__name__} is mapped read-only")
        view[offset:offset + mv.nbytes] = mv

    def close(self) -> None:  # pragma: no cover - overridden where resources are held
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
