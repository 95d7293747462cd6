"""Sync fences across the process boundary, as eventfds.

The client side turns any :class:`SyncFence` into an eventfd (:func:`fence_to_eventfd`) that it sends
with SCM_RIGHTS; when the fence leaves ACTIVE it writes 1 (SIGNALED) or 2 (ERROR) to it.  The server
side (:class:`EventfdRelay`) watches such descriptors with one thread and signals a local stand-in
fence when one becomes readable, so fenced work on the server waits on it without a waiting thread
per fence.
"""
from __future__ import annotations

import logging
import os
import selectors
import threading

from ..errors import DriverError, failure
from ..runtime.sync_fence import FenceState, SyncFence
from .wire import dead

log = logging.getLogger("gpu_driver.service")

SIGNALED, ERROR = 1, 2


def fence_to_eventfd(fence: SyncFence) -> int:
    """An eventfd that receives 1 when ``fence`` signals and 2 when it enters ERROR; closed by the
    fence's done-callback, so the caller sends it before the fence can signal or sends a duplicate."""
    fd = os.eventfd(0, os.EFD_CLOEXEC)
    dup = os.dup(fd)

    def done(f: SyncFence) -> None:
        try:
            os.eventfd_write(fd, ERROR if f.get_state() is FenceState.ERROR else SIGNALED)
        finally:
            os.close(fd)

    fence.add_done_callback(done)
    return dup


class EventfdRelay:
    """One thread that signals stand-in fences when their client's eventfd becomes readable."""

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
        """A fence that signals when the client writes ``fd`` (owned from now on, closed once read)."""
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
                    value = os.eventfd_read(fd)
                except BlockingIOError:
                    continue
                with self._lock:
                    fence = self._forget(fd)
                if fence is not None:
                    error = None if value == SIGNALED else failure("the client's fence entered the error state")
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
