"""CUDA backend (CuPy): NVRTC → cubin for the device's architecture, modules loaded from the cubin,
one stream per device, cupy events for device time.  A launch list enqueued again with the same
arguments is recorded once as a CUDA graph (stream capture) and then replayed with one launch call:
the repeated executions of a burst, a reusable execution or a plain request cost one graph launch.

cupy is imported lazily and failures are tolerated: without CuPy or a GPU :func:`discover` finds no
device.  :class:`CudaCompiler` needs only NVRTC (no GPU), so CI can check that kernels compile.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Sequence

import numpy as np

from ..errors import failure
from ..hal.types import DeviceType
from .base import Allocator, BackendDevice, Compiler, DeviceBuffer, Launcher, LaunchTuning, Program

RANK_CUDA = 300

log = logging.getLogger(__name__)


def _nvrtc():
    from cupy_backends.cuda.libs import nvrtc  # lazy: optional dependency
    return nvrtc


def nvrtc_version() -> str:
    try:
        major, minor = _nvrtc().getVersion()
        return f"{major}.{minor}"
    except Exception:
        return "unavailable"


def compile_source(source: str, arch: str = "sm_80", name: str = "program.cu",
                   options: Sequence[str] = ()) -> bytes:
    """NVRTC: CUDA source → cubin for ``arch`` ("sm_80", "sm_90", or "80").  Works without a GPU."""
    nvrtc = _nvrtc()
    if not arch.startswith(("sm_", "compute_")):
        arch = f"sm_{arch}"
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", "--std=c++14", *options])
        except Exception as exc:
            try:
                log = nvrtc.getProgramLog(prog)
            except Exception:
                log = ""
            raise failure(f"NVRTC compilation for {arch} failed: {exc}\n{log}") from None
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        try:
            nvrtc.destroyProgram(prog)
        except Exception:
            pass


class CudaCompiler(Compiler):
    """NVRTC → cubin for one architecture; needs no GPU (only the NVRTC library)."""

    dialect = "cuda"
    prelude_file = ("cuda_kernels", "prelude.cuh")

    def __init__(self, arch: str = "sm_80"):
        self.arch = arch

    def compile(self, source: str) -> bytes:
        return compile_source(source, self.arch)


class CudaAllocator(Allocator):
    """cupy uint8 arrays on one device; views are slices of them."""

    alignment = 256

    def __init__(self, cupy, device, stream, stream_lock):
        super().__init__()
        self.cupy, self.device, self.stream = cupy, device, stream
        self.stream_lock = stream_lock   # shared with the launcher: nothing joins a graph being recorded

    def alloc(self, nbytes: int) -> DeviceBuffer:
        n = max(int(nbytes), 1)
        try:
            with self.device:
                arr = self.cupy.empty(n, dtype=self.cupy.uint8)
        except Exception as exc:
            raise failure(f"CUDA allocation of {n} bytes failed: {exc}") from None
        return DeviceBuffer(arr, n)

    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool) -> None:
        # pageable host memory: cupy's copy is synchronous with respect to the host either way
        with self.device, self.stream_lock:
            raw = data.reshape(-1).view(np.uint8)
            buffer.handle[:raw.size].set(raw, stream=self.stream)
            if blocking:
                self.stream.synchronize()

    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool) -> None:
        with self.device, self.stream_lock:
            raw = out.reshape(-1).view(np.uint8)
            buffer.handle[:raw.size].get(stream=self.stream, out=raw, blocking=blocking)
            if blocking:
                self.stream.synchronize()

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            with self.device, self.stream_lock, self.stream:
                dst.handle[:nbytes] = src.handle[:nbytes]


class CudaLaunch:
    """One bound kernel launch.  ``args`` is interned per argument set (see :meth:`CudaLauncher.rebind`),
    so a launch list bound as before has the same argument tuples as before."""

    __slots__ = ("function", "grid", "block", "args", "arg_sets")

    def __init__(self, function, grid, block, args):
        self.function = function
        self.grid = grid
        self.block = block
        self.args = args
        self.arg_sets = {tuple(map(id, args)): args}   # the argument tuples this launch has had


def default_block(global_size: Sequence[int]) -> tuple[int, ...]:
    """The block of a grid with no stated preference: 256 threads in 1-D, 32 x 8 in 2-D, 16 x 4 x 4 in 3-D."""
    most = {1: (256,), 2: (32, 8)}.get(len(global_size), (16, 4, 4))
    return tuple(min(m, max(1, int(g))) for m, g in zip(most, global_size))


class LaunchGraphs:
    """CUDA graphs of launch lists: a list enqueued ``record_after`` times with the same argument tuples
    is captured from the stream once, then replayed.  The key is the ids of the launches and of their
    argument tuples (interned per launch, so a launch bound back to earlier arguments repeats its key).
    An entry keeps its launches and tuples alive (the ids cannot be reused while it is cached; at most
    ``capacity`` entries keep memory of released models alive)."""

    def __init__(self, record_after: int = 2, capacity: int = 16):
        self.record_after, self.capacity = record_after, capacity
        self._entries: OrderedDict[tuple, list] = OrderedDict()   # key -> [uses, graph, pinned objects]
        self._lock = threading.Lock()
        self.enabled = True
        self.recorded = self.replayed = 0

    @staticmethod
    def key(launches: Sequence[CudaLaunch]) -> tuple:
        return tuple([i for launch in launches for i in (id(launch), id(launch.args))])

    def lookup(self, key: tuple, launches: Sequence[CudaLaunch]) -> tuple[object | None, bool]:
        """(the graph of ``key`` or None, whether to record it now)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = [0, None, [(launch, launch.args) for launch in launches]]
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            self._entries.move_to_end(key)
            entry[0] += 1
            return entry[1], entry[1] is None and entry[0] >= self.record_after

    def store(self, key: tuple, graph) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry[1] = graph
                self.recorded += 1


