"""SyncFence and FencedExecutionCallback: the completion objects of fenced executions.

A :class:`SyncFence` (the HAL's sync fence handle) is ACTIVE until it is signalled, then SIGNALED or
ERROR for good.  Fenced executions return one and accept a list of them to wait for; a client may
create its own and signal it.  Besides :meth:`SyncFence.wait`, a fence offers a pollable file
descriptor (an eventfd that becomes readable when the fence leaves ACTIVE) for selectors and asyncio,
and done-callbacks, through which the driver chains work without a waiting host thread.

A fence made by an accelerator's fenced execution also carries that execution's completion marker
on the device (:meth:`SyncFence.device_mark`), so later work on the same device queue is ordered
after it on the device itself.
"""
from __future__ import annotations

import enum
import os
import threading
import time
from typing import Any, Callable

from ..errors import DriverError, invalid
from ..hal.types import NO_TIMING, ErrorStatus, Timing


class FenceState(enum.Enum):
    """HAL SyncFence::FenceState."""

    ACTIVE = 0
    SIGNALED = 1
    ERROR = 2


class SyncFence:
    """A sync fence: ACTIVE until :meth:`signal`, then SIGNALED (or ERROR when signalled with an error)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._state = FenceState.ACTIVE
        self._error: DriverError | None = None
        self._callbacks: list[Callable[[SyncFence], None]] = []
        self._fd: int | None = None
        self._marks: dict[int, Any] = {}  # id(backend) -> device completion marker
        self.signaled_ns: int | None = None  # perf_counter_ns when it left ACTIVE

    @classmethod
    def create_signaled(cls) -> SyncFence:
        """A fence that is already SIGNALED (HAL SyncFence::createAsSignaled)."""
        fence = cls()
        fence.signal()
        return fence

    # ---- state -------------------------------------------------------------------------------------
    def get_state(self) -> FenceState:
        """HAL SyncFence::getState."""
        return self._state

    @property
    def error(self) -> DriverError | None:
        """Why the fence is in the ERROR state (None otherwise)."""
        return self._error

    def signal(self, error: DriverError | None = None) -> None:
        """Signal the fence: SIGNALED, or ERROR with ``error``.  A fence is signalled once; signalling
        it again is INVALID_ARGUMENT."""
        if error is not None and not isinstance(error, DriverError):
            raise invalid(f"a sync fence is signalled with a DriverError or None, got {error!r}")
        with self._cond:
            if self._state is not FenceState.ACTIVE:
                raise invalid(f"sync fence already {self._state.name}")
            self._state = FenceState.SIGNALED if error is None else FenceState.ERROR
            self._error = error
            self.signaled_ns = time.perf_counter_ns()
            callbacks, self._callbacks = self._callbacks, []
            if self._fd is not None:
                os.eventfd_write(self._fd, 1)
            self._cond.notify_all()
        for fn in callbacks:
            fn(self)

    def wait(self, timeout: float | None = None) -> FenceState:
        """HAL SyncFence::syncWait: block until the fence is signalled or ``timeout`` seconds pass;
        return the state (ACTIVE after a timeout)."""
        _check_timeout(timeout)
        with self._cond:
            self._cond.wait_for(lambda: self._state is not FenceState.ACTIVE, timeout)
            return self._state

    def add_done_callback(self, fn: Callable[[SyncFence], None]) -> None:
        """Call ``fn(fence)`` once the fence is signalled (at once, in this thread, if it already is;
        otherwise in the thread that signals it)."""
        if not callable(fn):
            raise invalid(f"add_done_callback takes a callable, got {fn!r}")
        with self._cond:
            if self._state is FenceState.ACTIVE:
                self._callbacks.append(fn)
                return
        fn(self)

    # ---- pollable descriptor -----------------------------------------------------------------------
    def fileno(self) -> int:
        """An eventfd that becomes readable when the fence leaves ACTIVE (for select/poll/asyncio);
        owned by the fence, closed by :meth:`close`."""
        with self._cond:
            if self._fd is None:
                self._fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
                if self._state is not FenceState.ACTIVE:
                    os.eventfd_write(self._fd, 1)
            return self._fd

    def close(self) -> None:
        with self._cond:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    # ---- device chaining ---------------------------------------------------------------------------
    def set_device_mark(self, backend, mark) -> None:
        """Record the completion marker of the device work this fence stands for, on ``backend``."""
        self._marks[id(backend)] = mark

    def device_mark(self, backend):
        """The completion marker on ``backend`` (None when the fence is not device work of it)."""
        return self._marks.get(id(backend))

    def __repr__(self) -> str:
        return f"<SyncFence {self._state.name}>"


class FencedExecutionCallback:
    """HAL IFencedExecutionCallback of one fenced execution."""

    def __init__(self, fence: SyncFence) -> None:
        self.fence = fence
        self._timings = (NO_TIMING, NO_TIMING)

    def get_execution_info(self, timeout: float | None = None) -> tuple[Timing, Timing]:
        """HAL ``getExecutionInfo``: (timing_launched, timing_fenced) once the execution finished.

        timing_launched runs from the ``execute_fenced`` call, timing_fenced from the moment every
        waited-for fence had signalled; both NO_TIMING unless timing was measured.  Waits for the
        execution (at most ``timeout`` seconds: then MISSED_DEADLINE_TRANSIENT); raises the
        execution's DriverError when it failed.
        """
        state = self.fence.wait(timeout)
        if state is FenceState.ACTIVE:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the fenced execution has not finished")
        if state is FenceState.ERROR:
            raise self.fence.error
        return self._timings

    def finish(self, timings: tuple[Timing, Timing] | None = None, error: DriverError | None = None) -> None:
        """Record the outcome and signal the fence (the driver's side)."""
        if timings is not None:
            self._timings = timings
        self.fence.signal(error)


def _check_timeout(timeout) -> None:
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise invalid(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")


def check_fences(wait_for) -> list[SyncFence]:
    """The ``wait_for`` argument of a fenced execution: SyncFence objects (INVALID_ARGUMENT otherwise)."""
    if wait_for is None:
        return []
    try:
        fences = list(wait_for)
    except TypeError:
        raise invalid(f"wait_for must be a sequence of SyncFence, got {wait_for!r}") from None
    for f in fences:
        if not isinstance(f, SyncFence):
            raise invalid(f"wait_for holds {f!r}, not a SyncFence")
    return fences
