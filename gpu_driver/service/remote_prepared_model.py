"""A prepared model on a driver service, seen from a client, with every execution path of a local one.

:class:`RemotePreparedModel` is a :class:`~gpu_driver.runtime.prepared_model.PreparedModel` whose HAL
entry points run on the server: synchronous, asynchronous (a Future), fenced (a
:class:`RemoteSyncFence` signalled by the server's notification; the fences it waits for cross as
pipes or, when they are the server's own, by handle), bursts and reusable executions.  The numpy
convenience :meth:`PreparedModel.execute` works unchanged on top.  Request pools cross once per
connection (see gpu_driver.service.client); a burst's executions send only the request's arguments
and the pools' numbers.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future
from typing import Sequence

from ..errors import failure, invalid
from ..hal.model import Request
from ..hal.types import MeasureTiming, OutputShape, Timing
from ..runtime.burst import Burst
from ..runtime.prepared_model import PreparedModel
from ..runtime.reusable_execution import ReusableExecution
from ..runtime.sync_fence import FencedExecutionCallback, SyncFence, check_fences
from . import codec, wire


class RemoteSyncFence(SyncFence):
    """The fence of a fenced execution on the server; signalled when the server reports the outcome
    (ERROR with DEAD_OBJECT if the connection dies first)."""

    def __init__(self, connection) -> None:
        super().__init__()
        self.connection = connection
        self.handle: int | None = None

    def attach(self, handle: int) -> None:
        self.handle = handle
        weakref.finalize(self, self.connection.release_handle, handle)


def _fenced_call(connection, method: str, args) -> tuple[RemoteSyncFence, FencedExecutionCallback]:
    """Start a fenced execution on the server: the fence and callback its notification completes."""
    fence = RemoteSyncFence(connection)
    callback = FencedExecutionCallback(fence)

    def done(status: int, payload) -> None:
        if status:
            callback.finish(error=wire.error_from_payload(status, payload))
            return
        try:
            launched, fenced = payload
            callback.finish((codec.decode_timing(launched), codec.decode_timing(fenced)))
        except Exception as exc:  # a malformed notification
            callback.finish(error=failure(f"the driver service sent a malformed fence outcome: {exc}"))

    fence.attach(connection.call(method, args, completion=done))
    return fence, callback


class RemotePreparedModel(PreparedModel):
    """A prepared model on the server (see the module docstring)."""

    def __init__(self, device, model, handle: int, known_output_shapes: list[tuple | None]) -> None:
        super().__init__(device, model)
        self.handle = handle
        self.connection = device.connection
        self._known_output_shapes = known_output_shapes
        weakref.finalize(self, self.connection.release_handle, handle)

    def known_output_shape(self, output_index: int) -> tuple[int, ...] | None:
        """The output's shape as the server's prepared model knows it before execution."""
        return self._known_output_shapes[output_index]

    def _request_args(self, request: Request):
        args = codec.encode_arguments(request)
        return lambda out: (self.handle, args, out.request_pools(request), out.new_pools)

    # ---- HAL entry points --------------------------------------------------------------------------------
    def execute_synchronously(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                              deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL ``executeSynchronously_1_3`` on the server: (output shapes, timing)."""
        base = self._request_args(request)
        reply = self.connection.call("execute", lambda out: (*base(out), measure_timing, deadline,
                                                             loop_timeout_duration))
        return codec.decode_result(reply)

    def execute_asynchronously(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                               deadline: int | None = None, loop_timeout_duration: int | None = None) -> Future:
        """HAL ``execute_1_3`` on the server: a bad request raises here; the Future holds (output
        shapes, timing) or the execution's DriverError (DEAD_OBJECT if the service dies meanwhile).
        It counts as running from its launch (the server does not report when its job starts)."""
        future: Future = Future()
        future.set_running_or_notify_cancel()

        def done(status: int, payload) -> None:
            if status:
                future.set_exception(wire.error_from_payload(status, payload))
            else:
                future.set_result(codec.decode_result(payload))

        base = self._request_args(request)
        self.connection.call("execute_async", lambda out: (*base(out), measure_timing, deadline,
                                                           loop_timeout_duration), completion=done)
        return future

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence] = (),
                       measure_timing: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout_duration: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence, FencedExecutionCallback]:
        """HAL ``executeFenced`` on the server; ``wait_for`` may hold any SyncFence (the server's own
        fences by handle, others through pipes)."""
        fences = check_fences(wait_for)
        base = self._request_args(request)
        return _fenced_call(self.connection, "execute_fenced", lambda out: (
            *base(out), out.fences(fences), measure_timing, deadline, loop_timeout_duration, timeout_after_fence))

    def configure_execution_burst(self) -> "RemoteBurst":
        """HAL ``configureExecutionBurst``: a burst on the server."""
        return RemoteBurst(self, self.connection.call("burst_new", (self.handle,)))

    def create_reusable_execution(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                                  loop_timeout_duration: int | None = None) -> "RemoteReusableExecution":
        """HAL ``createReusableExecution``: the request is validated once, on the server."""
        base = self._request_args(request)
        handle = self.connection.call("reusable_new", lambda out: (*base(out), measure_timing, loop_timeout_duration))
        return RemoteReusableExecution(self, handle)

    def __repr__(self) -> str:
        return f"<RemotePreparedModel {self.handle} on {self.device.name}>"


