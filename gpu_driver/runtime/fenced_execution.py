"""FencedWork: one fenced execution in flight, from validation to its fence's signal.

A fenced execution waits for the fences it was given, runs, and signals its own fence (SIGNALED, or
ERROR with the reason) — interface.md §7.6.  Waiting never blocks a host thread: work starts from
the done-callbacks of the fences (:func:`when_signalled`), or is ordered behind them on the device
queue by an accelerator.  ``timeout_after_fence`` counts from the moment the last fence signalled;
the effective limit is the earlier of it and the deadline.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

from ..errors import DriverError, failure
from ..hal.types import boot_time_ns
from .execution_limits import ExecutionContext, check_not_late, execution_timing
from .sync_fence import FencedExecutionCallback, FenceState, SyncFence


def when_signalled(fences: Sequence[SyncFence], fn: Callable[[], object]) -> None:
    """Call ``fn()`` once every fence has left ACTIVE: at once if they all have, otherwise in the thread
    that signals the last one."""
    pending = [f for f in fences if f.get_state() is FenceState.ACTIVE]
    if not pending:
        fn()
        return
    lock, left = threading.Lock(), [len(pending)]

    def one_done(_fence: SyncFence) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            fn()

    for f in pending:
        f.add_done_callback(one_done)


class FencedWork:
    """A validated fenced execution: its request and settings, the fences it waits for, and the
    fence and callback it returns."""

    def __init__(self, bound, ctx: ExecutionContext, fences: list[SyncFence], after_ns: int | None,
                 start_ns: int) -> None:
        self.bound = bound
        self.ctx = ctx
        self.fences = fences
        self.after_ns = after_ns
        self.start_ns = start_ns
        self.fence = SyncFence()
        self.callback = FencedExecutionCallback(self.fence)

    def fence_error(self) -> DriverError | None:
        """GENERAL_FAILURE when a waited-for fence is in the ERROR state."""
        for f in self.fences:
            if f.get_state() is FenceState.ERROR:
                why = f.error.message if f.error is not None else "signalled with an error"
                return failure(f"a fence this execution waited for entered the error state: {why}")
        return None

    def begin(self) -> bool:
        """The waited-for fences allow the work to start now: apply ``timeout_after_fence``; False (with
        the fence put in ERROR) when a fence failed or the time limit has passed."""
        if self.after_ns is not None:
            limit = boot_time_ns() + self.after_ns - (time.perf_counter_ns() - self._fenced_ns())
            d = self.ctx.deadline_ns
            self.ctx.deadline_ns = limit if d is None else min(d, limit)
        error = self._problem("before the fenced execution started")
        if error is not None:
            self.fail(error)
            return False
        return True

    def _problem(self, when: str) -> DriverError | None:
        """Why the work must fail now: a waited-for fence in ERROR, or the time limit passed."""
        error = self.fence_error()
        if error is None:
            try:
                check_not_late(self.ctx.deadline_ns, when)
            except DriverError as exc:
                error = exc
        return error

    def _fenced_ns(self) -> int:
        """When the last waited-for fence signalled (the execute_fenced call if none had to)."""
        return max([self.start_ns] + [f.signaled_ns for f in self.fences if f.signaled_ns is not None])

    def run(self, body: Callable[[], int | None]) -> None:
        """Run ``body`` (which returns the device time in ns, or None) and finish: the fence signals."""
        try:
            device_ns = body()
        except DriverError as exc:
            self.fail(exc)
        except Exception as exc:  # device trouble
            self.fail(failure(f"fenced execution failed: {type(exc).__name__}: {exc}"))
        else:
            self.complete(device_ns)

    def complete(self, device_ns: int | None) -> None:
        """The work finished: signal the fence, or put it in ERROR when a device-ordered fence failed or
        the time limit passed meanwhile."""
        error = self._problem("during the fenced execution")
        if error is not None:
            self.fail(error)
            return
        measure, end = self.ctx.measure, time.perf_counter_ns()
        launched = execution_timing(measure, self.start_ns, device_ns, end)
        fenced = execution_timing(measure, self._fenced_ns(), device_ns, end)
        self.callback.finish((launched, fenced))

    def fail(self, error: DriverError) -> None:
        self.callback.finish(error=error)
