"""The parts every accelerator runtime (OpenCL, CUDA, …) implements, in tinygrad's runtime split.

- :class:`Compiler`: ``compile(source) -> bytes`` (a device binary) and the :attr:`Compiler.prelude`
  its sources start with (the shared kernel dialect mapped to its language);
- :class:`Allocator`: ``alloc``, ``view`` (a sub-range at a byte offset), counted ``upload`` /
  ``download`` and device-to-device ``copy``;
- :class:`Launcher`: ``load(binary, names) -> Program``, ``make_launch`` (arguments bound once, at
  preparation), ``enqueue`` (replay), ``finish`` (wait) and ``elapsed_ns`` (device time);
- :class:`LaunchTuning`: the local size of each shape of parallel work (compiler.ir.Work).

A :class:`BackendDevice` is one device of one runtime: its description and those four parts, and
its *lanes*: a lane is a second set of the four parts on the same device memory that runs work
differently (PoCL's inline lane runs small models in the calling thread); the compiler picks one
per model (:meth:`BackendDevice.lane_for`) and the compiled model names it.  The
compiler pipeline, the executable and AcceleratorDevice only talk to these parts; adding a backend
means one new module here and its line in gpu_driver/runtime/discovery.py — nothing in
gpu_driver/compiler changes.
"""
from __future__ import annotations

import abc
import functools
import importlib.resources
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..compiler.ir import GROUP_TILE_ITEMS, Work
from ..hal.types import DeviceType

#: dialect-neutral helper headers (in opencl_kernels/) appended to every prelude, in this order
COMMON_HEADERS = ("fixed_point.h", "activations.h", "nms.h", "pooling.h", "depthwise.h")


@dataclass
class TransferCounters:
    """Host↔device traffic of one allocator (bytes and number of copies per direction)."""

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
    """An allocation or a view of one.  ``handle`` is the runtime's object (cl.Buffer, cupy array, numpy array)."""

    handle: Any
    nbytes: int
    offset: int = 0           # byte offset inside ``base`` (0 for an allocation)
    base: "DeviceBuffer | None" = None


# ---- compiler ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def dialect_prelude(package: str, name: str) -> str:
    """The prelude file ``name`` of kernel folder ``package`` followed by the COMMON_HEADERS."""
    files = importlib.resources.files("opencl_kernels")
    common = "\n".join(files.joinpath(h).read_text() for h in COMMON_HEADERS)
    return importlib.resources.files(package).joinpath(name).read_text() + "\n" + common


class Compiler(abc.ABC):
    """Program source → device binary, for one kernel language."""

    #: the language the shared dialect is compiled as: "opencl" or "cuda"
    dialect: str = ""
    #: (kernel folder, file) of the prelude that maps the shared dialect to that language
    prelude_file: tuple[str, str] = ("", "")

    @property
    def prelude(self) -> str:
        """The text every program source starts with (codegen puts it first)."""
        return dialect_prelude(*self.prelude_file)

    @abc.abstractmethod
    def compile(self, source: str) -> bytes:
        """Compile one program source (prelude included) to a device binary.  GENERAL_FAILURE on error."""


# ---- allocator ---------------------------------------------------------------------------------------
class Allocator(abc.ABC):
    """Device memory: allocations, views at byte offsets, counted host↔device copies."""

    #: alignment of a view's byte offset (the memory planner aligns to at least 256 bytes)
    alignment: int = 256

    def __init__(self) -> None:
        self.counters = TransferCounters()

    @abc.abstractmethod
    def alloc(self, nbytes: int) -> DeviceBuffer:
        """A buffer of at least ``nbytes`` (≥ 1)."""

    def view(self, buffer: DeviceBuffer, offset: int, nbytes: int) -> DeviceBuffer:
        """A buffer naming ``[offset, offset + nbytes)`` of ``buffer`` (offset aligned to ``alignment``);
        it shares the allocation's memory, and a view of a whole allocation is the allocation."""
        root = buffer.base or buffer
        start, nbytes = buffer.offset + int(offset), max(int(nbytes), 1)
        if start == 0 and nbytes == root.nbytes:
            return root
        if start % self.alignment:
            raise ValueError(f"view offset {start} not aligned to {self.alignment}")
        if start + nbytes > root.nbytes:
            raise ValueError(f"view [{start}, {start + nbytes}) outside a {root.nbytes}-byte buffer")
        return DeviceBuffer(self._sub_range(root.handle, start, nbytes), nbytes, start, root)

    def _sub_range(self, handle: Any, offset: int, nbytes: int) -> Any:
        """The runtime object naming ``nbytes`` at ``offset`` of the allocation ``handle`` (a slice)."""
        return handle[offset:offset + nbytes]

    def upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        """Host → device (counted).  ``blocking=False`` only enqueues it: ``data`` must then stay alive
        and unchanged until the launcher's ``finish`` (every host wait is a worker wake-up)."""
        data = np.ascontiguousarray(data)
        if data.nbytes == 0:
            return
        if data.nbytes > buffer.nbytes:
            raise ValueError(f"upload of {data.nbytes} bytes into a {buffer.nbytes}-byte buffer")
        self._upload(buffer, data, blocking)
        self.counters.add_h2d(data.nbytes)

    def download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> np.ndarray:
        """Device → host into the contiguous array ``out`` (counted).  ``blocking=False`` only enqueues
        it: ``out`` holds the data after the launcher's ``finish``."""
        if out.nbytes == 0:
            return out
        if out.nbytes > buffer.nbytes:
            raise ValueError(f"download of {out.nbytes} bytes from a {buffer.nbytes}-byte buffer")
        self._download(buffer, out, blocking)
        self.counters.add_d2h(out.nbytes)
        return out

    @abc.abstractmethod
    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool) -> None:
        """Copy the contiguous ``data`` to the start of ``buffer``."""

    @abc.abstractmethod
    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool) -> None:
        """Copy the start of ``buffer`` into the contiguous ``out``."""

    @abc.abstractmethod
    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        """``nbytes`` from the start of ``src`` to the start of ``dst`` (enqueued in order, not counted)."""


