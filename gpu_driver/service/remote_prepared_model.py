"""A prepared model on a driver service, seen from a client, with every execution path of a local one.

:class:`RemotePreparedModel` is a :class:`~gpu_driver.runtime.prepared_model.PreparedModel` whose HAL
entry points run on the server: synchronous, asynchronous (a Future), fenced (a
:class:`RemoteSyncFence` signalled by the server's notification; the fences it waits for cross as
pipes or, when they are the server's own, by handle), bursts and reusable executions.  The numpy
convenience :meth:`PreparedModel.execute` works unchanged on top.  Request pools cross once per
connection (see gpu_driver.service.client).  A burst sends a request whole the first time, under a
binding number; its later executions of that request (same arguments, same slots) are one compact
message naming the binding (gpu_driver.service.session).
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from typing import Sequence

from ..errors import failure, invalid
from ..hal.model import Request
from ..hal.types import MeasureTiming, OutputShape, Timing
from ..runtime.burst import Burst
from ..runtime.prepared_model import PreparedModel
from ..runtime.request_binding import request_key
from ..runtime.reusable_execution import ReusableExecution
from ..runtime.sync_fence import FencedExecutionCallback, SyncFence, check_fences
from . import codec, wire
from .session import MAX_BURST_BINDINGS


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
        return self.connection.results.decode(reply)

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


def _compact_flags(measure_timing, deadline, loop_timeout_duration) -> int | None:
    """The flags of a compact burst execution with these settings; None when one of them does not fit
    (it then travels as it is and the server says what is wrong with it)."""
    if type(measure_timing) not in (MeasureTiming, bool, int) or measure_timing not in (0, 1):
        return None
    flags = wire.MEASURE if measure_timing else 0
    if deadline is not None:
        if not wire.fits_int64(deadline):
            return None
        flags |= wire.HAS_DEADLINE
    if loop_timeout_duration is not None:
        if not wire.fits_int64(loop_timeout_duration):
            return None
        flags |= wire.HAS_LOOP_TIMEOUT
    return flags


class RemoteBurst(Burst):
    """A burst on the server.  Slots are kept here (as a local burst keeps them).  An execution of a
    request this burst has not run (arguments, slots) sends the arguments and the pools' numbers and
    binds them to a number on the server (at most MAX_BURST_BINDINGS, least recently used replaced);
    an execution of a bound request is one compact message, and the server's burst reuses the pools it
    mapped and the binding it validated."""

    def __init__(self, prepared_model: RemotePreparedModel, handle: int) -> None:
        super().__init__(prepared_model)
        self.handle = handle
        self.connection = prepared_model.connection
        self._bound: OrderedDict[tuple, int] = OrderedDict()  # (request_key, slots) -> binding (under _lock)
        self._free_bindings = list(range(MAX_BURST_BINDINGS - 1, -1, -1))
        weakref.finalize(self, self.connection.release_handle, handle)

    def free_memory(self, slot: int) -> None:
        """HAL ``IBurstContext::freeMemory``: forget the memory of ``slot`` here and on the server."""
        memory = self._memories.get(slot) if isinstance(slot, int) else None
        super().free_memory(slot)
        with self._lock:
            for key in [k for k in self._bound if slot in k[1]]:
                self._free_bindings.append(self._bound.pop(key))
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
            args = request_key(request) if isinstance(request, Request) else None
            key = None if args is None else (args, slots)
            flags = 0 if measure_timing is MeasureTiming.NO and deadline is None and loop_timeout_duration is None \
                else _compact_flags(measure_timing, deadline, loop_timeout_duration)
            with self._lock:
                binding = None if key is None else self._bound.get(key)
                if binding is not None:
                    self._bound.move_to_end(key)
                else:
                    memories = [self._memory(slot) for slot in slots]
            if binding is not None and flags is not None:
                return self.connection.results.decode(self.connection.call_compact(
                    wire.burst_execute_frame, flags, self.handle, binding, deadline or 0, loop_timeout_duration or 0))
            if binding is not None:  # bound, with settings a compact message cannot carry
                with self._lock:
                    memories = [self._memory(slot) for slot in slots]
            new = None if key is None or binding is not None else self._new_binding()
            encoded = codec.encode_arguments(request)
            ran = False
            try:
                reply = self.connection.call("burst", lambda out: (
                    self.handle, encoded, tuple(out.pool(m) for m in memories), out.new_pools, measure_timing,
                    deadline, loop_timeout_duration, new))
                ran = True
            finally:
                if new is not None:
                    with self._lock:  # bound once it ran, unless a slot was freed meanwhile
                        if ran and all(slot in self._memories for slot in slots):
                            self._bound[key] = new
                        else:
                            self._free_bindings.append(new)
            return self.connection.results.decode(reply)
        finally:
            self._busy.release()

    def _new_binding(self) -> int:
        """A binding number for a request not bound yet (the least recently used one's when all are taken)."""
        with self._lock:
            if not self._free_bindings:
                self._free_bindings.append(self._bound.popitem(last=False)[1])
            return self._free_bindings.pop()


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
            return self.connection.results.decode(self.connection.call("reusable_compute", (self.handle, deadline)))
        finally:
            self._busy.release()

    def compute_fenced(self, wait_for: Sequence[SyncFence] = (), deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence, FencedExecutionCallback]:
        """HAL ``IExecution::computeFenced`` on the server."""
        fences = check_fences(wait_for)
        return _fenced_call(self.connection, "reusable_fenced",
                            lambda out: (self.handle, out.fences(fences), deadline, timeout_after_fence))
