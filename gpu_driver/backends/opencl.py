"""OpenCL backend (PyOpenCL): every platform's devices, GPUs first; PoCL's CPU device included.

compile = ``cl.Program(ctx, source).build()`` + CL_PROGRAM_BINARIES; load = ``cl.Program(ctx, [dev],
[binary]).build()``; one profiling-enabled in-order queue per device; kernel arguments are bound once
(``Kernel.set_arg`` at preparation) and an execution only calls ``enqueue_nd_range_kernel``.
pyopencl is imported lazily: without it :func:`discover` finds no device.

On PoCL the compiled artifact is the program's source instead (marked :data:`SOURCE_ARTIFACT`), built
again at load: PoCL's own kernel cache, keyed by the source, holds the compiled form, so that build
compiles nothing; and reading a PoCL program's binaries (which also compiles every kernel for the
generic work-group size) leaks one reference per kernel in PoCL 3.0's process-wide cache of loaded
kernel binaries, whose entries then can never be evicted (see README).

PoCL's inline lane: PoCL offers two CPU devices, "pthread" (worker threads run the commands) and
"basic" (the thread that enqueues a command runs it).  Waking the workers costs tens of µs per
host wait on an idle machine, more than a small model's whole work, so the pthread device gets the
basic one as its ``inline`` lane, in one context (buffers shared): a model whose estimated work is at
most :attr:`OpenCLBackend.inline_work_limit`, plus :attr:`OpenCLBackend.inline_work_per_kernel` per
kernel launch, is compiled for it and runs in the caller's thread.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from typing import Sequence

import numpy as np

from ..errors import failure, invalid
from ..hal.types import DeviceType
from ..sizes import round_up
from .base import Allocator, BackendDevice, Compiler, DeviceBuffer, Launcher, LaunchTuning, Program
from .pocl_host_cpu import SETTING as POCL_TARGET_CPU_SETTING, name_host_cpu
from .pocl_kernel_cache import raise_loaded_kernel_limit
from .pocl_library import bundled_pocl, load_address
from .pocl_worker_wait import spin_before_sleeping, statistics as worker_wait_statistics

log = logging.getLogger(__name__)

RANK_GPU = 200
RANK_ACCELERATOR = 150
RANK_CPU = 100


def pocl_defaults(allowed_cpus: set[int], cpu_count: int, pthread_count: str | None = None) -> dict[str, str]:
    """The PoCL settings this backend sets before PoCL initialises (an explicit user setting wins).

    - POCL_WORK_GROUP_SPECIALIZATION=0: PoCL re-specialises each kernel's work-group function for
      the local size at its first launch (tens of ms per kernel, seconds for a model), i.e. on the
      first execution.  Its program binary already holds a generic work-group function; using it
      moves all compilation into prepare_model / prepare_model_from_cache, and measured no slower on
      MobileNet (see benchmarks/results).
    - POCL_DEVICES: both CPU devices, "basic" becoming the inline lane of "pthread" (module docstring).
    - POCL_AFFINITY=1, when the process may run on every CPU: worker thread i stays on CPU i.
      Unpinned, MobileNet v2 on a 2-core VM ran no faster on the threaded device than on the
      one-thread basic device, although a single GEMM kernel repeated scaled 1.65x; pinned, the
      model ran 1.3-1.5x faster.  PoCL pins to CPUs 0..n-1, so a process confined to some CPUs
      (taskset, cpuset) keeps the scheduler's placement; and so does one asked for more worker
      threads than CPUs (``pthread_count``, POCL_MAX_PTHREAD_COUNT): PoCL aborts the process when it
      cannot pin worker i to CPU i.
    """
    defaults = {"POCL_WORK_GROUP_SPECIALIZATION": "0", "POCL_DEVICES": "pthread basic"}
    try:
        threads = int(pthread_count) if pthread_count else cpu_count
    except ValueError:
        threads = cpu_count
    if cpu_count > 1 and allowed_cpus == set(range(cpu_count)) and threads <= cpu_count:
        defaults["POCL_AFFINITY"] = "1"
    return defaults


def _allowed_cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity API (not Linux): every CPU
        return set(range(os.cpu_count() or 1))


#: PoCL's setting of its threaded device's worker count (read once, when PoCL starts)
POCL_THREADS_SETTING = "POCL_MAX_PTHREAD_COUNT"


def pocl_worker_threads() -> int:
    """The worker threads PoCL's threaded device runs, or will run when it starts: its setting, else
    one per CPU this process may use."""
    try:
        return max(1, int(os.environ[POCL_THREADS_SETTING]))
    except (KeyError, ValueError):
        return len(_allowed_cpus())


def request_pocl_worker_threads(count: int) -> None:
    """Run PoCL's threaded device with ``count`` worker threads: DriverError(INVALID_ARGUMENT) unless
    ``count`` is a positive int.  PoCL reads the setting once, when it starts: DriverError(GENERAL_FAILURE)
    if it has started in this process with another count."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise invalid(f"PoCL needs a positive whole number of worker threads, not {count!r}")
    if count == pocl_worker_threads():
        return
    if any(load_address(path) is not None for path in bundled_pocl()):
        raise failure(f"PoCL has started with {pocl_worker_threads()} worker threads; "
                      f"set {POCL_THREADS_SETTING}={count} before the first OpenCL device is used")
    os.environ[POCL_THREADS_SETTING] = str(count)


