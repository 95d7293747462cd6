"""PreparedModel: the HAL IPreparedModel, shared by every device.

The base class owns everything that is the same on every device: the execution entry points
(synchronous, asynchronous, fenced, bursts, reusable executions), argument checks, request
validation, deadline handling, reading inputs from and writing outputs to request pools,
OutputShape / OUTPUT_INSUFFICIENT_SIZE reporting, timing, and the numpy convenience
:meth:`PreparedModel.execute`.  A device implements :meth:`PreparedModel._compute` (host arrays in,
host arrays out) or overrides :meth:`PreparedModel._execute` for device-resident data, and may
override :meth:`PreparedModel.execute_fenced_work` to chain fenced work on its own queue.
"""
from __future__ import annotations

import abc
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import DriverError, failure, invalid
from ..hal.model import DataLocation, Model, Request, RequestArgument
from ..hal.types import (
    OPERAND_TYPE_INFO,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Priority,
    OutputShape,
    Timing,
)
from ..memory import HardwareBuffer, SharedMemory
from ..sizes import element_count, round_up
from ..validation import byte_size
from .burst import Burst
from .driver_buffer import DriverBuffer
from .execution_limits import (ExecutionContext, check_duration, check_not_expired, check_not_late, execution_context,
                               execution_timing)
from .fenced_execution import FencedWork, when_signalled
from .request_binding import BindingCache, BoundRequest
from .reusable_execution import ReusableExecution
from .sync_fence import FencedExecutionCallback, SyncFence, check_fences

if TYPE_CHECKING:
    from ..compiler.artifact import CompiledModel


