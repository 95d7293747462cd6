"""OpenCL backend (PyOpenCL): every platform's devices, GPUs first; PoCL's CPU device included.

compile = ``cl.Program(ctx, source).build()`` + CL_PROGRAM_BINARIES; load = ``cl.Program(ctx, [dev],
[binary]).build()``; one profiling-enabled in-order queue per device; kernel arguments are bound once
(``Kernel.set_args`` at preparation) and an execution only calls ``enqueue_nd_range_kernel``.
pyopencl is imported lazily: without it :func:`discover` finds no device.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Sequence

import numpy as np

from ..errors import failure
from ..hal.types import DeviceType
from ..sizes import round_up
from .base import Backend, DeviceBuffer, Program

RANK_GPU = 200
RANK_ACCELERATOR = 150
RANK_CPU = 100


def _cl():
    # PoCL re-specialises each kernel's work-group function for the local size at its first launch
    # (tens of ms per kernel, seconds for a model), i.e. on the first execution.  Its program binary
    # already holds a generic work-group function; using it moves all compilation into
    # prepare_model / prepare_model_from_cache, and measured no slower on MobileNet (see
    # benchmarks/results).  Set before PoCL initialises; an explicit user setting wins.
    os.environ.setdefault("POCL_WORK_GROUP_SPECIALIZATION", "0")
    import pyopencl as cl  # noqa: WPS433 (lazy: optional dependency)
    return cl


class OpenCLLaunch:
    __slots__ = ("kernel", "global_size", "local_size", "args")

    def __init__(self, kernel, global_size, local_size, args):
        self.kernel = kernel
        self.global_size = global_size
        self.local_size = local_size
        self.args = args  # keep the bound buffers alive


class OpenCLBackend(Backend):
    runtime = "opencl"
    dialect = "opencl"

    def __init__(self, cl_device):
        super().__init__()
        self.cl = _cl()
        self.cl_device = cl_device
        self._ctx = None
        self._queue = None
        self._pending: list = []  # events of enqueued non-blocking copies, released by finish()
        self._init_lock = threading.Lock()
        self._built: dict[bytes, object] = {}
        align_bits = int(cl_device.mem_base_addr_align or 1024)
        self.alignment = max(256, align_bits // 8)

    # ---- description ---------------------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        return self.cl_device.name.strip()

    @property
    def features(self) -> frozenset:
        try:
            fp64 = bool(self.cl_device.double_fp_config)
        except self.cl.Error:
            fp64 = "cl_khr_fp64" in self.cl_device.extensions
        return frozenset({"fp64"}) if fp64 else frozenset()

    @property
    def device_type(self) -> DeviceType:
        t = self.cl_device.type
        if t & self.cl.device_type.GPU:
            return DeviceType.GPU
        if t & self.cl.device_type.CPU:
            return DeviceType.CPU
        return DeviceType.ACCELERATOR

    @property
    def runtime_version(self) -> str:
        d = self.cl_device
        return (f"{d.platform.name.strip()} {d.platform.version.strip()}; device {d.version.strip()}; "
                f"driver {d.driver_version.strip()}; pyopencl {self.cl.VERSION_TEXT}")

    @property
    def context(self):
        if self._ctx is None:
            with self._init_lock:
                if self._ctx is None:
                    cl = self.cl
                    ctx = cl.Context([self.cl_device])
                    props = cl.command_queue_properties.PROFILING_ENABLE
                    self._queue = cl.CommandQueue(ctx, self.cl_device, properties=props)
                    self._ctx = ctx
        return self._ctx

    @property
    def queue(self):
        if self._queue is None:
            _ = self.context
        return self._queue

    # ---- compiler ------------------------------------------------------------------------------------
    def compile(self, source: str) -> bytes:
        cl = self.cl
        try:
            # no warnings.catch_warnings() here: it is process-global and not thread-safe; the
            # generated sources compile with an empty log (the tests turn CompilerWarning into errors)
            prog = cl.Program(self.context, source).build(options=["-cl-std=CL1.2"])
        except cl.Error as exc:
            raise failure(f"OpenCL compilation failed on {self.device_name}: {exc}") from None
        binary = bytes(prog.get_info(cl.program_info.BINARIES)[0])
        with self._init_lock:
            self._built[hashlib.sha256(binary).digest()] = prog  # load() of this binary needs no rebuild
            while len(self._built) > 16:
                self._built.pop(next(iter(self._built)))
        return binary

    # ---- program -------------------------------------------------------------------------------------
    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        cl = self.cl
        with self._init_lock:
            prog = self._built.get(hashlib.sha256(binary).digest())
        try:
            if prog is None:
                prog = cl.Program(self.context, [self.cl_device], [binary]).build()
        except cl.Error as exc:
            raise failure(f"OpenCL binary load failed on {self.device_name}: {exc}") from None
        program = Program(binary, {})
        program.handle = prog
        for name in names:
            program.kernels[name] = name  # kernels are created per launch (each holds its own arguments)
        return program

    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> OpenCLLaunch:
        cl = self.cl
        kernel = cl.Kernel(program.handle, name)
        # set_arg per argument: every argument is a cl.Buffer, so the generated set_args invoker
        # (built through pyopencl's on-disk cache, ~0.1 ms per kernel) buys nothing here
        for i, a in enumerate(args):
            kernel.set_arg(i, a.handle)
        if local_size is not None:
            local = tuple(int(s) for s in local_size)
            glob = tuple(round_up(g, l) for g, l in zip(global_size, local))
        else:
            local = None
            glob = tuple(max(1, int(g)) for g in global_size)
        return OpenCLLaunch(kernel, glob, local, list(args))

    def launch(self, launch: OpenCLLaunch):
        return self.cl.enqueue_nd_range_kernel(self.queue, launch.kernel, launch.global_size, launch.local_size)

    def enqueue_all(self, launches: Sequence[OpenCLLaunch], timed: bool = False):
        enqueue = self.cl.enqueue_nd_range_kernel
        q = self.queue
        first = last = None
        for launch in launches:
            last = enqueue(q, launch.kernel, launch.global_size, launch.local_size)
            if first is None:
                first = last
        return (first, last) if first is not None else None

    def elapsed_ns(self, marks) -> int | None:
        if marks is None:
            return None
        first, last = marks
        try:
            return int(last.profile.end - first.profile.start)
        except self.cl.Error:
            return None

    def finish(self, spin_ns: int = 0) -> None:
        if spin_ns > 0:
            cl = self.cl
            marker = cl.enqueue_marker(self.queue)
            self.queue.flush()
            complete = cl.command_execution_status.COMPLETE
            deadline = time.perf_counter_ns() + spin_ns
            while marker.command_execution_status != complete and time.perf_counter_ns() < deadline:
                pass
        self.queue.finish()
        self._pending.clear()  # the non-blocking copies' events (and the host arrays they hold) are done

    # ---- allocator -----------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> DeviceBuffer:
        cl = self.cl
        n = max(int(nbytes), 1)
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=n)
        except cl.Error as exc:
            raise failure(f"OpenCL allocation of {n} bytes failed: {exc}") from None
        return DeviceBuffer(buf, n)

    def view(self, buffer: DeviceBuffer, offset: int, nbytes: int) -> DeviceBuffer:
        offset, nbytes = int(offset), max(int(nbytes), 1)
        root = buffer.base or buffer
        absolute = buffer.offset + offset
        if absolute == 0 and nbytes == root.nbytes:
            return root
        if absolute % self.alignment:
            raise ValueError(f"view offset {absolute} not aligned to {self.alignment}")
        if absolute + nbytes > root.nbytes:
            raise ValueError(f"view [{absolute}, {absolute + nbytes}) outside a {root.nbytes}-byte buffer")
        sub = root.handle.get_sub_region(absolute, nbytes)
        return DeviceBuffer(sub, nbytes, absolute, root)

    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool = True) -> None:
        event = self.cl.enqueue_copy(self.queue, buffer.handle, data, is_blocking=blocking)
        if not blocking:
            self._pending.append(event)  # a dropped NannyEvent would wait for the copy right away

    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool = True) -> None:
        event = self.cl.enqueue_copy(self.queue, out, buffer.handle, is_blocking=blocking)
        if not blocking:
            self._pending.append(event)

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            self.cl.enqueue_copy(self.queue, dst.handle, src.handle, byte_count=int(nbytes))


def discover() -> list[OpenCLBackend]:
    """One backend per OpenCL device of every platform, GPUs first (stable order within a kind)."""
    try:
        cl = _cl()
        platforms = cl.get_platforms()
    except Exception:  # no pyopencl, no ICD loader, no platform
        return []
    devices = []
    for p in platforms:
        try:
            devices.extend(p.get_devices())
        except Exception:
            continue
    if os.environ.get("GPU_DRIVER_OPENCL_DEVICES"):
        wanted = os.environ["GPU_DRIVER_OPENCL_DEVICES"].lower()
        devices = [d for d in devices if any(w in d.name.lower() for w in wanted.split(","))]

    def order(d):
        t = d.type
        return 0 if t & cl.device_type.GPU else (2 if t & cl.device_type.CPU else 1)

    devices.sort(key=order)
    return [OpenCLBackend(d) for d in devices]
