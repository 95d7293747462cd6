"""InlineQueue: the in-order queue of a backend lane whose commands run in the thread that enqueues
them (PoCL's inline lane).

Fenced work on such a lane would run inside ``execute_fenced``; instead one worker thread per lane
takes it in submission order, which is what an in-order device queue gives the other lanes: work
waiting only for fences of earlier work on this queue is submitted at once and runs after it; any
other fence defers the submission until it signals (without a waiting thread).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..runtime.fenced_execution import FencedWork, when_signalled


class InlineQueue:
    def __init__(self, lane, name: str) -> None:
        self.lane = lane
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"gpu_driver inline {name}")
        self._lock = threading.Lock()  # a fence's mark and its work's place in the queue go together

    def submit(self, work: FencedWork, job: Callable[[FencedWork], None]) -> None:
        """Run ``job(work)`` on the worker once the fences ``work`` waits for allow it."""
        with self._lock:
            waiting = [f for f in work.fences if f.device_mark(self.lane) is None]
            if not waiting:
                self._enqueue(work, job)
                return
        when_signalled(waiting, lambda: self._submit_now(work, job))

    def _submit_now(self, work: FencedWork, job) -> None:
        with self._lock:
            self._enqueue(work, job)

    def _enqueue(self, work: FencedWork, job) -> None:
        work.fence.set_device_mark(self.lane, self)  # later work on this lane may follow it in the queue
        self._executor.submit(job, work)
