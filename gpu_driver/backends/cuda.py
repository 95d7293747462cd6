"""CUDA backend (CuPy): NVRTC → cubin for the device's architecture, modules loaded from the cubin,
one stream per device, cupy events for device time.

cupy is imported lazily and failures are tolerated: without CuPy or a GPU :func:`discover` finds no
device.  :func:`compile_source` needs only NVRTC (no GPU), so CI can check that kernels compile.
"""
from __future__ import annotations

import threading
import time
from typing import Sequence

import numpy as np

from ..errors import failure
from ..hal.types import DeviceType
from .base import Backend, DeviceBuffer, Program

RANK_CUDA = 300


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


class CudaLaunch:
    __slots__ = ("function", "grid", "block", "args")

    def __init__(self, function, grid, block, args):
        self.function = function
        self.grid = grid
        self.block = block
        self.args = args


class CudaBackend(Backend):
    runtime = "cuda"
    dialect = "cuda"
    alignment = 256

    def __init__(self, index: int):
        super().__init__()
        import cupy  # lazy
        self.cupy = cupy
        self.index = index
        self._dev = cupy.cuda.Device(index)
        with self._dev:
            self.stream = cupy.cuda.Stream(non_blocking=True)
            props = cupy.cuda.runtime.getDeviceProperties(index)
        self._name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.arch = f"sm_{self._dev.compute_capability}"
        self._lock = threading.Lock()

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
                f"{self.arch}; cupy {self.cupy.__version__}")

    def compile(self, source: str) -> bytes:
        return compile_source(source, self.arch)

    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        cupy = self.cupy
        with self._dev:
            module = cupy.cuda.function.Module()
            try:
                module.load(binary)
            except Exception as exc:
                raise failure(f"CUDA module load failed: {exc}") from None
            kernels = {n: module.get_function(n) for n in names}
        program = Program(binary, kernels)
        program.handle = module
        return program

    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> CudaLaunch:
        gs = [max(1, int(g)) for g in global_size] + [1] * (3 - len(global_size))
        if local_size is None:
            if len(global_size) == 1:
                block = [min(256, gs[0]), 1, 1]
            elif len(global_size) == 2:
                block = [min(32, gs[0]), min(8, gs[1]), 1]
            else:
                block = [min(16, gs[0]), min(4, gs[1]), min(4, gs[2])]
        else:
            block = [int(s) for s in local_size] + [1] * (3 - len(local_size))
        grid = tuple((g + b - 1) // b for g, b in zip(gs, block))
        return CudaLaunch(program.kernels[name], grid, tuple(block), tuple(a.handle for a in args))

    def launch(self, launch: CudaLaunch):
        launch.function(launch.grid, launch.block, launch.args, stream=self.stream)

    def enqueue_all(self, launches: Sequence[CudaLaunch], timed: bool = False):
        cupy = self.cupy
        with self._dev:
            start = end = None
            if timed:
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record(self.stream)
            for launch in launches:
                launch.function(launch.grid, launch.block, launch.args, stream=self.stream)
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
            with self._dev:
                done = self.cupy.cuda.Event(disable_timing=True)
                done.record(self.stream)
                deadline = time.perf_counter_ns() + spin_ns
                while not done.done and time.perf_counter_ns() < deadline:
                    pass
        self.stream.synchronize()

    def alloc(self, nbytes: int) -> DeviceBuffer:
        n = max(int(nbytes), 1)
        try:
            with self._dev:
                arr = self.cupy.empty(n, dtype=self.cupy.uint8)
        except Exception as exc:
            raise failure(f"CUDA allocation of {n} bytes failed: {exc}") from None
        return DeviceBuffer(arr, n)

    def view(self, buffer: DeviceBuffer, offset: int, nbytes: int) -> DeviceBuffer:
        root = buffer.base or buffer
        absolute = buffer.offset + int(offset)
        nbytes = max(int(nbytes), 1)
        if absolute + nbytes > root.nbytes:
            raise ValueError(f"view [{absolute}, {absolute + nbytes}) outside a {root.nbytes}-byte buffer")
        return DeviceBuffer(root.handle[absolute:absolute + nbytes], nbytes, absolute, root)

    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        # pageable host memory: cupy's copy is synchronous with respect to the host either way
        with self._dev:
            raw = data.reshape(-1).view(np.uint8)
            buffer.handle[:raw.size].set(raw, stream=self.stream)
            if blocking:
                self.stream.synchronize()

    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> None:
        with self._dev:
            raw = out.reshape(-1).view(np.uint8)
            buffer.handle[:raw.size].get(stream=self.stream, out=raw, blocking=blocking)
            if blocking:
                self.stream.synchronize()

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            with self._dev, self.stream:
                dst.handle[:nbytes] = src.handle[:nbytes]


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
