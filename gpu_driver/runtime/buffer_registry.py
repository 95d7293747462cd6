"""The token registry of one device's driver-managed buffers (the tokens request pools name)."""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from .driver_buffer import DriverBuffer


class BufferRegistry:
    """Tokens (> 0, unique per device) → live buffers; a buffer the client dropped stops resolving.

    :attr:`generation` changes whenever a token starts naming a buffer.  A token resolved while the
    generation was G therefore still names the same buffer while the generation is G and that buffer is
    alive (a buffer leaves the registry only by dying): a cached resolution is re-checked with one
    comparison and a weak reference.
    """

    def __init__(self) -> None:
        self._buffers: weakref.WeakValueDictionary[int, DriverBuffer] = weakref.WeakValueDictionary()
        self._next = itertools.count(1)
        self._lock = threading.Lock()
        self.generation = 0

    def new_token(self) -> int:
        with self._lock:
            return next(self._next)

    def add(self, buffer: DriverBuffer) -> None:
        with self._lock:
            self._buffers[buffer.token] = buffer
            self.generation += 1

    def get(self, token) -> DriverBuffer | None:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or token <= 0:
            return None
        with self._lock:
            return self._buffers.get(int(token))
