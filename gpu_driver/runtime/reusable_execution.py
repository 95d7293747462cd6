"""ReusableExecution: the canonical IExecution — one request validated once, computed many times.

Creation validates the request and resolves its pools; :meth:`ReusableExecution.compute` and
:meth:`ReusableExecution.compute_fenced` then run it with execute_synchronously /
execute_fenced semantics.  A request with memory-domain pools is re-bound at every computation (its
buffers' state is checked each time, through the prepared model's binding cache).  One computation at a time per execution object.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Sequence

from ..errors import failure
from ..hal.model import Request
from ..hal.types import MeasureTiming, OutputShape, Timing
from .driver_buffer import DriverBuffer
from .execution_limits import ExecutionContext, check_deadline_argument, check_duration, check_not_expired, \
    execution_context
from .fenced_execution import FencedWork
from .request_binding import bind_request, captured_argument
from .sync_fence import FencedExecutionCallback, SyncFence, check_fences

if TYPE_CHECKING:
    from .prepared_model import PreparedModel


class ReusableExecution:
    """A reusable execution of one request on one prepared model (see the module docstring)."""

    def __init__(self, prepared_model: PreparedModel, request: Request, measure_timing: MeasureTiming,
                 loop_timeout_duration: int | None) -> None:
        self.prepared_model = prepared_model
        self._settings = execution_context(measure_timing, None, loop_timeout_duration)
        self._bound = bind_request(prepared_model, request)
        self._rebind = any(isinstance(p, DriverBuffer) for p in self._bound.pools)
        if self._rebind:  # the request as created, for re-binding (the client may edit its own objects)
            self._request = Request([captured_argument(a) for a in request.inputs],
                                    [captured_argument(a) for a in request.outputs], list(request.pools))
        self._busy = threading.Lock()

    def _begin(self, deadline) -> tuple:
        ctx = ExecutionContext(self._settings.measure, check_deadline_argument(deadline),
                               self._settings.loop_timeout_ns)
        if not self._busy.acquire(blocking=False):
            raise failure("the reusable execution is already computing (one computation at a time)")
        try:
            bound = self.prepared_model.bind(self._request) if self._rebind else self._bound
            bound.begin()
            check_not_expired(ctx.deadline_ns)
        except BaseException:
            self._busy.release()
            raise
        return bound, ctx

    def compute(self, deadline: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL ``IExecution::computeSynchronously``: run the request; (output shapes, timing)."""
        start = time.perf_counter_ns()
        bound, ctx = self._begin(deadline)
        try:
            return self.prepared_model.run_bound(bound, ctx, start)
        finally:
            self._busy.release()

    def compute_fenced(self, wait_for: Sequence[SyncFence] = (), deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence, FencedExecutionCallback]:
        """HAL ``IExecution::computeFenced``: as PreparedModel.execute_fenced for this request; the
        execution counts as computing until its fence signals."""
        start = time.perf_counter_ns()
        fences = check_fences(wait_for)
        after_ns = check_duration(timeout_after_fence, "timeout_after_fence")
        bound, ctx = self._begin(deadline)
        try:
            self.prepared_model.check_outputs_fully_specified(bound)
            work = FencedWork(bound, ctx, fences, after_ns, start)
            work.fence.add_done_callback(lambda _f: self._busy.release())
        except BaseException:
            self._busy.release()
            raise
        self.prepared_model.execute_fenced_work(work)
        return work.fence, work.callback
