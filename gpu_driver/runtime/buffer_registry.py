"""The token registry of one device's driver-managed buffers (the tokens request pools name)."""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from .driver_buffer import DriverBuffer


class BufferRegistry:
    """Tokens (> 0, unique per device) → live buffers; a buffer the client dropped stops resolving."""

    def __init__(self) -> None:
        self._buffers: weakref.WeakValueDictionary[int, DriverBuffer] = weakref.WeakValueDictionary()
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def new_token(self) -> int:
        with self._lock:
            return next(self._next)

    def add(self, buffer: DriverBuffer) -> None:
        with self._lock:
            self._buffers[buffer.token] = buffer

    def get(self, token) -> DriverBuffer | None:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or token <= 0:
            return None
        with self._lock:
            return self._buffers.get(int(token))
