"""The Memory family: pools that carry constants and request data (interface.md §4, §7.1).

Every pool exposes its byte size, a writable byte view for host access, the file descriptors that
let it cross a process boundary, and a description for :mod:`gpu_driver.hal.serialize`.
"""
from __future__ import annotations

import abc
from typing import Any, Callable

import numpy as np

_FACTORIES: dict[str, Callable[[dict], "Memory"]] = {}


def register_memory_kind(kind: str, factory: Callable[[dict], "Memory"]) -> None:
    _FACTORIES[kind] = factory


def memory_from_description(desc: dict[str, Any]) -> "Memory":
    """Rebuild a pool from :meth:`Memory.describe` output (with ``desc['fds']`` holding real fds)."""
    from ..errors import invalid

    factory = _FACTORIES.get(desc.get("kind"))
    if factory is None:
        raise invalid(f"unknown memory kind {desc.get('kind')!r}")
    return factory(desc)


class Memory(abc.ABC):
    """A memory pool (HAL ``hidl_memory`` / canonical ``Memory``)."""

    #: HIDL name of the memory kind: "ashmem", "mmap_fd", "hardware_buffer_blob", "hardware_buffer".
    kind: str = ""

    @property
    @abc.abstractmethod
    def size(self) -> int:
        """Size of the pool in bytes."""

    @abc.abstractmethod
    def view(self) -> memoryview:
        """A byte view of the whole pool for host access (writable unless mapped read-only)."""

    def fds(self) -> list[int]:
        """File descriptors that back this pool (empty when it cannot cross a process boundary)."""
        return []

    def describe(self) -> dict[str, Any]:
        """A msgpack-able description, without the fds (see hal.serialize)."""
        return {"kind": self.kind, "size": self.size}

    @property
    def writable(self) -> bool:
        return not self.view().readonly

    def array(self, dtype, offset: int = 0, count: int = -1) -> np.ndarray:
        """A numpy view of ``count`` elements of ``dtype`` starting at byte ``offset``."""
        return np.frombuffer(self.view(), dtype=dtype, count=count, offset=offset)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.view()[offset:offset + length])

    def write(self, offset: int, data) -> None:
        mv = memoryview(data).cast("B")
        self.view()[offset:offset + mv.nbytes] = mv

    def close(self) -> None:  # pragma: no cover - overridden where resources are held
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