# ---- launcher ----------------------------------------------------------------------------------------
@dataclass
class Program:
    """A loaded binary: the runtime's program or module object, and its kernel functions by name
    where the runtime has one per program (OpenCL makes a kernel object per launch instead)."""

    handle: Any
    kernels: dict[str, Any] = field(default_factory=dict)


class Launcher(abc.ABC):
    """Loads binaries and replays bound launches, all on one in-order queue/stream (program order)."""

    @abc.abstractmethod
    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        """Load a binary made by the compiler (maybe in an earlier process) with kernels ``names``."""

    @abc.abstractmethod
    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> Any:
        """A launch of kernel ``name`` with its arguments bound now (once), replayed by :meth:`enqueue`;
        ``local_size`` None lets the runtime pick."""

    @abc.abstractmethod
    def enqueue(self, launches: Sequence[Any], timed: bool = False) -> Any:
        """Enqueue every launch in order without waiting; returns timing marks for :meth:`elapsed_ns`."""

    @abc.abstractmethod
    def elapsed_ns(self, marks: Any) -> int | None:
        """Device time between the marks of :meth:`enqueue`, once the work has finished (or None)."""

    @abc.abstractmethod
    def finish(self, spin_ns: int = 0) -> None:
        """Wait until everything enqueued so far (launches and copies) has completed.

        ``spin_ns`` > 0: first poll for completion for up to that long before blocking.  A blocked
        host thread must be woken when the device finishes (tens of µs on an idle machine); polling
        avoids that for short work, at the price of one busy core for at most ``spin_ns``."""

    @abc.abstractmethod
    def rebind(self, launch: Any, position: int, buffer: DeviceBuffer) -> None:
        """Make argument ``position`` of a bound launch ``buffer`` from the next enqueue on (work
        already enqueued keeps the arguments it was enqueued with)."""

    @abc.abstractmethod
    def marker(self) -> Any:
        """Enqueue a completion marker (and submit the queue to the device without waiting): it
        completes when everything enqueued before it has."""

    @abc.abstractmethod
    def wait_marker(self, marker: Any) -> None:
        """Block until ``marker`` has completed."""


