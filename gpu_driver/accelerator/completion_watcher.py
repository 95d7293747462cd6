"""CompletionWatcher: finishes an accelerator's fenced executions as the device completes them.

Fenced work is only enqueued by the thread that submits it; its completion marker goes to this
watcher, whose one thread (per device, started on first use) waits for the markers in queue order
and runs each one's continuation: status check, delivery of what needs the host, the fence's signal.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)


class CompletionWatcher:
    def __init__(self, launcher, name: str) -> None:
        self.launcher = launcher
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def watch(self, marker: Any, continuation: Callable[[Exception | None], None], launcher=None) -> None:
        """Run ``continuation(error)`` on the watcher thread once ``marker`` has completed (``error``:
        what waiting for it raised, or None); ``launcher``: the one that made the marker (a lane's),
        by default the device's."""
        self._queue.put((marker, continuation, launcher or self.launcher))
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._serve, daemon=True,
                                                    name=f"gpu_driver completions {self.name}")
                    self._thread.start()

    def _serve(self) -> None:
        while True:
            marker, continuation, launcher = self._queue.get()
            try:
                complete(marker, continuation, launcher)
            except Exception:
                log.exception("completing fenced work on %s failed", self.name)


def complete(marker: Any, continuation: Callable[[Exception | None], None], launcher) -> None:
    """Wait for ``marker`` (made by ``launcher``) and run ``continuation(error)``, ``error`` being
    what waiting raised, or None."""
    error = None
    try:
        launcher.wait_marker(marker)
    except Exception as exc:  # the continuation reports it through its fence
        error = exc
    continuation(error)