class CudaLauncher(Launcher):
    """Modules loaded from cubins, launches on one stream, cupy events as timing marks; repeated launch
    lists replayed as CUDA graphs (:class:`LaunchGraphs`)."""

    #: interned argument tuples kept per launch (a ping-pong binding alternates between two)
    ARG_SETS = 8

    def __init__(self, cupy, device, stream, stream_lock):
        self.cupy, self.device, self.stream = cupy, device, stream
        self.stream_lock = stream_lock   # held while enqueueing (and recording)
        self.graphs = LaunchGraphs()

    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        with self.device:
            module = self.cupy.cuda.function.Module()
            try:
                module.load(binary)
            except Exception as exc:
                raise failure(f"CUDA module load failed: {exc}") from None
            return Program(module, {n: module.get_function(n) for n in names})

    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> CudaLaunch:
        block = default_block(global_size) if local_size is None else local_size
        gs = [max(1, int(g)) for g in global_size] + [1] * (3 - len(global_size))
        block = [int(b) for b in block] + [1] * (3 - len(block))
        grid = tuple((g + b - 1) // b for g, b in zip(gs, block))
        return CudaLaunch(program.kernels[name], grid, tuple(block), tuple(a.handle for a in args))

    def _launch_all(self, launches: Sequence[CudaLaunch]) -> None:
        for launch in launches:
            launch.function(launch.grid, launch.block, launch.args, stream=self.stream)

    def _record(self, key: tuple, launches: Sequence[CudaLaunch]):
        """Capture ``launches`` from the stream as a graph (None, graphs disabled, if the runtime refuses)."""
        stream = self.stream
        try:
            stream.begin_capture()
        except Exception as exc:
            self.graphs.enabled = False
            log.info("CUDA graphs disabled (stream capture refused: %s)", exc)
            return None
        try:
            self._launch_all(launches)
        finally:
            graph = stream.end_capture()
        self.graphs.store(key, graph)
        return graph

    def enqueue(self, launches: Sequence[CudaLaunch], timed: bool = False):
        cupy = self.cupy
        with self.device, self.stream_lock:
            start = end = None
            if timed:
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record(self.stream)
            graphs = self.graphs
            if len(launches) > 1 and graphs.enabled:
                key = graphs.key(launches)
                graph, record = graphs.lookup(key, launches)
                if record:
                    graph = self._record(key, launches)
                if graph is not None:
                    graph.launch(stream=self.stream)
                    graphs.replayed += 1
                else:
                    self._launch_all(launches)
            else:
                self._launch_all(launches)
            if timed:
                end.record(self.stream)
        return (start, end) if timed else None

    def elapsed_ns(self, marks) -> int | None:
        if marks is None:
            return None
        start, end = marks
        return int(self.cupy.cuda.get_elapsed_time(start, end) * 1e6)

    def finish(self, spin_ns: int = 0) -> None:
        if spin_ns > 0:
            with self.device, self.stream_lock:
                done = self.cupy.cuda.Event(disable_timing=True)
                done.record(self.stream)
            deadline = time.perf_counter_ns() + spin_ns
            while not done.done and time.perf_counter_ns() < deadline:
                pass
        self.stream.synchronize()

    def rebind(self, launch: CudaLaunch, position: int, buffer: DeviceBuffer) -> None:
        args = list(launch.args)
        args[position] = buffer.handle
        ids = tuple(map(id, args))
        interned = launch.arg_sets.get(ids)
        if interned is None:
            if len(launch.arg_sets) >= self.ARG_SETS:
                launch.arg_sets.clear()
            interned = launch.arg_sets[ids] = tuple(args)
        launch.args = interned

    def marker(self):
        with self.device, self.stream_lock:
            done = self.cupy.cuda.Event(disable_timing=True)
            done.record(self.stream)
        return done

    def wait_marker(self, marker) -> None:
        marker.synchronize()


class CudaTuning(LaunchTuning):
    """A GPU's kernel choices (base.GPU_KERNEL_CHOICES: products of matrices in work groups through
    shared memory, over as many groups as the multiprocessors; long rows reduced in work groups;
    depthwise convolutions with 4 channels per thread); the other numbers are the OpenCL backend's
    (measured on PoCL, a CPU).  Work with no stated preference gets :func:`default_block`."""

    elements = 64
    rows = 32
    register_tiles = (16, 4)
    channel_lanes = (64, 8)

    def __init__(self, multiprocessors: int):
        self.choose_gpu_kernels(multiprocessors)

    def default(self, global_size: tuple[int, ...]) -> tuple[int, ...]:
        return default_block(global_size)


class CudaBackend(BackendDevice):
    """One CUDA device (cubins for its architecture)."""

    runtime = "cuda"

    def __init__(self, index: int):
        import cupy  # lazy
        self.cupy = cupy
        self.index = index
        device = cupy.cuda.Device(index)
        with device:
            stream = cupy.cuda.Stream(non_blocking=True)
            props = cupy.cuda.runtime.getDeviceProperties(index)
        stream_lock = threading.RLock()
        self._name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        super().__init__(CudaCompiler(f"sm_{device.compute_capability}"), CudaAllocator(cupy, device, stream, stream_lock),
                         CudaLauncher(cupy, device, stream, stream_lock), CudaTuning(int(props["multiProcessorCount"])))

    @property
    def device_name(self) -> str:
        return self._name

    @property
    def features(self) -> frozenset:
        return frozenset({"fp64"})  # every CUDA device since sm_13

    @property
    def device_type(self) -> DeviceType:
        return DeviceType.GPU

    @property
    def runtime_version(self) -> str:
        rt = self.cupy.cuda.runtime
        return (f"CUDA runtime {rt.runtimeGetVersion()}; driver {rt.driverGetVersion()}; NVRTC {nvrtc_version()}; "
                f"{self.compiler.arch}; cupy {self.cupy.__version__}")


def discover() -> list[CudaBackend]:
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return []
    out = []
    for i in range(count):
        try:
            out.append(CudaBackend(i))
        except Exception:
            continue
    return out