# ---- launch tuning -----------------------------------------------------------------------------------
class LaunchTuning:
    """The local (work-group / block) size of each shape of parallel work (compiler.ir.Work), resolved
    at compilation into the launch plan.  A backend states its numbers in these attributes."""

    #: Work.ELEMENTS: groups of this many work items (a shorter loop: :meth:`default`)
    elements: int
    #: Work.ROWS: groups of this many rows (fewer rows: :meth:`default`)
    rows: int
    #: Work.REGISTER_TILES: at most this many (channel blocks, pixel blocks) per group
    register_tiles: tuple[int, int]
    #: ... with fewer pixel blocks per group (halved, down to 1) while a launch has fewer groups than this
    fewest_groups: int = 16
    #: Work.CHANNEL_LANES: (widest, step): groups of the widest multiple of step up to widest that
    #: divides the channel count (none divides: :meth:`default`)
    channel_lanes: tuple[int, int]
    #: floats per vector register of the device (a CPU's: 16 with AVX-512, 8 with AVX2): register
    #: tiles are sized to the register file it implies (ops/gemm.py)
    float_lanes: int = 16
    #: a FLOATV of ``float_lanes`` is one register of a CPU device (PoCL with AVX-512): a tile of 16
    #: channels then costs what one of 8 or 4 does, so lowerings take the fewest channel blocks
    one_register_vectors: bool = False
    #: a launch of fewer work items than this is split finer where a lowering can (pooling.cl's
    #: channel blocks, down to one channel per work item): a GPU needs many threads busy; a CPU
    #: device sets 1 (its few cores each run whole work groups, and a work item reading consecutive
    #: channels beats several reading every C-th value)
    min_work_items: int = 256
    #: channels per work item of conv_depthwise_vector.cl at most (16, 8 or 4): one 16-lane FLOATV is a
    #: 512-bit AVX-512 vector on PoCL (measured ~1.12x over 8 lanes on MobileNet's depthwise layers); a
    #: GPU wants more, thinner work items
    depthwise_lanes: int = 16
    #: the device multiplies matrices best in work groups staging tiles through local memory (a GPU:
    #: ops/gemm.py's group tiles); a CPU device keeps one register tile per work item
    group_gemm: bool = False
    #: each work item of a Work.CHUNKS launch is a work group of its own: a CPU device, whose cores each
    #: run whole work groups (PoCL put the 16 chunks of a global pool in one group, run by one core)
    chunks_alone: bool = False
    #: compute units (GPU multiprocessors): a launch of fewer work groups leaves some idle
    compute_units: int = 1
    #: consecutive elements per work item of an element-wise kernel (LoweringContext.emit_elements): a
    #: CPU device vectorises the run's loop (PoCL, 2^18-element ADD: 55-66 µs in runs of 64 against
    #: 180-310 µs one element per work item); a GPU keeps neighbouring threads on neighbouring elements
    element_run: int = 1

    def choose_gpu_kernels(self, compute_units: int) -> None:
        """Take a GPU's kernel choices (GPU_KERNEL_CHOICES) for a device of ``compute_units``: what a
        GPU backend does, and what runs the GPU's kernels on a CPU device (tests, conformance)."""
        for name, value in GPU_KERNEL_CHOICES.items():
            setattr(self, name, value)
        self.compute_units = compute_units

    def local_size(self, work: Work, global_size: Sequence[int]) -> tuple[int, ...] | None:
        """The local size of a launch of ``global_size`` work items shaped as ``work``."""
        size = tuple(max(1, int(g)) for g in global_size)
        if work is Work.ELEMENTS or work is Work.ROWS:
            width = self.elements if work is Work.ELEMENTS else self.rows
            if size[0] >= width:
                return (width,)
        elif work is Work.REGISTER_TILES:
            channels, pixels = self.register_tiles
            channels = min(size[0], channels)
            pixels = min(size[1], pixels)
            # fewer pixel blocks per group where the launch would otherwise have few groups to share out
            # (a 7-group GEMM ran 4 groups on one PoCL worker and 3 on the other)
            while pixels > 1 and _groups(size, (channels, pixels)) < self.fewest_groups:
                pixels //= 2
            return (channels, pixels, 1)
        elif work is Work.GROUP_TILES:
            return GROUP_TILE_ITEMS
        elif work is Work.CHUNKS and self.chunks_alone:
            return (1,) * len(size)
        elif work is Work.CHANNEL_LANES:
            widest, step = self.channel_lanes
            lane = next((c for c in range(widest, step - 1, -step) if size[0] % c == 0), None)
            if lane:
                return (lane, 1, 1)
        return self.default(size)

    def default(self, global_size: tuple[int, ...]) -> tuple[int, ...] | None:
        """The local size of work with no stated preference; None lets the runtime pick."""
        return None


def _groups(size: Sequence[int], local: Sequence[int]) -> int:
    """The work groups of a launch of ``size`` work items in groups of ``local`` (the last axis whole)."""
    return math.prod(-(-g // l) for g, l in zip(size, local)) * math.prod(size[len(local):])


#: the kernel choices of a GPU (LaunchTuning attributes): matrix products and long rows reduced in
#: work groups, thin depthwise work items
GPU_KERNEL_CHOICES = {"group_gemm": True, "min_work_items": 256, "depthwise_lanes": 4, "element_run": 1,
                      "one_register_vectors": False}


# ---- a backend device --------------------------------------------------------------------------------
class BackendDevice(abc.ABC):
    """One device of one runtime: what it is, and its compiler, allocator, launcher and launch tuning."""

    #: runtime name: "opencl", "cuda"
    runtime: str = ""

    def __init__(self, compiler: Compiler, allocator: Allocator, launcher: Launcher, tuning: LaunchTuning):
        self.compiler = compiler
        self.allocator = allocator
        self.launcher = launcher
        self.tuning = tuning

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

    #: the commands of this backend run in the thread that enqueues them (no device-side queue):
    #: asynchronous work must then be enqueued from another thread
    runs_in_caller: bool = False

    def lane(self, name: str) -> "BackendDevice":
        """The backend that runs models compiled for lane ``name`` ("" = this one); its buffers are
        this device's (allocations of one lane are valid in every other)."""
        if name:
            raise ValueError(f"{self.device_name} has no {name!r} lane")
        return self

    def lane_for(self, work: int, kernels: int = 0) -> str:
        """The lane a model of ``work`` units (compiler.cost.estimated_work) in about ``kernels``
        kernel launches should run on."""
        return ""

    def host_lane(self) -> "BackendDevice":
        """The lane for tiny work the host waits for at once (a row count, a condition's byte)."""
        return self.lane(self.lane_for(0))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device_name}>"