def _cl():
    for name, value in pocl_defaults(_allowed_cpus(), os.cpu_count() or 1,
                                     os.environ.get(POCL_THREADS_SETTING)).items():
        os.environ.setdefault(name, value)
    spin_before_sleeping()  # first: it checks that PoCL is not loaded (running) yet
    name_host_cpu()
    raise_loaded_kernel_limit()
    import pyopencl as cl  # noqa: WPS433 (lazy: optional dependency)
    return cl


#: PoCL's device name prefixes: the threaded CPU device and the one that runs in the caller
POCL_THREADED, POCL_INLINE = "pthread-", "basic-"


class OpenCLSession:
    """What the parts of one OpenCL device share: its context and in-order profiling queue (created
    on first use), the programs this process built, and the events of enqueued non-blocking copies."""

    #: programs kept by binary digest, so loading a binary compiled in this process needs no rebuild
    MAX_BUILT = 16

    def __init__(self, cl, cl_device, companions=(), parent: "OpenCLSession | None" = None):
        self.cl = cl
        self.cl_device = cl_device
        #: further devices of the context (a lane's), or the session whose context this one shares
        self.companions = list(companions)
        self.parent = parent
        self.lock = threading.Lock()
        #: held around every command enqueued on this context's queues (and every wait on a queue of
        #: PoCL's basic device, which runs the commands in the waiting thread): PoCL 3.0's basic device
        #: runs commands inside the calls that enqueue them, and threads enqueuing on one context at
        #: once deadlocked in its event locks (seen with eight service clients)
        self.queue_lock: threading.RLock = parent.queue_lock if parent else threading.RLock()
        #: a wait on this device's queue runs its commands in the waiting thread (PoCL's basic device)
        self.runs_in_caller = cl_device.name.startswith(POCL_INLINE)
        self.built: dict[bytes, object] = {}
        self._seen: set[bytes] = set()  # digests of the source artifacts built in this process
        self.pending: list = []  # events of enqueued non-blocking copies, released by finish()
        self.last = None  # the event of the command enqueued last (what a spinning finish polls)
        #: the device computes on the host's own cores (PoCL's CPU device)
        self.host_cpu = bool(cl_device.type & cl.device_type.CPU)
        #: compiled artifacts are sources (PoCL; see the module docstring)
        self.source_artifacts = "Portable Computing Language" in cl_device.platform.name
        # the buffer-copy entry points cl.enqueue_copy dispatches to (half its cost per copy is that
        # dispatch on the argument types); the public function where a pyopencl lacks them
        raw = getattr(cl, "_cl", None)
        self.write_buffer = getattr(raw, "_enqueue_write_buffer", None) or self._write_buffer
        self.read_buffer = getattr(raw, "_enqueue_read_buffer", None) or self._read_buffer
        self._context = None
        self._queue = None

    def keep_built(self, digest: bytes, program) -> None:
        """Keep ``program`` (built from the artifact of sha256 ``digest``) for a later load or compile."""
        with self.lock:
            self.built[digest] = program
            while len(self.built) > self.MAX_BUILT:
                self.built.pop(next(iter(self.built)))

    def first_sight(self, digest: bytes) -> bool:
        """Whether the source artifact of sha256 ``digest`` is built for the first time in this process."""
        with self.lock:
            first = digest not in self._seen
            self._seen.add(digest)
        return first

    @property
    def context(self):
        if self._context is None:
            with self.lock:
                if self._context is None:
                    cl = self.cl
                    ctx = self.parent.context if self.parent else cl.Context([self.cl_device, *self.companions])
                    props = cl.command_queue_properties.PROFILING_ENABLE
                    self._queue = cl.CommandQueue(ctx, self.cl_device, properties=props)
                    self._context = ctx
        return self._context

    def _write_buffer(self, queue, buffer, data, is_blocking):
        return self.cl.enqueue_copy(queue, buffer, data, is_blocking=is_blocking)

    def _read_buffer(self, queue, buffer, out, is_blocking):
        return self.cl.enqueue_copy(queue, out, buffer, is_blocking=is_blocking)

    @property
    def queue(self):
        queue = self._queue
        if queue is None:
            _ = self.context
            queue = self._queue
        return queue

    @property
    def device_name(self) -> str:
        return self.cl_device.name.strip()


