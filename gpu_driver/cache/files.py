"""Cache handles: the open files a client passes to prepareModel / prepareModelFromCache.

A handle is an open file object (anything with ``fileno()``) or a raw file descriptor, opened
read-write by the client.  The driver never opens, names or deletes cache files: it only reads a
whole file from offset 0 (whatever the current position), or replaces its content (truncate to 0,
write, flush, fsync), always through positional I/O so the client's file position is untouched.

Locking: :func:`locked` takes, in a fixed order (by device and inode), an in-process lock per file
(``flock`` does not separate threads that share one open file description) and an ``fcntl.flock`` on
each file (shared to read, exclusive to write), so concurrent prepares writing the same files in
threads or processes never interleave, and a reader never sees a half-written file.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
from typing import Iterator, Sequence

from ..errors import failure, invalid

#: refuse to read a cache file larger than this (a cache file is ours: it never gets near it)
MAX_CACHE_FILE_BYTES = 4 << 30

_INODE_LOCKS: dict[tuple[int, int], threading.Lock] = {}
_INODE_LOCKS_GUARD = threading.Lock()


def handle_fd(handle) -> int:
    """The file descriptor behind ``handle``; INVALID_ARGUMENT unless it is an open regular file."""
    if isinstance(handle, bool):
        raise invalid(f"cache handle {handle!r} is not a file")
    if isinstance(handle, int):
        fd = handle
    else:
        fileno = getattr(handle, "fileno", None)
        if fileno is None:
            raise invalid(f"cache handle {type(handle).__name__} is neither a file object nor a descriptor")
        try:
            fd = fileno()
        except (OSError, ValueError) as exc:  # closed file object, io.BytesIO, …
            raise invalid(f"cache handle has no usable descriptor: {exc}") from None
        if not isinstance(fd, int) or isinstance(fd, bool):
            raise invalid("cache handle fileno() did not return a descriptor")
    try:
        st = os.fstat(fd)
    except (OSError, OverflowError, ValueError) as exc:
        raise invalid(f"cache handle {fd} is not an open descriptor: {exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise invalid(f"cache handle {fd} is not a regular file")
    return fd


def check_handles(handles: Sequence, writable: bool) -> list[int]:
    """Descriptors of all ``handles``: regular files, readable (and writable when ``writable``)."""
    fds = []
    for h in handles:
        fd = handle_fd(h)
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
        if mode == os.O_WRONLY or (writable and mode != os.O_RDWR):
            raise invalid(f"cache file {fd} is not opened read-write")
        fds.append(fd)
    return fds


def _flush(handle) -> None:
    """Push a file object's pending writes out first, so they cannot land on top of ours later."""
    flush = getattr(handle, "flush", None)
    if flush is not None and not isinstance(handle, int):
        with contextlib.suppress(OSError, ValueError):
            flush()


def read_all(handle) -> bytes:
    """The whole content of the file, read from offset 0 into memory (GENERAL_FAILURE on I/O error)."""
    _flush(handle)
    fd = handle_fd(handle)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_CACHE_FILE_BYTES:
            raise failure(f"cache file {fd} is implausibly large ({size} bytes)")
        chunks, offset = [], 0
        while True:  # read to EOF, not to the size seen above: the file is locked, but be total anyway
            chunk = os.pread(fd, max(size - offset, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            if offset > MAX_CACHE_FILE_BYTES:
                raise failure(f"cache file {fd} keeps growing")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError as exc:
        raise failure(f"reading cache file {fd} failed: {exc}") from None


def write_all(handle, data: bytes) -> None:
    """Replace the file's content with ``data``: truncate to 0, write from offset 0, fsync."""
    _flush(handle)
    fd = handle_fd(handle)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        offset = 0
        while offset < len(view):
            offset += os.pwrite(fd, view[offset:offset + (64 << 20)], offset)
        os.fsync(fd)
    except OSError as exc:
        raise failure(f"writing cache file {fd} failed: {exc}") from None


def _inode_lock(key: tuple[int, int]) -> threading.Lock:
    with _INODE_LOCKS_GUARD:
        lock = _INODE_LOCKS.get(key)
        if lock is None:
            lock = _INODE_LOCKS[key] = threading.Lock()
        return lock


@contextlib.contextmanager
def locked(handles: Sequence, exclusive: bool) -> Iterator[None]:
    """Hold every file of ``handles`` locked (exclusive to write, shared to read) in a global order."""
    keyed = {}
    for h in handles:
        fd = handle_fd(h)
        st = os.fstat(fd)
        keyed.setdefault((st.st_dev, st.st_ino), fd)  # the same file twice is locked once
    order = sorted(keyed)
    with contextlib.ExitStack() as stack:
        for key in order:
            # threads: one lock per inode (readers serialise too; reads are short)
            stack.enter_context(_inode_lock(key))
            fd = keyed[key]
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError as exc:
                raise failure(f"locking cache file {fd} failed: {exc}") from None
            stack.callback(_unlock, fd)
        yield


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