class PreparedModel(abc.ABC):
    """A model compiled for one device (HAL IPreparedModel); thread-safe, reusable."""

    def __init__(self, device, model: Model):
        self.device = device
        self.model = model
        self._lock = threading.Lock()
        self._thread_pools = threading.local()  # execute()'s reusable request pools, per thread
        #: the ExecutionPreference it was prepared with (set by Device.prepare_model / the cache loader)
        self.preference = ExecutionPreference.FAST_SINGLE_ANSWER
        #: the Priority it was prepared with: orders its asynchronous work on the device
        self.priority = Priority.MEDIUM
        self._bindings = BindingCache()  # validated bindings of the requests run lately

    # ---- HAL entry points --------------------------------------------------------------------------
    def execute_synchronously(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                              deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL ``executeSynchronously_1_3``: run ``request``; return (output shapes, timing).

        Raises DriverError: INVALID_ARGUMENT for a bad request, OUTPUT_INSUFFICIENT_SIZE (with
        ``output_shapes``) when an output buffer is too small, MISSED_DEADLINE_* when the deadline
        passes, GENERAL_FAILURE for device trouble or bad data.

        Runs in the caller's thread, outside the device's priority scheduler (as the HAL's synchronous
        call does): the caller is blocked anyway, so a hand-off to the worker thread would only add two
        thread switches (the asynchronous path's cost), and the device's in-order queue already
        serialises the work.  The prepared model's priority orders only work that waits: asynchronous
        executions and deferred fenced work.
        """
        start = time.perf_counter_ns()
        bound, ctx = self._validate_execution(request, measure_timing, deadline, loop_timeout_duration)
        return self.run_bound(bound, ctx, start)

    def execute_asynchronously(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                               deadline: int | None = None,
                               loop_timeout_duration: int | None = None) -> Future:
        """HAL ``execute_1_3``: validate now (a bad request raises INVALID_ARGUMENT here, the launch
        status), run later; returns a concurrent.futures.Future of (output shapes, timing) whose
        exception is the execution's DriverError.

        Executions wait in the device's scheduler, highest prepared-model priority first; one whose
        deadline passes while it waits fails with MISSED_DEADLINE_TRANSIENT without running.
        """
        start = time.perf_counter_ns()
        bound, ctx = self._validate_execution(request, measure_timing, deadline, loop_timeout_duration)

        def job():
            check_not_late(ctx.deadline_ns, "while the execution was queued")
            return self.run_bound(bound, ctx, start)

        return self.device.scheduler.submit(job, self.priority)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence] = (),
                       measure_timing: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout_duration: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence, FencedExecutionCallback]:
        """HAL ``executeFenced``: start ``request`` once every fence in ``wait_for`` has signalled and
        return at once with (sync fence, FencedExecutionCallback); the fence signals when the
        execution has finished, or enters ERROR when it failed, a waited-for fence entered ERROR, or
        the deadline / ``timeout_after_fence`` (ns from the moment the fences signalled) passed.

        Validation errors raise INVALID_ARGUMENT at once, no fence: a bad request, an output whose
        shape is not fully specified (fenced executions have no dynamic output shapes), a
        ``wait_for`` entry that is not a SyncFence.
        """
        start = time.perf_counter_ns()
        fences = check_fences(wait_for)
        after_ns = check_duration(timeout_after_fence, "timeout_after_fence")
        bound, ctx = self._validate_execution(request, measure_timing, deadline, loop_timeout_duration)
        self.check_outputs_fully_specified(bound)
        work = FencedWork(bound, ctx, fences, after_ns, start)
        self.execute_fenced_work(work)
        return work.fence, work.callback

    def configure_execution_burst(self) -> Burst:
        """HAL ``configureExecutionBurst`` (canonical IBurst): a burst object whose executions reuse
        cached memories (by slot) and the validated binding of a request seen before."""
        return Burst(self)

    def create_reusable_execution(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                                  loop_timeout_duration: int | None = None) -> ReusableExecution:
        """HAL ``createReusableExecution`` (canonical IExecution): validate ``request`` once; the
        returned execution's ``compute`` / ``compute_fenced`` run it again and again."""
        return ReusableExecution(self, request, measure_timing, loop_timeout_duration)

    def execute(self, inputs: Sequence[np.ndarray | None], *, measure_timing: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout_duration: int | None = None,
                return_timing: bool = False):
        """Convenience: run with numpy inputs (``None`` = omitted optional input); return the outputs.

        Builds shared-memory pools and the Request, calls :meth:`execute_synchronously`, and returns
        a list of arrays shaped as the driver reports them (retrying with larger output buffers when a
        dynamic output did not fit).  With ``return_timing=True`` returns ``(outputs, timing)``.
        A call with the same input shapes and dtypes as this thread's last one reuses its Request and
        pools (:class:`_RepeatPlan`): the inputs are copied in place and nothing is built again.
        An input the device can read where it lies (:meth:`_own_input_pool`) gets a pool of its own,
        written by a copy the device makes before the execution's work (:meth:`_write_input`).
        """
        plan = getattr(self._thread_pools, "plan", None)
        if plan is not None and plan.matches(inputs):
            try:
                plan.copy_in(inputs, self._write_input)
                shapes, timing = self.execute_synchronously(plan.request, measure_timing, deadline,
                                                            loop_timeout_duration)
            except BaseException as err:
                self._wait_for_inputs()
                if not (isinstance(err, DriverError) and err.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
                    raise
                self._thread_pools.plan = None       # a dynamic output outgrew its buffer: build again
            else:
                outputs = self._outputs(plan.request, shapes)
                return (outputs, timing) if return_timing else outputs
        main = self.model.main
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(main.input_indexes):
            raise invalid(f"execute expects a list of {len(main.input_indexes)} inputs")
        # pools: 0 the inputs' shared host pool, 1 the outputs', then one per input with a pool of its own
        in_args, in_arrays, own_pools, offset = [], [], [], 0
        for i, (value, idx) in enumerate(zip(inputs, main.input_indexes)):
            operand = main.operands[idx]
            if value is None:
                in_args.append(RequestArgument(has_no_value=True))
                in_arrays.append(None)
                continue
            info = OPERAND_TYPE_INFO[operand.type]
            arr = np.ascontiguousarray(to_dtype(value, info.dtype, f"input {i} ({operand.type.name})"))
            if not info.is_tensor and arr.ndim:
                arr = arr.reshape(-1)[:1] if arr.size == 1 else arr
            in_arrays.append(arr)
            dims = list(arr.shape) if info.is_tensor else []
            own = self._reusable_pool(("own", i), arr.nbytes, self._own_input_pool) \
                if info.is_tensor and arr.nbytes else None
            if own is not None:
                in_args.append(RequestArgument(DataLocation(2 + len(own_pools), 0, arr.nbytes), dims))
                own_pools.append(own)
                continue
            in_args.append(RequestArgument(DataLocation(0, offset, max(arr.nbytes, 0)), dims))
            offset += round_up(arr.nbytes, 64)
        in_pool = self._reusable_pool("in", offset)
        guesses = [self._output_bytes_guess(i) for i in range(len(main.output_indexes))]
        try:
            for arr, arg in zip(in_arrays, in_args):
                if arr is not None and arr.nbytes:
                    at = arg.location.pool_index
                    if at == 0:
                        in_pool.array(np.uint8, arg.location.offset, arr.nbytes)[:] = arr.reshape(-1).view(np.uint8)
                    else:
                        self._write_input(own_pools[at - 2], arr)
            for _attempt in range(3):
                out_args, offset = [], 0
                for i, size in enumerate(guesses):
                    out_args.append(RequestArgument(DataLocation(1, offset, size), []))
                    offset += round_up(size, 64)
                out_pool = self._reusable_pool("out", offset)
                request = Request(in_args, out_args, [in_pool, out_pool, *own_pools])
                try:
                    shapes, timing = self.execute_synchronously(request, measure_timing, deadline,
                                                                loop_timeout_duration)
                except DriverError as err:
                    if err.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE or not err.output_shapes:
                        raise
                    guesses = [max(g, self._bytes_of(i, s.dimensions)) for i, (g, s) in
                               enumerate(zip(guesses, err.output_shapes))]
                    continue
                self._thread_pools.plan = _RepeatPlan.of(inputs, in_arrays, request, main)
                outputs = self._outputs(request, shapes)
                return (outputs, timing) if return_timing else outputs
        except BaseException:
            self._wait_for_inputs()
            raise
        raise failure("outputs kept growing across retries")

    def _outputs(self, request: Request, shapes: list[OutputShape]) -> list[np.ndarray]:
        """Copies of :meth:`execute`'s outputs, read from ``request``'s output pool in the shapes the
        execution reported."""
        main = self.model.main
        out_pool = request.pools[1]
        outputs = []
        for i, arg in enumerate(request.outputs):
            operand = main.operands[main.output_indexes[i]]
            dims = shapes[i].dimensions if shapes else list(operand.dimensions)
            dtype = OPERAND_TYPE_INFO[operand.type].dtype
            n = element_count(dims)
            arr = np.frombuffer(out_pool.view(), dtype=np.uint8 if dtype == np.bool_ else dtype, count=n,
                                offset=arg.location.offset).reshape(dims)
            outputs.append(arr.astype(dtype) if dtype == np.bool_ else arr.copy())
        return outputs

    def _own_input_pool(self, nbytes: int):
        """A pool for one input of :meth:`execute` that this device reads where it lies (its
        execution copies nothing), or None.  None here: every input goes to a shared host pool."""
        return None

    def _write_input(self, pool, data: np.ndarray) -> None:
        """Put the contiguous ``data`` at the start of ``pool`` (one of :meth:`_own_input_pool`'s)
        before the next execution's work; ``data`` stays unchanged until that execution returns
        (or :meth:`_wait_for_inputs`)."""
        pool.write(0, data)

    def _wait_for_inputs(self) -> None:
        """Wait until the copies :meth:`_write_input` started are done (an execution that failed
        before waiting for its device: the caller's arrays are theirs again)."""

    def _reusable_pool(self, key, nbytes: int, make=None):
        """The pool ``key`` of at least ``nbytes`` for :meth:`execute`, kept per thread and reused (a
        fresh memfd per call costs a page fault per page; outputs are copied out before reuse); a new
        one from ``make(nbytes)`` (None: nothing kept) or, by default, shared memory."""
        pools = self._thread_pools.__dict__
        pool = pools.get(key)
        if pool is None or pool.size < nbytes:
            pool = make(nbytes) if make is not None else SharedMemory(max(round_up(nbytes, 4096), 4096))
            if pool is not None:
                pools[key] = pool
        return pool

    def cache_payload(self) -> CompiledModel:
        """Compilation cache (``prepareModel_1_3`` with cache files): what this prepared model's device
        needs to rebuild it without compiling (see Device.load_prepared)."""
        raise failure(f"{type(self).__name__} cannot be cached")

    # ---- running a validated request -----------------------------------------------------------------
    def bind(self, request: Request) -> BoundRequest:
        """``request`` validated and its pools resolved (runtime.request_binding), from the cache of
        recent bindings when it ran before."""
        return self._bindings.bind(self, request)

    def run_bound(self, bound: BoundRequest, ctx: ExecutionContext, start_ns: int) -> tuple[list[OutputShape], Timing]:
        """Run a validated request; (output shapes, timing measured from ``start_ns``)."""
        shapes, device_ns = self._execute(bound, ctx)
        return shapes, execution_timing(ctx.measure, start_ns, device_ns)

    def execute_fenced_work(self, work: FencedWork) -> None:
        """Start a validated fenced execution.  Default: once the waited-for fences have signalled, a
        job of the device's scheduler runs it and finishes ``work``."""
        def job():
            if work.begin():
                work.run(lambda: self._execute(work.bound, work.ctx)[1])

        when_signalled(work.fences, lambda: self.device.scheduler.submit(job, self.priority))

    def check_outputs_fully_specified(self, bound: BoundRequest) -> None:
        for i, dims in enumerate(bound.shapes.outputs):
            known = PreparedModel.known_output_shape(self, i)  # the model's operand, not inferred (as AOSP)
            if not ((dims is not None and 0 not in dims) or known is not None):
                raise invalid(f"execute_fenced: output {i} is not fully specified (fenced executions have no "
                              "dynamic output shapes)")

    # ---- for subclasses ----------------------------------------------------------------------------
    def _execute(self, request: BoundRequest, ctx: ExecutionContext) -> tuple[list[OutputShape], int | None]:
        """Run a validated request.  Default: host arrays through :meth:`_compute`.

        Returns the output shapes and the on-device time in ns (None when not measured).
        """
        inputs = self.read_inputs(request)
        outputs, device_ns = self._compute(inputs, ctx)
        return self.write_outputs(request, outputs), device_ns

    def _compute(self, inputs: list[np.ndarray | None], ctx: ExecutionContext) -> tuple[list[np.ndarray], int | None]:
        raise NotImplementedError

    # ---- shared machinery --------------------------------------------------------------------------
    def _validate_execution(self, request, measure_timing, deadline,
                            loop_timeout_duration) -> tuple[BoundRequest, ExecutionContext]:
        ctx = execution_context(measure_timing, deadline, loop_timeout_duration)
        bound = self.bind(request)
        bound.begin()  # output buffers stay uninitialized unless this execution writes them
        check_not_expired(ctx.deadline_ns)
        return bound, ctx

    def _operand(self, io: str, i: int):
        main = self.model.main
        return main.operands[(main.input_indexes if io == "in" else main.output_indexes)[i]]

    def _bytes_of(self, output_index: int, dims: Sequence[int]) -> int:
        return byte_size(self._operand("out", output_index).type, dims)

    def _output_bytes_guess(self, output_index: int) -> int:
        dims = self.known_output_shape(output_index)
        if dims is not None:
            return max(self._bytes_of(output_index, dims), 1)
        return 256

    def known_output_shape(self, output_index: int) -> tuple[int, ...] | None:
        """The output's shape if known at preparation (subclasses with shape inference refine this)."""
        operand = self._operand("out", output_index)
        info = OPERAND_TYPE_INFO[operand.type]
        if not info.is_tensor:
            return ()
        if operand.dimensions and 0 not in operand.dimensions:
            return tuple(operand.dimensions)
        return None

    def read_inputs(self, request: BoundRequest, positions: Sequence[int] | None = None) -> list[np.ndarray | None]:
        """Copy each request input (or only those at ``positions``; None for the others) out of its
        pool into a numpy array (scalars as Python values)."""
        values: list[np.ndarray | None] = []
        for i, (arg, shape) in enumerate(zip(request.inputs, request.shapes.inputs)):
            if arg.has_no_value or shape is None or (positions is not None and i not in positions):
                values.append(None)
                continue
            operand = self._operand("in", i)
            info = OPERAND_TYPE_INFO[operand.type]
            pool = request.pools[arg.location.pool_index]
            if isinstance(pool, DriverBuffer):
                values.append(pool.read_value())
                continue
            n = element_count(shape) if info.is_tensor else 1
            if isinstance(pool, HardwareBuffer):  # device-resident or non-BLOB: read through the allocator
                raw = pool.read(arg.location.offset, n * info.byte_size)
            else:
                raw = pool.view()[arg.location.offset:arg.location.offset + n * info.byte_size]
            arr = np.frombuffer(raw, dtype=info.dtype.newbyteorder("<") if info.dtype != np.bool_ else np.uint8,
                                count=n)
            arr = (arr != 0) if info.dtype == np.bool_ else arr.astype(info.dtype)
            values.append(arr.reshape(shape) if info.is_tensor else arr[0].item())
        return values

    def check_output_sizes(self, request: BoundRequest, dims: Sequence[Sequence[int]]) -> list[OutputShape]:
        """OutputShapes for outputs of the given dimensions; OUTPUT_INSUFFICIENT_SIZE (with the shapes)
        if some request argument is too small.  Memory-domain outputs size themselves."""
        shapes = []
        for i, (arg, d) in enumerate(zip(request.outputs, dims)):
            pool = request.pools[arg.location.pool_index]
            sufficient = isinstance(pool, DriverBuffer) or arg.location.length >= self._bytes_of(i, d)
            shapes.append(OutputShape(list(d), sufficient))
        if not all(s.is_sufficient for s in shapes):
            bad = [i for i, s in enumerate(shapes) if not s.is_sufficient]
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,
                              f"output buffer(s) {bad} too small for the computed shapes", shapes)
        return shapes

    def write_outputs(self, request: BoundRequest, outputs: list[np.ndarray]) -> list[OutputShape]:
        """Check every output fits its argument, then write them; OUTPUT_INSUFFICIENT_SIZE otherwise."""
        shapes = self.check_output_sizes(request, [
            list(np.shape(value)) if OPERAND_TYPE_INFO[self._operand("out", i).type].is_tensor else []
            for i, value in enumerate(outputs)])
        for i, (arg, value) in enumerate(zip(request.outputs, outputs)):
            pool = request.pools[arg.location.pool_index]
            info = OPERAND_TYPE_INFO[self._operand("out", i).type]
            arr = np.ascontiguousarray(np.asarray(value).astype(info.dtype, copy=False))
            if isinstance(pool, DriverBuffer):
                pool.write_value(arr)
                continue
            data = arr.astype(np.uint8).tobytes() if info.dtype == np.bool_ else arr.astype(
                info.dtype.newbyteorder("<")).tobytes()
            pool.write(arg.location.offset, data)
        return shapes


class _RepeatPlan:
    """The Request of a thread's last :meth:`PreparedModel.execute` and where each input goes in its
    pool: a call with inputs of the same shapes and dtypes (numpy arrays, or None where that call had
    None) copies them in place and runs the same Request."""

    __slots__ = ("request", "signature", "views")

    def __init__(self, request: Request, signature: tuple, views: list):
        self.request = request
        self.signature = signature   # per input: (shape, dtype), or None for an omitted one
        self.views = views           # per input: its view in the shared input pool, its own pool, or None

    @staticmethod
    def of(inputs, arrays: list, request: Request, main) -> "_RepeatPlan | None":
        """The plan of a call that passed ``inputs`` (converted to ``arrays``), or None when some
        input was not already a tensor's numpy array of the operand's dtype."""
        signature, views = [], []
        pool = request.pools[0]
        for value, arr, arg, idx in zip(inputs, arrays, request.inputs, main.input_indexes):
            if value is None:
                signature.append(None)
                views.append(None)
                continue
            if (type(value) is not np.ndarray or value.dtype != arr.dtype or value.shape != arr.shape
                    or not OPERAND_TYPE_INFO[main.operands[idx].type].is_tensor):
                return None
            signature.append((value.shape, value.dtype))
            at = arg.location.pool_index
            if not arr.nbytes:
                views.append(None)
            elif at == 0:
                views.append(pool.array(arr.dtype, arg.location.offset, arr.size).reshape(arr.shape))
            else:
                views.append(request.pools[at])   # a pool of its own: written by the prepared model
        return _RepeatPlan(request, tuple(signature), views)

    def matches(self, inputs) -> bool:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(self.signature):
            return False
        for value, sig in zip(inputs, self.signature):
            if sig is None:
                if value is not None:
                    return False
            elif type(value) is not np.ndarray or value.shape != sig[0] or value.dtype != sig[1]:
                return False
        return True

    def copy_in(self, inputs, write_input) -> None:
        """Put each input in its place: a view of the shared host pool by assignment, a pool of its
        own by ``write_input(pool, contiguous array)``."""
        for value, view in zip(inputs, self.views):
            if view is None:
                continue
            if type(view) is np.ndarray:
                view[...] = value
            else:
                write_input(view, np.ascontiguousarray(value))


def to_dtype(value, dtype: np.dtype, what: str) -> np.ndarray:
    """Convert user data to an operand's dtype, or refuse with INVALID_ARGUMENT; never a silent change
    of a value beyond rounding.

    * safe casts (int8 → int32, float16 → float32, …) and anything to bool: as numpy casts them;
    * integers or floats to a float type: rounded to the nearest representable value (precision may
      be lost, tiny values may become 0), but a *finite* value beyond the target's range (e.g. 1e300
      to float32, 70000 to float16) is refused instead of becoming inf; NaN and ±inf stay allowed
      and pass through unchanged;
    * integers to a narrower integer type: only when every value fits (no wrap-around);
    * anything else (floats to integers, strings, objects): refused.
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise invalid(f"{what}: not array-like: {exc}") from None
    if arr.dtype == object:
        raise invalid(f"{what}: not a numeric array")
    if arr.dtype.kind in "iubf" and dtype.kind == "f":  # to float: at worst loses precision, never range
        if arr.dtype == dtype:
            return arr
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, not warned
            out = arr.astype(dtype)
        if not np.isfinite(out).all():
            overflowed = ~np.isfinite(out) & np.isfinite(arr)
            if overflowed.any():
                lim = np.finfo(dtype).max
                raise invalid(f"{what}: value {arr[overflowed].flat[0].item()!r} is outside the finite range "
                              f"[{-lim:.8g}, {lim:.8g}] of {dtype} ({int(overflowed.sum())} such value(s)); "
                              f"NaN and ±inf are accepted, finite values must fit")
        return out
    if np.can_cast(arr.dtype, dtype, casting="safe") or dtype == np.bool_:
        return arr.astype(dtype, copy=False)
    if arr.dtype.kind in "iub" and dtype.kind in "iu":  # e.g. int64 → int32: values must fit, no wrap
        lim = np.iinfo(dtype)
        if arr.size == 0 or (arr.min() >= lim.min and arr.max() <= lim.max):
            return arr.astype(dtype)
        raise invalid(f"{what}: values outside the range [{lim.min}, {lim.max}] of {dtype}")
    raise invalid(f"{what}: cannot convert {arr.dtype} data to {dtype}")