#: the start of a compiled artifact that is OpenCL C source (PoCL; see the module docstring)
SOURCE_ARTIFACT = b"gpu_driver OpenCL C source\n"
BUILD_OPTIONS = ["-cl-std=CL1.2"]


class OpenCLCompiler(Compiler):
    """OpenCL C 1.2 through the platform's compiler; the artifact is CL_PROGRAM_BINARIES, or on PoCL
    the source (:data:`SOURCE_ARTIFACT`)."""

    dialect = "opencl"
    prelude_file = ("opencl_kernels", "prelude.h")

    def __init__(self, session: OpenCLSession):
        self.session = session

    def compile(self, source: str) -> bytes:
        s, cl = self.session, self.session.cl
        artifact = SOURCE_ARTIFACT + source.encode() if s.source_artifacts else None
        digest = hashlib.sha256(artifact).digest() if artifact else None
        with s.lock:
            prog = s.built.get(digest) if artifact else None
        if prog is None:
            try:
                # no warnings.catch_warnings() here: it is process-global and not thread-safe; the
                # generated sources compile with an empty log (the tests turn CompilerWarning into errors)
                prog = cl.Program(s.context, source).build(options=BUILD_OPTIONS, devices=[s.cl_device])
            except cl.Error as exc:
                raise failure(f"OpenCL compilation failed on {s.device_name}: {exc}") from None
        if artifact is None:  # the one device built for (pyopencl drops empty ones)
            artifact = bytes(prog.get_info(cl.program_info.BINARIES)[0])
            digest = hashlib.sha256(artifact).digest()
        elif s.first_sight(digest):
            # asking PoCL for the binary sizes compiles every kernel's generic work-group function
            # now, at preparation, into its disk cache (else each compiles at its first launch); once
            # per program and process: asked again it would leak references (module docstring)
            prog.get_info(cl.program_info.BINARY_SIZES)
        s.keep_built(digest, prog)
        return artifact


