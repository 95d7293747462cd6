"""AcceleratorPreparedModel: a model prepared on an accelerator backend (OpenCL, CUDA).

Preparation (compiler.pipeline) does all expensive work and .executable instantiates its result; an
execution copies the inputs in, replays the launch list, copies the outputs out.  Models whose input
shapes are unknown at preparation are specialised at first execution for the concrete shapes and
cached per shape signature; so are models with inputs whose values an operation reads (a paddings
tensor or an axis given as a model input), per value.

Hooks:
- model cache: :meth:`AcceleratorPreparedModel.cache_payload` and AcceleratorDevice.load_prepared;
- request pools: a :class:`PoolPlan` (made once per request and executable) says how each argument
  reaches the kernels: host memory is uploaded / downloaded through numpy views made once per
  binding, this device's driver-managed buffers are bound to the kernels in place, and everything
  else goes through :meth:`AcceleratorPreparedModel.bind_input` /
  :meth:`AcceleratorPreparedModel.bind_output` (device-resident pools, such as hardware buffers in
  this device's memory, copied device-to-device, never through the host).
"""
from __future__ import annotations

import functools
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..compiler.artifact import CompiledModel
from ..compiler.pipeline import compile_model
from ..compiler.support import value_input_positions
from ..errors import DriverError, failure
from ..graph import build_graph
from ..hal.model import Model
from ..hal.types import ErrorStatus, ExecutionPreference, OutputShape
from ..memory import HardwareBuffer, Memory
from ..runtime.driver_buffer import DriverBuffer
from ..runtime.execution_limits import ExecutionContext, check_not_late
from ..runtime.fenced_execution import FencedWork, when_signalled
from ..runtime.prepared_model import PreparedModel
from ..runtime.request_binding import BoundRequest
from .completion_watcher import complete
from .executable import Executable, instantiate


class CompileTime(threading.local):
    """Nanoseconds this thread has spent compiling at execution time (specialisations): WHILE loops
    leave them out of their loop timeout, which bounds the loop's own work."""

    ns = 0

    def add(self, ns: int) -> None:
        self.ns += ns


COMPILE_TIME = CompileTime()


@dataclass
class PoolPlan:
    """How the arguments of one request reach one executable's buffers, worked out at its first
    execution and shared by every binding of the same request (it names pools by position and holds
    none): the host pools it uploads from and downloads into, the memory-domain buffers and this
    device's hardware buffers (used by one argument, from their start) bound to the kernels in place,
    and the arguments that need more than a copy (other driver buffers, hardware
    buffers, read-only mappings) for bind_input / bind_output.  The output shapes were checked against
    the request's buffers when it was made."""

    exe: Executable
    output_dims: list[list[int]]
    uploads: list = field(default_factory=list)            # (model input buffer, pool, offset, nbytes)
    inputs: list = field(default_factory=list)             # (arg, pool, buffer, nbytes) for bind_input
    inputs_in_place: list = field(default_factory=list)    # (pool, model buffer, nbytes)
    downloads: list = field(default_factory=list)          # (model output buffer, pool, offset, nbytes)
    outputs: list = field(default_factory=list)            # (arg, pool, buffer, nbytes, shape) for bind_output
    outputs_in_place: list = field(default_factory=list)   # (pool, model buffer, shape)
    resident_in_place: list = field(default_factory=list)  # (pool, model buffer): a HardwareBuffer of this device


@dataclass
class Specialization:
    """One compiled + instantiated version of the model (per input-shape signature)."""

    compiled: CompiledModel
    exe: Executable
    lock: threading.Lock = field(default_factory=threading.Lock)


