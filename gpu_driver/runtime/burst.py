"""Burst: the HAL burst object (IBurstContext; canonical IBurst) of one prepared model.

A burst keeps request memories by *slot* (:meth:`Burst.cache_memory`, :meth:`Burst.free_memory`),
and its executions name their pools by slot.  It also keeps the validated binding of the requests
it has run: an execution of a request it has seen before (same arguments, same slots) skips request
validation and pool resolution.  One execution at a time per burst object.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Sequence

from ..errors import failure, invalid
from ..hal.model import Request
from ..hal.types import MeasureTiming, OutputShape, Timing
from ..memory import Memory
from .execution_limits import check_not_expired, execution_context
from .request_binding import bind_request, request_key

if TYPE_CHECKING:
    from .prepared_model import PreparedModel


class Burst:
    """An execution burst of one prepared model (see the module docstring)."""

    #: validated request bindings kept per burst (least recently used dropped first)
    MAX_BINDINGS = 8

    def __init__(self, prepared_model: PreparedModel) -> None:
        self.prepared_model = prepared_model
        self._lock = threading.Lock()     # the slot tables
        self._busy = threading.Lock()     # one execution at a time
        self._memories: dict[int, Memory] = {}
        self._slot_of: dict[int, int] = {}   # id(memory) -> slot
        self._next_slot = 0
        self._bindings: OrderedDict[tuple, object] = OrderedDict()

    def cache_memory(self, memory: Memory) -> int:
        """HAL burst memory cache (canonical ``IBurst::cacheMemory``): the slot that names ``memory`` in
        this burst's executions; a memory cached before keeps its slot."""
        if not isinstance(memory, Memory):
            raise invalid(f"cache_memory: {memory!r} is not a Memory")
        with self._lock:
            slot = self._slot_of.get(id(memory))
            if slot is None:
                slot = self._next_slot
                self._next_slot += 1
                self._memories[slot] = memory
                self._slot_of[id(memory)] = slot
            return slot

    def free_memory(self, slot: int) -> None:
        """HAL ``IBurstContext::freeMemory``: forget the memory of ``slot`` (INVALID_ARGUMENT if unknown)."""
        with self._lock:
            memory = self._memories.pop(slot, None) if isinstance(slot, int) else None
            if memory is None:
                raise invalid(f"free_memory: no memory cached in slot {slot!r}")
            del self._slot_of[id(memory)]
            for key in [k for k in self._bindings if slot in k[1]]:
                del self._bindings[key]

    def execute_synchronously(self, request: Request, memory_identifiers: Sequence[int],
                              measure_timing: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL burst execution (IBurstContext request; canonical ``IBurst::execute``): run ``request``
        whose pool i is the memory cached in slot ``memory_identifiers[i]`` (``request.pools`` is
        ignored); semantics of PreparedModel.execute_synchronously.  An unknown slot is
        INVALID_ARGUMENT; a second execution while one runs is GENERAL_FAILURE."""
        start = time.perf_counter_ns()
        if not self._busy.acquire(blocking=False):
            raise failure("the burst already has an execution in flight (one at a time per burst)")
        try:
            ctx = execution_context(measure_timing, deadline, loop_timeout_duration)
            try:
                slots = tuple(memory_identifiers)
            except TypeError:
                raise invalid(f"memory_identifiers must be a sequence of slots, got {memory_identifiers!r}") from None
            for slot in slots:
                if not isinstance(slot, int) or isinstance(slot, bool):
                    self._memory(slot)  # INVALID_ARGUMENT naming the slot
            if not isinstance(request, Request):
                raise invalid("request must be a gpu_driver.hal.Request")
            args = request_key(request)
            key = None if args is None else (args, slots)
            bound = None
            with self._lock:
                if key is not None:
                    bound = self._bindings.get(key)
                if bound is not None:
                    self._bindings.move_to_end(key)
                else:
                    pools = [self._memory(slot) for slot in slots]
            if bound is None:
                bound = bind_request(self.prepared_model, Request(request.inputs, request.outputs, pools))
                with self._lock:
                    if key is not None and all(slot in self._memories for slot in slots):
                        self._bindings[key] = bound
                        while len(self._bindings) > self.MAX_BINDINGS:
                            self._bindings.popitem(last=False)
            check_not_expired(ctx.deadline_ns)
            return self.prepared_model.run_bound(bound, ctx, start)
        finally:
            self._busy.release()

    def _memory(self, slot) -> Memory:
        memory = self._memories.get(slot) if isinstance(slot, int) and not isinstance(slot, bool) else None
        if memory is None:
            raise invalid(f"burst execution names slot {slot!r}, which holds no cached memory")
        return memory
