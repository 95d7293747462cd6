"""The backend interface every accelerator runtime implements (OpenCL, CUDA, …).

A backend is one device of one runtime, with three small parts (design.md, tinygrad-style split):

- **compiler**: ``compile(source) -> bytes`` (a device binary) and ``dialect`` (which kernel prelude
  the source needs: "opencl" or "cuda");
- **program**: ``load(binary, names) -> Program`` (kernels by name), ``make_launch`` (arguments bound
  once, at preparation), ``launch`` (replay), events for device timing, ``finish``;
- **allocator**: ``alloc`` / ``view`` (a sub-range at a byte offset) and counted host↔device copies.

The compiler, planner and AcceleratorDevice only talk to this interface; adding a backend means one
new module here and a device provider — nothing in gpu_driver/compiler changes.
"""
from __future__ import annotations

import abc
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..hal.types import DeviceType


@dataclass
class TransferCounters:
    """Host↔device traffic of one backend (bytes and number of copies per direction)."""

    h2d_bytes: int = 0
    h2d_count: int = 0
    d2h_bytes: int = 0
    d2h_count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_h2d(self, n: int) -> None:
        with self._lock:
            self.h2d_bytes += int(n)
            self.h2d_count += 1

    def add_d2h(self, n: int) -> None:
        with self._lock:
            self.d2h_bytes += int(n)
            self.d2h_count += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"h2d_bytes": self.h2d_bytes, "h2d_count": self.h2d_count,
                    "d2h_bytes": self.d2h_bytes, "d2h_count": self.d2h_count}

    def reset(self) -> None:
        with self._lock:
            self.h2d_bytes = self.h2d_count = self.d2h_bytes = self.d2h_count = 0


@dataclass
class DeviceBuffer:
    """A device allocation or a view of one. ``handle`` is the runtime's object (cl.Buffer, cupy memory)."""

    handle: Any
    nbytes: int
    offset: int = 0           # byte offset inside ``base`` (0 for an allocation)
    base: "DeviceBuffer | None" = None


class Program:
    """A loaded binary: kernels by name (the runtime object behind each)."""

    def __init__(self, binary: bytes, kernels: dict[str, Any]):
        self.binary = binary
        self.kernels = kernels


class Backend(abc.ABC):
    """One device of one runtime.  All enqueues go to one in-order queue/stream (ordering is program order)."""

    #: runtime name: "opencl", "cuda"
    runtime: str = ""
    #: kernel dialect of the sources ``compile`` accepts: "opencl" or "cuda"
    dialect: str = ""
    #: minimal alignment of a view's offset (the memory planner aligns to 256 bytes)
    alignment: int = 256

    def __init__(self) -> None:
        self.counters = TransferCounters()

    # ---- description ---------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def device_name(self) -> str:
        """Human-readable device name."""

    @property
    @abc.abstractmethod
    def device_type(self) -> DeviceType:
        """HAL device type (GPU / CPU / ACCELERATOR)."""

    @property
    @abc.abstractmethod
    def runtime_version(self) -> str:
        """Runtime / driver / platform versions, for the HAL version string and cache keys."""

    @property
    def features(self) -> frozenset:
        """Optional device features kernels may need: "fp64" (double arithmetic)."""
        return frozenset()

    @property
    def is_gpu(self) -> bool:
        return self.device_type == DeviceType.GPU

    # ---- compiler ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def compile(self, source: str) -> bytes:
        """Compile one program source (prelude included) to a device binary.  GENERAL_FAILURE on error."""

    # ---- program -------------------------------------------------------------------------------------
    @abc.abstractmethod
    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        """Load a binary made by ``compile`` (maybe in an earlier process); kernels ``names`` by name."""

    @abc.abstractmethod
    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> Any:
        """A launch with its arguments bound now (once); replayed by :meth:`launch`."""

    @abc.abstractmethod
    def launch(self, launch: Any) -> Any:
        """Enqueue a prepared launch; returns a runtime event or None."""

    def enqueue_all(self, launches: Sequence[Any], timed: bool = False) -> Any:
        """Enqueue every launch in order without waiting; returns timing marks for :meth:`elapsed_ns`."""
        for launch in launches:
            self.launch(launch)
        return None

    def elapsed_ns(self, marks: Any) -> int | None:
        """Device time between the marks of :meth:`enqueue_all`, once the work has finished (or None)."""
        return None

    def launch_all(self, launches: Sequence[Any], timed: bool = False) -> int | None:
        """Enqueue every launch in order and wait; with ``timed`` return the device time in ns."""
        marks = self.enqueue_all(launches, timed)
        self.finish()
        return self.elapsed_ns(marks) if timed else None

    @abc.abstractmethod
    def finish(self, spin_ns: int = 0) -> None:
        """Wait until everything enqueued so far has completed.

        ``spin_ns`` > 0: first poll for completion for up to that long before blocking.  A blocked
        host thread must be woken when the device finishes (tens of µs on an idle machine); polling
        avoids that for short work, at the price of one busy core for at most ``spin_ns``."""

    # ---- allocator -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def alloc(self, nbytes: int) -> DeviceBuffer:
        """A device buffer of at least ``nbytes`` (≥ 1)."""

    @abc.abstractmethod
    def view(self, buffer: DeviceBuffer, offset: int, nbytes: int) -> DeviceBuffer:
        """A buffer naming ``[offset, offset + nbytes)`` of ``buffer`` (offset aligned to ``alignment``)."""

    @abc.abstractmethod
    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        ...

    @abc.abstractmethod
    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> None:
        ...

    @abc.abstractmethod
    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        """Device-to-device copy (enqueued in order, not counted as a transfer)."""

    def upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        """Host → device (counted).  ``blocking=False`` only enqueues it: ``data`` must then stay alive
        and unchanged until :meth:`finish` (every wait on the host is a worker wake-up: see finish)."""
        data = np.ascontiguousarray(data)
        if data.nbytes == 0:
            return
        if data.nbytes > buffer.nbytes:
            raise ValueError(f"upload of {data.nbytes} bytes into a {buffer.nbytes}-byte buffer")
        self._upload(buffer, data, blocking)
        self.counters.add_h2d(data.nbytes)

    def download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> np.ndarray:
        """Device → host into the contiguous array ``out`` (counted).  ``blocking=False`` only enqueues
        it: ``out`` holds the data after :meth:`finish`."""
        if out.nbytes == 0:
            return out
        if out.nbytes > buffer.nbytes:
            raise ValueError(f"download of {out.nbytes} bytes from a {buffer.nbytes}-byte buffer")
        self._download(buffer, out, blocking)
        self.counters.add_d2h(out.nbytes)
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device_name}>"