class AcceleratorPreparedModel(PreparedModel):
    """A model prepared on an accelerator backend.

    Shape-static models are compiled here, once.  A model with unknown input dimensions is compiled
    per input-shape signature at the first execution that uses it (a *specialisation*: the whole
    launch list specialised for those shapes, and for the values of the inputs whose values an
    operation reads: compiler.support.value_input_positions); specialisations are cached, at most
    MAX_SPECIALIZATIONS of them (least recently used evicted first).  Output shapes are those of the
    specialisation that ran.  A signature for which some operation is unsupported (a size-dependent
    condition of its lowering, see support_graph) fails its executions with GENERAL_FAILURE.
    """

    MAX_SPECIALIZATIONS = 16

    #: how long an execution polls for completion before blocking (see Launcher.finish), per
    #: ExecutionPreference: LOW_POWER never busy-waits; otherwise up to 200 µs, which hides the
    #: wake-up of a blocked host thread for small models and is noise for large ones (a device that
    #: computes on the host's own cores, PoCL's, never polls: the poll would take a core from it)
    SPIN_NS = {ExecutionPreference.LOW_POWER: 0, ExecutionPreference.FAST_SINGLE_ANSWER: 200_000,
               ExecutionPreference.SUSTAINED_SPEED: 200_000}

    @property
    def spin_ns(self) -> int:
        return self.SPIN_NS.get(self.preference, 0)

    def __init__(self, device, model: Model, compiled: CompiledModel | None = None):
        super().__init__(device, model)
        self.backend = device.backend
        # input-shape signature -> Specialization, least recently used first (bounded: MAX_SPECIALIZATIONS
        # besides the shape-static one, which is never evicted)
        self._specs: OrderedDict[tuple, Specialization] = OrderedDict()
        self._spec_lock = threading.Lock()
        self._compile_lock = threading.Lock()
        self._static: Specialization | None = None
        #: main-input positions whose values the kernels are specialised on
        self._value_positions = value_input_positions(model)
        try:
            if compiled is None:
                graph = build_graph(model, model.main)
                if graph.fully_specified and not self._value_positions and \
                        all(graph.tensors[i].known_shape for i in model.main.input_indexes):
                    compiled = self._compile_all_inputs_present(graph)
            #: the backend lane every specialisation runs on: the one the shape-static model was
            #: compiled for (small models run inline on PoCL), else the device itself
            self._lane_name = compiled.plan.lane if compiled is not None else ""
            self.lane = self.backend.lane(self._lane_name)
            self.allocator = self.lane.allocator
            self.launcher = self.lane.launcher
            if compiled is not None:
                self._static = Specialization(compiled, instantiate(self.backend, compiled))
                self._specs[self._signature_of(compiled.plan.input_shapes)] = self._static
        except DriverError:
            raise
        except Exception as exc:  # device or compiler trouble
            raise failure(f"preparation on {device.name} failed: {type(exc).__name__}: {exc}") from exc

    def _compile_all_inputs_present(self, graph) -> CompiledModel | None:
        """The shape-static specialisation: every model input given (an execution that omits an
        optional one gets its own).  None when the definitions refuse some input present — say the weight of
        a sparse hash projection, valid only when the request omits it: every execution is
        then specialised on what its request gives."""
        shapes = [graph.tensors[i].shape for i in self.model.main.input_indexes]
        try:
            return compile_model(self.model, self.backend, shapes, lane=None)
        except DriverError as exc:
            if exc.status != ErrorStatus.INVALID_ARGUMENT:
                raise
            return None

    @staticmethod
    def _signature_of(shapes) -> tuple:
        return tuple(None if s is None else tuple(int(d) for d in s) for s in shapes)

    # ---- introspection ---------------------------------------------------------------------------
    @property
    def memory_plan(self) -> dict:
        """Of the shape-static specialisation (or the latest one): peak bytes of temporaries, buffers."""
        spec = self._static or (next(reversed(self._specs.values())) if self._specs else None)
        if spec is None:
            return {"peak_bytes": 0, "num_buffers": 0, "naive_bytes": 0, "kernels": 0, "specialized": False}
        p = spec.compiled.plan
        return {"peak_bytes": p.arena_bytes, "num_buffers": p.num_buffers, "naive_bytes": p.naive_arena_bytes,
                "const_bytes": p.const_bytes, "kernels": len(p.kernels), "specialized": True}

    @property
    def transfer_counters(self) -> dict:
        return self.allocator.counters.snapshot()

    @property
    def source(self) -> str:
        spec = self._static or (next(iter(self._specs.values())) if self._specs else None)
        return spec.compiled.source if spec else ""

    def cache_payload(self) -> CompiledModel:
        """Compilation cache: the compiled shape-static model (binary, launch plan, constants)."""
        if self._static is None:
            raise failure("model has dynamic shapes: nothing to cache before execution")
        return self._static.compiled

    def known_output_shape(self, output_index: int):
        if self._static is not None:
            return tuple(self._static.compiled.plan.outputs[output_index].shape)
        return super().known_output_shape(output_index)

    # ---- execution -------------------------------------------------------------------------------
    def _specialization(self, shapes: list, values: dict | None = None) -> Specialization:
        sig = self._signature_of(shapes)
        if values:
            sig = (sig, tuple((p, np.asarray(v).dtype.str, np.asarray(v).tobytes()) for p, v in sorted(values.items())))
        with self._spec_lock:
            spec = self._specs.get(sig)
            if spec is not None:
                self._specs.move_to_end(sig)
                return spec
        with self._compile_lock:  # one compilation at a time; executions of cached signatures go on
            with self._spec_lock:
                spec = self._specs.get(sig)
            if spec is None:
                started = time.perf_counter_ns()
                try:
                    compiled = compile_model(self.model, self.backend,
                                             [None if s is None else list(s) for s in shapes], check_support=True,
                                             input_values=values, lane=self._lane_name)
                    spec = Specialization(compiled, instantiate(self.backend, compiled))
                except DriverError as exc:
                    raise DriverError(exc.status, f"input shapes {sig}: {exc.message}") from exc
                except Exception as exc:
                    raise failure(f"specialisation for input shapes {sig} failed: {exc}") from exc
                finally:
                    COMPILE_TIME.add(time.perf_counter_ns() - started)
            with self._spec_lock:
                self._specs[sig] = spec
                self._specs.move_to_end(sig)
                dynamic = [k for k, v in self._specs.items() if v is not self._static]
                for k in dynamic[:max(0, len(dynamic) - self.MAX_SPECIALIZATIONS)]:
                    del self._specs[k]
        return spec

    def _specialization_for(self, request: BoundRequest) -> Specialization:
        plans = request.shared_plans
        if not self._value_positions:  # the same specialisation for every run of this request
            cached = plans.get("specialization")
            if cached is not None:
                sig, spec = cached
                with self._spec_lock:
                    if self._specs.get(sig) is spec:  # not evicted: now the most recently used
                        self._specs.move_to_end(sig)
                        return spec
            spec = self._specialization(request.shapes.inputs)
            plans["specialization"] = (self._signature_of(request.shapes.inputs), spec)
            return spec
        read = self.read_inputs(request, self._value_positions)
        values = {p: read[p] for p in self._value_positions if read[p] is not None}
        return self._specialization(request.shapes.inputs, values)

    def _execute(self, request: BoundRequest, ctx: ExecutionContext) -> tuple[list[OutputShape], int | None]:
        spec = self._specialization_for(request)
        exe = spec.exe
        plan = self._pool_plan(request, exe, in_place=True)  # OUTPUT_INSUFFICIENT_SIZE before running
        # Copies and launches are only enqueued (in order); the host waits once at the end.  Each host
        # wait costs a wake-up of the device's workers (for PoCL on an idle VM ~50-100 µs), so one wait
        # instead of one per copy is most of the per-execution overhead of a small model.
        with spec.lock:
            after: list = []  # host steps once the device is done (driver buffers marked written)
            staged = self._enqueue_inputs(request, plan, after)
            marks = self._enqueue_launches(exe, ctx)
            word = exe.enqueue_status_read()
            if word is not None:
                self.launcher.finish()
                exe.check_status(word)  # bad data seen by a kernel: GENERAL_FAILURE, no output delivered
            self._enqueue_outputs(request, plan, after)
            self.launcher.finish(self.spin_ns)
            for step in after:
                step()
            device_ns = self._elapsed(marks) if ctx.measure else None
            del staged
        return [OutputShape(list(dims), True) for dims in plan.output_dims], device_ns

    def _pool_plan(self, request: BoundRequest, exe: Executable, in_place: bool) -> PoolPlan:
        """The PoolPlan of ``request`` on ``exe``, made at its first execution and kept with the request's
        bindings.  ``in_place``: memory-domain buffers are bound to the kernels instead of copied."""
        plans = request.shared_plans
        key = (id(exe), in_place)
        plan = plans.get(key)
        if plan is not None and plan.exe is exe:
            return plan
        plan = PoolPlan(exe, [s.dimensions for s in self.check_output_sizes(request, exe.output_shapes)])
        pools = request.pools
        # a hardware buffer is bound in place only when no other argument uses it (no aliasing)
        uses = Counter(a.location.pool_index for a in (*request.inputs, *request.outputs) if not a.has_no_value)
        for arg, (buffer, nbytes) in zip(request.inputs, exe.inputs):
            if arg.has_no_value or not nbytes:
                continue
            at = arg.location.pool_index
            if in_place and isinstance(pools[at], DriverBuffer) and exe.in_place_ok(buffer):
                plan.inputs_in_place.append((at, buffer, nbytes))
            elif in_place and uses[at] == 1 and self._bindable(pools[at], arg, nbytes) and exe.in_place_ok(buffer):
                plan.resident_in_place.append((at, buffer))
            elif isinstance(pools[at], Memory) and not isinstance(pools[at], HardwareBuffer):
                plan.uploads.append((buffer, at, arg.location.offset, nbytes))
            else:
                plan.inputs.append((arg, at, buffer, nbytes))
        for arg, (buffer, nbytes, shape) in zip(request.outputs, exe.outputs):
            at = arg.location.pool_index
            pool = pools[at]
            host = isinstance(pool, Memory) and not isinstance(pool, HardwareBuffer)
            if in_place and isinstance(pool, DriverBuffer) and exe.in_place_ok(buffer):
                plan.outputs_in_place.append((at, buffer, shape))
            elif in_place and uses[at] == 1 and self._bindable(pool, arg, nbytes) and exe.in_place_ok(buffer):
                plan.resident_in_place.append((at, buffer))
            elif host and nbytes and not pool.view().readonly:
                plan.downloads.append((buffer, at, arg.location.offset, nbytes))
            else:
                plan.outputs.append((arg, at, buffer, nbytes, shape))
        if len(plans) > 8:  # executables of evicted specialisations
            plans.clear()
        plans[key] = plan
        return plan

    @staticmethod
    def _host_views(request: BoundRequest, plan: PoolPlan) -> tuple[list, list]:
        """(uploads, downloads) of ``plan`` as (model buffer, numpy view of the host pool) pairs, made
        once per binding (a burst's or reusable execution's binding keeps them)."""
        views = request.device_plans.get(id(plan))
        if views is None or views[0] is not plan:
            pools = request.pools
            views = request.device_plans[id(plan)] = (plan, *(
                [(buffer, np.frombuffer(pools[at].view(), np.uint8, nbytes, offset))
                 for buffer, at, offset, nbytes in copies] for copies in (plan.uploads, plan.downloads)))
        return views[1], views[2]

    def _enqueue_inputs(self, request: BoundRequest, plan: PoolPlan, after: list) -> list:
        """Bind ``plan``'s memory-domain buffers in place (their commit appended to ``after``), then
        enqueue the uploads of its inputs: the host work comes first, so the copies and the launches
        reach the device back to back.  Returns the host arrays other enqueued uploads read (keep them
        alive until the device is done)."""
        pools = request.pools
        rebinds = []
        for at, buffer, nbytes in plan.inputs_in_place:
            src, _dims = pools[at].device_input()
            if src.nbytes < nbytes:
                raise failure(f"driver buffer {pools[at].token} holds {src.nbytes} bytes, the input needs {nbytes}")
            rebinds.append((buffer, src))
        for at, buffer, shape in plan.outputs_in_place:
            rebinds.append((buffer, pools[at].device_output(shape)))
            after.append(functools.partial(pools[at].commit_output, shape))
        if plan.resident_in_place:
            rebinds.extend((buffer, pools[at].device_buffer) for at, buffer in plan.resident_in_place)
        plan.exe.bind_in_place(rebinds)
        upload = self.allocator.upload
        for buffer, data in self._host_views(request, plan)[0]:
            upload(buffer, data, blocking=False)
        return [self.bind_input(arg, pools[at], buffer, nbytes, blocking=False)
                for arg, at, buffer, nbytes in plan.inputs]

    def _enqueue_outputs(self, request: BoundRequest, plan: PoolPlan, after: list) -> None:
        """Enqueue the delivery of ``plan``'s copied outputs (host steps appended to ``after``)."""
        pools = request.pools
        download = self.allocator.download
        for buffer, out in self._host_views(request, plan)[1]:
            download(buffer, out, blocking=False)
        for arg, at, buffer, nbytes, shape in plan.outputs:
            self.bind_output(arg, pools[at], buffer, nbytes, shape, blocking=False, after=after)

    def _bind_inputs(self, request: BoundRequest, exe: Executable) -> list:
        """Enqueue every given input as a copy into the model's own input buffers (the kernels bound to
        them again); returns the host arrays the enqueued uploads read."""
        plan = self._pool_plan(request, exe, in_place=False)
        return [*self._enqueue_inputs(request, plan, []), plan]

    #: with a deadline, the launch list is enqueued in at most this many segments, the deadline checked
    #: between them (each check waits for the device: a few µs to tens of µs)
    DEADLINE_SEGMENTS = 8

    def _enqueue_launches(self, exe: Executable, ctx: ExecutionContext) -> list:
        """Enqueue the launch list; timing marks per enqueued segment.  With a deadline it goes in
        segments, and an execution past its deadline stops between two of them with
        MISSED_DEADLINE_TRANSIENT (no output delivered)."""
        launches = exe.launches
        if ctx.deadline_ns is None or len(launches) < 2:
            return [exe.enqueue(timed=ctx.measure)]
        step = -(-len(launches) // self.DEADLINE_SEGMENTS)
        marks = []
        for first in range(0, len(launches), step):
            if first:
                self.launcher.finish()
                check_not_late(ctx.deadline_ns, f"after {first} of {len(launches)} kernel launches")
            marks.append(self.launcher.enqueue(launches[first:first + step], ctx.measure))
        return marks

    def _elapsed(self, marks: list) -> int | None:
        times = [self.launcher.elapsed_ns(m) for m in marks if m is not None]
        return None if None in times or not times else sum(times)

    def execute_fenced_work(self, work: FencedWork) -> None:
        """Enqueue the fenced execution on the device queue and return; the completion watcher signals
        its fence.  A waited-for fence from an earlier fenced execution on this device that is already
        enqueued orders the work on the device (the queue is in order); any other fence (a client's,
        another device's, one whose work is not enqueued yet) defers the enqueue until it signals,
        without a waiting thread."""
        if self.lane.runs_in_caller:  # enqueueing would run it here: the lane's worker thread does
            self.device.inline_queue(self.lane).submit(work, self._enqueue_fenced)
            return
        host_fences = [f for f in work.fences if f.device_mark(self.lane) is None]
        if not host_fences:
            self._enqueue_fenced(work)
            return
        when_signalled(host_fences, lambda: self.device.scheduler.submit(lambda: self._enqueue_fenced(work),
                                                                         self.priority))

    def _enqueue_fenced(self, work: FencedWork) -> None:
        if not work.begin():
            return
        try:
            spec = self._specialization_for(work.bound)
            exe = spec.exe
            plan = self._pool_plan(work.bound, exe, in_place=False)
            after: list = []  # host steps once the device is done
            with spec.lock:
                staged = self._enqueue_inputs(work.bound, plan, after)
                marks = [exe.enqueue(timed=work.ctx.measure)]
                word = exe.enqueue_status_read()
                self._enqueue_outputs(work.bound, plan, after)
                marker = self.launcher.marker()
        except DriverError as exc:
            work.fail(exc)
            return
        except Exception as exc:  # device trouble
            work.fail(failure(f"fenced execution failed: {type(exc).__name__}: {exc}"))
            return
        work.fence.set_device_mark(self.lane, marker)

        def finish(error: Exception | None) -> None:
            if error is not None:
                raise failure(f"the device failed: {error}")
            exe.check_status(word)
            for step in after:
                step()
            del staged[:]
            return self._elapsed(marks) if work.ctx.measure else None

        continuation = lambda error: work.run(lambda: finish(error))  # noqa: E731
        if self.lane.runs_in_caller:  # the work has run: finish here, in the lane's worker thread
            complete(marker, continuation, self.launcher)
            return
        self.device.completions.watch(marker, continuation, self.launcher)

    # ---- pool binding ----------------------------------------------------------------------------------
    def bind_input(self, arg, pool, buffer, nbytes: int, blocking: bool = True):
        """Make the model input of request argument ``arg`` available in ``buffer``, from its resolved
        request ``pool``.

        A driver buffer of this device, or a HardwareBuffer living on this backend at an aligned offset,
        is copied device-to-device (no host bytes); any other HardwareBuffer is read through its
        allocator; a host pool is uploaded.  With ``blocking=False`` that upload may only be enqueued:
        returns the host array it reads, which the caller keeps alive until the launcher's ``finish``."""
        if nbytes == 0:
            return None
        allocator = self.allocator
        if isinstance(pool, DriverBuffer):
            src, _dims = pool.device_input()
            if src.nbytes < nbytes:
                raise failure(f"driver buffer {pool.token} holds {src.nbytes} bytes, the input needs {nbytes}")
            allocator.copy(src, buffer, nbytes)
            return None
        off = arg.location.offset
        resident = self._resident_view(pool, off, nbytes)
        if resident is not None:
            allocator.copy(resident, buffer, nbytes)
            return None
        if isinstance(pool, HardwareBuffer):
            allocator.upload(buffer, np.frombuffer(pool.read(off, nbytes), dtype=np.uint8))
            return None
        data = np.frombuffer(pool.view(), dtype=np.uint8, count=nbytes, offset=off)
        allocator.upload(buffer, data, blocking=blocking)
        return data

    def bind_output(self, arg, pool, buffer, nbytes: int, shape, blocking: bool = True,
                    after: list | None = None) -> None:
        """Deliver the model output of request argument ``arg`` (of shape ``shape``) from ``buffer`` into
        its resolved request ``pool``; device-resident pools as in :meth:`bind_input`.

        With ``blocking=False`` a download straight into a host pool may only be enqueued (complete
        after the launcher's ``finish``).  With an ``after`` list nothing waits for the device: what
        must happen on the host once it is done is appended to ``after`` instead."""
        allocator = self.allocator
        if isinstance(pool, DriverBuffer):
            allocator.copy(buffer, pool.device_output(shape), nbytes)
            if after is not None:
                after.append(lambda: pool.commit_output(shape))
                return
            self.launcher.finish()
            pool.commit_output(shape)
            return
        if nbytes == 0:
            return
        off = arg.location.offset
        resident = self._resident_view(pool, off, nbytes)
        if resident is not None:
            allocator.copy(buffer, resident, nbytes)
            if after is None:
                self.launcher.finish()
            return
        view = None if isinstance(pool, HardwareBuffer) else pool.view()
        if view is not None and not view.readonly:
            allocator.download(buffer, np.frombuffer(view, dtype=np.uint8, count=nbytes, offset=off),
                               blocking=blocking and after is None)
        elif after is not None:  # through a host copy, written once the device is done
            out = np.empty(nbytes, dtype=np.uint8)
            allocator.download(buffer, out, blocking=False)
            after.append(lambda: pool.write(off, out))
        else:  # a HardwareBuffer elsewhere or a read-only mapping: through a host copy
            out = np.empty(nbytes, dtype=np.uint8)
            allocator.download(buffer, out)
            pool.write(off, out)

    # ---- execute(): inputs the kernels read where they lie ------------------------------------------
    def _own_input_pool(self, nbytes: int) -> HardwareBuffer | None:
        """A BLOB HardwareBuffer in this device's memory for one input of :meth:`execute`: the
        executions bind it to the kernels in place (:meth:`_bindable`), so the only copy of the input
        is the one :meth:`_write_input` enqueues.  None on a lane of its own (PoCL's inline lane: its
        queue would not order that copy before the kernels), for a model specialised on input
        values (read on the host), and where the device cannot allocate it (the input then goes
        through a host pool, as it always may)."""
        if self.lane is not self.backend or self._value_positions:
            return None
        try:
            return HardwareBuffer.blob(nbytes, backend=self.backend)
        except DriverError:
            return None

    def _write_input(self, pool: HardwareBuffer, data: np.ndarray) -> None:
        """Enqueue the copy of ``data`` into ``pool`` on the queue the kernels run on: the device
        makes it while the host still validates and binds the request (MobileNet v2 on PoCL
        0.96-0.98x the time of a copy into a host pool, then one into the model's input buffer)."""
        self.allocator.upload(pool.device_buffer, data, blocking=False)

    def _wait_for_inputs(self) -> None:
        self.launcher.finish()

    def _bindable(self, pool, arg, nbytes: int) -> bool:
        """Whether request argument ``arg`` in ``pool`` can be bound to the kernels as it is: a
        HardwareBuffer in this device's memory, from its start (a synchronous execution only)."""
        return (isinstance(pool, HardwareBuffer) and pool.resides_on(self.backend) and arg.location.offset == 0
                and pool.device_buffer.nbytes >= nbytes > 0)

    def _resident_view(self, pool, offset: int, nbytes: int):
        """The allocator view of ``pool``'s bytes at ``offset`` when it is a HardwareBuffer in this backend's
        memory at an aligned offset (bound device-to-device), else None."""
        allocator = self.allocator
        if isinstance(pool, HardwareBuffer) and pool.resides_on(self.backend) and offset % allocator.alignment == 0:
            return allocator.view(pool.device_buffer, offset, nbytes)
        return None
