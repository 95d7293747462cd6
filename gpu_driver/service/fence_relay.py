"""Sync fences across the process boundary, as pipes.

The client side turns any :class:`SyncFence` into the read end of a pipe (:func:`fence_to_pipe`) that
it sends with SCM_RIGHTS; when the fence leaves ACTIVE it writes its outcome — SIGNALED, or ERROR
with the error's status and message — and closes the write end.  The server side
(:class:`FenceRelay`) watches such descriptors with one thread and signals a local stand-in fence
when one becomes readable, so fenced work on the server waits on it without a waiting thread per
fence.  A pipe closed without an outcome (the client died, or dropped the fence) is an ERROR.
"""
from __future__ import annotations

import logging
import os
import select
import selectors
import struct
import threading

from ..errors import DriverError, failure
from ..hal.types import ErrorStatus
from ..runtime.sync_fence import FenceState, SyncFence
from .wire import dead

log = logging.getLogger("gpu_driver.service")

SIGNALED, ERROR = b"\x01", b"\x02"
_ERROR = struct.Struct("<cI")  # ERROR, the error's status; its message follows


def fence_to_pipe(fence: SyncFence) -> int:
    """The read end of a pipe that receives ``fence``'s outcome; the caller sends it and closes it."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)

    def done(f: SyncFence) -> None:
        try:
            if f.get_state() is FenceState.ERROR:
                error = f.error
                status = int(error.status) if error is not None else int(ErrorStatus.GENERAL_FAILURE)
                message = (error.message if error is not None else "signalled with an error").encode()
                os.write(write_end, _ERROR.pack(ERROR, status) + message[:select.PIPE_BUF - _ERROR.size])
            else:
                os.write(write_end, SIGNALED)
        except OSError:  # the server is gone
            pass
        finally:
            os.close(write_end)

    fence.add_done_callback(done)
    return read_end


def _outcome(data: bytes) -> DriverError | None:
    """What the client wrote: None for SIGNALED, the error otherwise."""
    if data == SIGNALED:
        return None
    if data[:1] == ERROR and len(data) >= _ERROR.size:
        _, status = _ERROR.unpack_from(data)
        try:
            status = ErrorStatus(status)
        except ValueError:
            status = ErrorStatus.GENERAL_FAILURE
        return DriverError(status, data[_ERROR.size:].decode(errors="replace"))
    if not data:
        return dead("the client's fence went away before it signalled (the client closed it or died)")
    return failure(f"the client's fence sent a malformed outcome {data[:16]!r}")


class FenceRelay:
    """One thread that signals stand-in fences when their client's pipe becomes readable."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._wake = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self._selector.register(self._wake, selectors.EVENT_READ)
        self._fences: dict[int, SyncFence] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="gpu_driver service fence relay", daemon=True)
        self._thread.start()

    def watch(self, fd: int) -> SyncFence:
        """A fence that signals with what the client writes to the pipe ``fd`` (owned from now on,
        closed once read)."""
        fence = SyncFence()
        with self._lock:
            if self._closed:
                os.close(fd)
                fence.signal(dead("the service is shutting down"))
                return fence
            os.set_blocking(fd, False)
            self._fences[fd] = fence
            self._selector.register(fd, selectors.EVENT_READ)
        os.eventfd_write(self._wake, 1)
        return fence

    def abandon(self, fences: list[SyncFence], why: str) -> None:
        """Stop watching ``fences`` (their client is gone): each still ACTIVE enters ERROR (DEAD_OBJECT)."""
        ids = {id(f) for f in fences}
        with self._lock:
            fds = [fd for fd, f in self._fences.items() if id(f) in ids]
            for fd in fds:
                self._forget(fd)
        self._finish(fences, dead(why))

    def _forget(self, fd: int) -> SyncFence | None:
        fence = self._fences.pop(fd, None)
        if fence is not None:
            self._selector.unregister(fd)
            os.close(fd)
        return fence

    @staticmethod
    def _finish(fences, error: DriverError | None) -> None:
        for fence in fences:
            if fence.get_state() is FenceState.ACTIVE:
                try:
                    fence.signal(error)
                except DriverError:  # signalled meanwhile
                    pass

    def _run(self) -> None:
        while True:
            for key, _events in self._selector.select():
                fd = key.fd
                if fd == self._wake:
                    try:
                        os.eventfd_read(fd)
                    except BlockingIOError:
                        pass
                    continue
                try:
                    data = os.read(fd, select.PIPE_BUF)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    data = f"unreadable: {exc}".encode()
                with self._lock:
                    fence = self._forget(fd)
                if fence is not None:
                    error = _outcome(data)
                    log.debug("fence relay: client fence on fd %d %s", fd, "signalled" if error is None else "failed")
                    self._finish([fence], error)
            with self._lock:
                if self._closed:
                    break

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fences = [self._forget(fd) for fd in list(self._fences)]
        os.eventfd_write(self._wake, 1)
        self._thread.join(timeout=5)
        self._finish([f for f in fences if f is not None], dead("the service is shutting down"))
        self._selector.close()
        os.close(self._wake)