class OpenCLAllocator(Allocator):
    """cl.Buffers; views are sub-buffers (offsets aligned to the device's base-address alignment)."""

    def __init__(self, session: OpenCLSession):
        super().__init__()
        self.session = session
        self.alignment = max(256, int(session.cl_device.mem_base_addr_align or 1024) // 8)

    def alloc(self, nbytes: int) -> DeviceBuffer:
        cl = self.session.cl
        n = max(int(nbytes), 1)
        try:
            buf = cl.Buffer(self.session.context, cl.mem_flags.READ_WRITE, size=n)
        except cl.Error as exc:
            raise failure(f"OpenCL allocation of {n} bytes failed: {exc}") from None
        return DeviceBuffer(buf, n)

    def _sub_range(self, handle, offset: int, nbytes: int):
        return handle.get_sub_region(offset, nbytes)

    def _upload(self, buffer: DeviceBuffer, data: np.ndarray, blocking: bool) -> None:
        s = self.session
        with s.queue_lock:
            event = s.write_buffer(s.queue, buffer.handle, data, is_blocking=blocking)
            if not blocking:
                s.last = event
                s.pending.append(event)  # a dropped NannyEvent would wait for the copy right away

    def _download(self, buffer: DeviceBuffer, out: np.ndarray, blocking: bool) -> None:
        s = self.session
        with s.queue_lock:
            event = s.read_buffer(s.queue, buffer.handle, out, is_blocking=blocking)
            if not blocking:
                s.last = event
                s.pending.append(event)

    def copy(self, src: DeviceBuffer, dst: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            s = self.session
            with s.queue_lock:
                s.last = s.cl.enqueue_copy(s.queue, dst.handle, src.handle, byte_count=int(nbytes))


class OpenCLLaunch:
    __slots__ = ("kernel", "global_size", "local_size", "args")

    def __init__(self, kernel, global_size, local_size, args):
        self.kernel = kernel
        self.global_size = global_size
        self.local_size = local_size
        self.args = args  # keep the bound buffers alive


class OpenCLLauncher(Launcher):
    """Programs from binaries, one cl.Kernel per launch (each holds its own arguments), profiling
    events as timing marks."""

    def __init__(self, session: OpenCLSession):
        self.session = session

    def load(self, binary: bytes, names: Sequence[str]) -> Program:
        s, cl = self.session, self.session.cl
        digest = hashlib.sha256(binary).digest()
        with s.lock:
            prog = s.built.get(digest)
        try:
            if prog is None and binary.startswith(SOURCE_ARTIFACT):
                source = binary[len(SOURCE_ARTIFACT):].decode()
                prog = cl.Program(s.context, source).build(options=BUILD_OPTIONS, devices=[s.cl_device])
                s.first_sight(digest)  # its kernels may get loaded now: never ask for its binary sizes
                s.keep_built(digest, prog)
            elif prog is None:
                prog = cl.Program(s.context, [s.cl_device], [binary]).build()
        except (cl.Error, UnicodeDecodeError) as exc:
            raise failure(f"OpenCL binary load failed on {s.device_name}: {exc}") from None
        return Program(prog)

    def make_launch(self, program: Program, name: str, args: Sequence[DeviceBuffer],
                    global_size: Sequence[int], local_size: Sequence[int] | None) -> OpenCLLaunch:
        kernel = self.session.cl.Kernel(program.handle, name)
        # set_arg per argument: every argument is a cl.Buffer, so the generated set_args invoker
        # (built through pyopencl's on-disk cache, ~0.1 ms per kernel) buys nothing here
        for i, a in enumerate(args):
            kernel.set_arg(i, a.handle)
        glob = tuple(max(1, int(g)) for g in global_size)
        if local_size is not None:
            local = tuple(int(s) for s in local_size)
            glob = tuple(round_up(g, l) for g, l in zip(glob, local))
        else:
            local = None
        return OpenCLLaunch(kernel, glob, local, list(args))

    def enqueue(self, launches: Sequence[OpenCLLaunch], timed: bool = False):
        s = self.session
        enqueue = s.cl.enqueue_nd_range_kernel
        q = s.queue
        first = last = None
        with s.queue_lock:
            for launch in launches:
                last = enqueue(q, launch.kernel, launch.global_size, launch.local_size)
                if first is None:
                    first = last
            if last is not None:
                s.last = last
        return (first, last) if first is not None else None

    def elapsed_ns(self, marks) -> int | None:
        if marks is None:
            return None
        first, last = marks
        try:
            return int(last.profile.end - first.profile.start)
        except self.session.cl.Error:
            return None

    def finish(self, spin_ns: int = 0) -> None:
        s = self.session
        if s.runs_in_caller:
            with s.queue_lock:
                s.queue.finish()
                s.last = None
                s.pending.clear()  # the non-blocking copies' events (and the host arrays they hold) are done
            return
        with s.queue_lock:
            last = s.last
            waited = len(s.pending)
        # A CPU device never spins: its work runs on the cores a polling host thread would take from
        # it (one ADD on PoCL, 2 cores: ~50 µs polling, ~19 µs blocked; benchmarks/results).
        if spin_ns > 0 and last is not None and not s.host_cpu:
            # poll the command enqueued last (no marker: every command costs a PoCL worker round);
            # whatever it is, finish() below waits for the whole queue
            s.queue.flush()
            complete = s.cl.command_execution_status.COMPLETE
            deadline = time.perf_counter_ns() + spin_ns
            while last.command_execution_status != complete and time.perf_counter_ns() < deadline:
                pass
        s.queue.finish()
        with s.queue_lock:
            if s.last is last:
                s.last = None
            del s.pending[:waited]  # copies enqueued before the wait: done

    def rebind(self, launch: OpenCLLaunch, position: int, buffer: DeviceBuffer) -> None:
        launch.kernel.set_arg(position, buffer.handle)
        launch.args[position] = buffer

    def marker(self):
        s = self.session
        with s.queue_lock:
            marker = s.cl.enqueue_marker(s.queue)
            s.queue.flush()
        return marker

    def wait_marker(self, marker) -> None:
        s = self.session
        if s.runs_in_caller:
            with s.queue_lock:
                marker.wait()
        else:
            marker.wait()
        complete = s.cl.command_execution_status.COMPLETE
        with s.queue_lock:  # drop the finished copies' events (and the host arrays they keep alive)
            s.pending[:] = [e for e in s.pending if e.command_execution_status != complete]


class OpenCLTuning(LaunchTuning):
    """Work-group sizes measured on PoCL (CPU); work with no stated preference is left to the platform."""

    elements = 64
    rows = 32
    # explicit small work groups: PoCL's generic work-group function keeps per-work-item context
    # arrays on the worker's stack, sized by the work-group size (the int tile of quant8 spills
    # there; a PoCL-picked group of thousands of work items overflowed it).  Measured as fast as
    # PoCL's pick for float32.
    register_tiles = (16, 4)
    # work groups of up to 64 consecutive channels (one row of one pixel block): PoCL's generic
    # work-group function vectorises its work-item loop across them; measured ~1.5x over PoCL's pick
    channel_lanes = (64, 8)
    element_run = 64


class OpenCLBackend(BackendDevice):
    """One OpenCL device; with ``inline_device`` (PoCL's basic device), its inline lane."""

    runtime = "opencl"

    #: models of at most this much estimated work (compiler.cost) per core-to-spare run inline: about
    #: what one core does while a host wait wakes PoCL's workers (measured on PoCL, 2-core VM);
    #: GPU_DRIVER_INLINE_WORK overrides :attr:`inline_work_limit` (0: never inline)
    INLINE_WORK = 8_000_000
    #: and this much more per kernel launch of the model: on the threaded device each launch waits for
    #: the workers to hand the previous kernel on (~12 µs per launch on the 2-core VM), which the
    #: second core does not repay for small kernels (a 65-kernel model of 12 M units: 1.15 ms threaded,
    #: 0.72 ms inline; 129 kernels of 74 M units: 5.5 ms threaded, 8 ms inline)
    INLINE_WORK_PER_KERNEL = 400_000
    #: the same while PoCL's idle workers spin before they sleep (backends/pocl_worker_wait.py): a
    #: launch hands on in about 1-2 µs (the 55-kernel mobilenet_v2_035_96 at 12 M units: 0.27 ms
    #: threaded, 0.29 ms inline; a transformer of 50 kernels at 0.2 M units: 0.11 / 0.09 ms)
    INLINE_WORK_PER_KERNEL_SPINNING = 50_000

    def __init__(self, cl_device, inline_device=None, parent: "OpenCLBackend | None" = None):
        cl = _cl()
        self.session = OpenCLSession(cl, cl_device, [inline_device] if inline_device is not None else (),
                                     parent.session if parent is not None else None)
        super().__init__(OpenCLCompiler(self.session), OpenCLAllocator(self.session),
                         OpenCLLauncher(self.session), OpenCLTuning())
        if cl_device.type & cl.device_type.CPU:  # its vector registers size the register tiles
            self.tuning.float_lanes = int(cl_device.native_vector_width_float or 16)
            self.tuning.one_register_vectors = self.tuning.float_lanes >= 16
            self.tuning.min_work_items = 1
            self.tuning.chunks_alone = True
        elif cl_device.type & cl.device_type.GPU:
            self.tuning.choose_gpu_kernels(int(cl_device.max_compute_units or 1))
        if parent is not None:  # one device's traffic, whichever lane moves it
            self.allocator.counters = parent.allocator.counters
        self.inline = OpenCLBackend(inline_device, parent=self) if inline_device is not None else None
        self.runs_in_caller = cl_device.name.startswith(POCL_INLINE)

    def lane(self, name: str) -> BackendDevice:
        if name == "inline" and self.inline is not None:
            return self.inline
        return super().lane(name)

    @property
    def inline_work_limit(self) -> int:
        """The largest estimated work of a model run on the inline lane (0 without one)."""
        if self.inline is None:
            return 0
        env = os.environ.get("GPU_DRIVER_INLINE_WORK")
        if env is not None:
            try:
                return max(0, int(env))
            except ValueError:
                log.warning("GPU_DRIVER_INLINE_WORK=%r is not an integer: ignored", env)
        cores = max(2, int(self.session.cl_device.max_compute_units or 2))
        return self.INLINE_WORK * cores // (cores - 1) // 2

    @property
    def inline_work_per_kernel(self) -> int:
        """The inline allowance per kernel launch (0 without an inline lane, or when
        GPU_DRIVER_INLINE_WORK sets the whole limit)."""
        if self.inline is None or os.environ.get("GPU_DRIVER_INLINE_WORK") is not None:
            return 0
        if worker_wait_statistics() is not None:
            return self.INLINE_WORK_PER_KERNEL_SPINNING
        return self.INLINE_WORK_PER_KERNEL

    def lane_for(self, work: int, kernels: int = 0) -> str:
        limit = self.inline_work_limit
        if not limit:
            return ""
        return "inline" if work <= limit + max(0, kernels) * self.inline_work_per_kernel else ""

    @property
    def device_name(self) -> str:
        return self.session.device_name

    @property
    def features(self) -> frozenset:
        d = self.session.cl_device
        try:
            fp64 = bool(d.double_fp_config)
        except self.session.cl.Error:
            fp64 = "cl_khr_fp64" in d.extensions
        return frozenset({"fp64"}) if fp64 else frozenset()

    @property
    def device_type(self) -> DeviceType:
        t, kinds = self.session.cl_device.type, self.session.cl.device_type
        if t & kinds.GPU:
            return DeviceType.GPU
        if t & kinds.CPU:
            return DeviceType.CPU
        return DeviceType.ACCELERATOR

    @property
    def runtime_version(self) -> str:
        d = self.session.cl_device
        lane = (f"; inline lane {self.inline.device_name} up to {self.inline_work_limit}"
                f" + {self.inline_work_per_kernel} per kernel"
                if self.inline is not None else "")  # in cache keys: the lane choice follows the limit
        return (f"{d.platform.name.strip()} {d.platform.version.strip()}; device {d.version.strip()}; "
                f"driver {d.driver_version.strip()}; pyopencl {self.session.cl.VERSION_TEXT}{lane}")


def discover() -> list[OpenCLBackend]:
    """One backend per OpenCL device of every platform, GPUs first (stable order within a kind);
    PoCL's basic device is the inline lane of its pthread device when both are there."""
    try:
        cl = _cl()
        platforms = cl.get_platforms()
    except Exception:  # no pyopencl, no ICD loader, no platform
        return []
    devices, inline = [], {}
    for p in platforms:
        try:
            found = p.get_devices()
        except Exception:
            continue
        threaded = [d for d in found if d.name.startswith(POCL_THREADED)]
        basic = [d for d in found if d.name.startswith(POCL_INLINE)]
        if threaded and basic and _compiles(cl, basic[0]):
            inline[threaded[0].int_ptr] = basic[0]
            found = [d for d in found if d.int_ptr != basic[0].int_ptr]
        devices.extend(found)
    if os.environ.get("GPU_DRIVER_OPENCL_DEVICES"):
        wanted = os.environ["GPU_DRIVER_OPENCL_DEVICES"].lower()
        devices = [d for d in devices if any(w in d.name.lower() for w in wanted.split(","))]

    def order(d):
        t = d.type
        return 0 if t & cl.device_type.GPU else (2 if t & cl.device_type.CPU else 1)

    devices.sort(key=order)
    return [OpenCLBackend(d, inline.get(d.int_ptr)) for d in devices if _compiles(cl, d)]


_PROBE_KERNEL = "__kernel void probe(__global float* a) { a[get_global_id(0)] = sqrt(a[0]); }"


def _compiles(cl, device) -> bool:
    """Whether the device's compiler builds a trivial kernel.  A device that cannot (a PoCL whose
    LLVM is too old for the host CPU and that :func:`name_host_cpu` could not correct answers every
    build with "unknown target CPU 'generic'") is left out of discovery with a warning, instead of
    failing every preparation."""
    try:
        cl.Program(cl.Context([device]), _PROBE_KERNEL).build()
        return True
    except Exception as exc:  # any build or context failure: the device cannot run our kernels
        forced = os.environ.get(POCL_TARGET_CPU_SETTING)
        log.warning("OpenCL device %r (%s) left out: it cannot compile a trivial kernel%s: %s",
                    device.name.strip(), device.platform.version.strip(),
                    f" ({POCL_TARGET_CPU_SETTING}={forced!r})" if forced else "", str(exc).strip()[-300:])
        return False