class RemoteBurst(Burst):
    """A burst on the server.  Slots are kept here (as a local burst keeps them); each execution sends
    the request's arguments and the numbers of its pools, and the server's burst reuses the pools it
    mapped and the binding it validated."""

    def __init__(self, prepared_model: RemotePreparedModel, handle: int) -> None:
        super().__init__(prepared_model)
        self.handle = handle
        self.connection = prepared_model.connection
        weakref.finalize(self, self.connection.release_handle, handle)

    def free_memory(self, slot: int) -> None:
        """HAL ``IBurstContext::freeMemory``: forget the memory of ``slot`` here and on the server."""
        memory = self._memories.get(slot) if isinstance(slot, int) else None
        super().free_memory(slot)
        pool_id = self.connection.sent_pool_id(memory)
        if pool_id is not None:  # never sent: the server's burst never held it
            self.connection.call("burst_free", (self.handle, pool_id))

    def execute_synchronously(self, request: Request, memory_identifiers: Sequence[int],
                              measure_timing: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL burst execution on the server (semantics of Burst.execute_synchronously)."""
        if not self._busy.acquire(blocking=False):
            raise failure("the burst already has an execution in flight (one at a time per burst)")
        try:
            try:
                slots = tuple(memory_identifiers)
            except TypeError:
                raise invalid(f"memory_identifiers must be a sequence of slots, got {memory_identifiers!r}") from None
            with self._lock:
                memories = [self._memory(slot) for slot in slots]
            args = codec.encode_arguments(request)
            reply = self.connection.call("burst", lambda out: (
                self.handle, args, tuple(out.pool(m) for m in memories), out.new_pools, measure_timing, deadline,
                loop_timeout_duration))
            return codec.decode_result(reply)
        finally:
            self._busy.release()


class RemoteReusableExecution(ReusableExecution):
    """A reusable execution (canonical IExecution) on the server."""

    def __init__(self, prepared_model: RemotePreparedModel, handle: int) -> None:  # noqa: D107 (no local binding)
        self.prepared_model = prepared_model
        self.handle = handle
        self.connection = prepared_model.connection
        self._busy = threading.Lock()
        weakref.finalize(self, self.connection.release_handle, handle)

    def compute(self, deadline: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL ``IExecution::computeSynchronously`` on the server (one computation at a time: a second
        one meanwhile is GENERAL_FAILURE, as locally)."""
        if not self._busy.acquire(blocking=False):
            raise failure("the reusable execution is already computing (one computation at a time)")
        try:
            return codec.decode_result(self.connection.call("reusable_compute", (self.handle, deadline)))
        finally:
            self._busy.release()

    def compute_fenced(self, wait_for: Sequence[SyncFence] = (), deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence, FencedExecutionCallback]:
        """HAL ``IExecution::computeFenced`` on the server."""
        fences = check_fences(wait_for)
        return _fenced_call(self.connection, "reusable_fenced",
                            lambda out: (self.handle, out.fences(fences), deadline, timeout_after_fence))
