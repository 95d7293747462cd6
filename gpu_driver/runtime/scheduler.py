"""ExecutionScheduler: a device's queue of asynchronous work, ordered by priority.

Asynchronous executions (``execute_asynchronously``) and fenced work that could not go straight to
the device are submitted here as jobs.  One worker thread per device takes the pending job of the
highest priority (the Priority its prepared model was prepared with), first come first served
within a priority, so a HIGH execution submitted behind a queue of LOW ones starts before them.
Each job's result arrives through a :class:`concurrent.futures.Future`.  Synchronous executions
(``execute_synchronously``, bursts, reusable executions' ``compute``) do not pass through here: they
run in the caller's thread, which waits for them anyway (see PreparedModel.execute_synchronously).
"""
from __future__ import annotations

import heapq
import itertools
import threading
from concurrent.futures import Future
from typing import Callable

from ..hal.types import Priority


class ExecutionScheduler:
    """One worker thread (started on first use) serving jobs by priority."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[int, int, Future, Callable]] = []
        self._seq = itertools.count()
        self._worker: threading.Thread | None = None

    def submit(self, job: Callable[[], object], priority: Priority = Priority.MEDIUM) -> Future:
        """Queue ``job``; the future holds its return value or the exception it raised.  A future
        cancelled before its job starts skips the job."""
        future: Future = Future()
        with self._cond:
            heapq.heappush(self._heap, (-int(priority), next(self._seq), future, job))
            if self._worker is None:
                self._worker = threading.Thread(target=self._serve, name=f"gpu_driver scheduler {self.name}",
                                                daemon=True)
                self._worker.start()
            self._cond.notify()
        return future

    @property
    def pending(self) -> int:
        """Jobs waiting to start."""
        with self._cond:
            return len(self._heap)

    def _serve(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._heap)
                _, _, future, job = heapq.heappop(self._heap)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = job()
            except BaseException as exc:  # delivered through the future
                future.set_exception(exc)
            else:
                future.set_result(result)
