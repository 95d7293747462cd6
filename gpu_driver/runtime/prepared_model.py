"""PreparedModel: the HAL IPreparedModel, shared by every device.

The base class owns everything that is the same on every device: argument checks, request
validation, deadline handling, reading inputs from and writing outputs to request pools,
OutputShape / OUTPUT_INSUFFICIENT_SIZE reporting, timing, and the numpy convenience
:meth:`PreparedModel.execute`.  A device implements :meth:`PreparedModel._compute` (host arrays in,
host arrays out) or overrides :meth:`PreparedModel._execute` for device-resident data.
"""
from __future__ import annotations

import abc
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import DriverError, failure, invalid
from ..hal.model import DataLocation, Model, Request, RequestArgument
from ..hal.types import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    NO_TIMING,
    OPERAND_TYPE_INFO,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    OutputShape,
    Timing,
    boot_time_ns,
)
from ..memory import HardwareBuffer, SharedMemory
from ..sizes import element_count, round_up
from ..validation import byte_size
from .driver_buffer import DriverBuffer
from .request_binding import BoundRequest, bind_request

if TYPE_CHECKING:
    from ..compiler.artifact import CompiledModel


@dataclass
class ExecutionContext:
    """Per-execution settings after validation: absolute deadline (boot clock ns), loop timeout (ns)."""

    measure: bool
    deadline_ns: int | None
    loop_timeout_ns: int


def check_deadline_argument(deadline) -> int | None:
    if deadline is None:
        return None
    if isinstance(deadline, bool) or not isinstance(deadline, int) or deadline < 0:
        raise invalid(f"deadline must be None or a non-negative int (ns on the boot clock), got {deadline!r}")
    return deadline


def _check_loop_timeout(duration) -> int:
    if duration is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 0:
        raise invalid(f"loop_timeout_duration must be None or a non-negative int (ns), got {duration!r}")
    if duration > LOOP_TIMEOUT_MAXIMUM_NS:
        raise invalid(f"loop_timeout_duration {duration} ns exceeds the maximum {LOOP_TIMEOUT_MAXIMUM_NS} ns")
    return duration


def _check_measure(measure) -> bool:
    try:
        return MeasureTiming(measure) == MeasureTiming.YES
    except (ValueError, TypeError):
        raise invalid(f"measure_timing must be a MeasureTiming, got {measure!r}") from None


class PreparedModel(abc.ABC):
    """A model compiled for one device (HAL IPreparedModel); thread-safe, reusable."""

    def __init__(self, device, model: Model):
        self.device = device
        self.model = model
        self._lock = threading.Lock()
        self._thread_pools = threading.local()  # execute()'s reusable request pools, per thread
        #: the ExecutionPreference it was prepared with (set by Device.prepare_model / the cache loader)
        self.preference = ExecutionPreference.FAST_SINGLE_ANSWER

    # ---- HAL entry points --------------------------------------------------------------------------
    def execute_synchronously(self, request: Request, measure_timing: MeasureTiming = MeasureTiming.NO,
                              deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> tuple[list[OutputShape], Timing]:
        """HAL ``executeSynchronously_1_3``: run ``request``; return (output shapes, timing).

        Raises DriverError: INVALID_ARGUMENT for a bad request, OUTPUT_INSUFFICIENT_SIZE (with
        ``output_shapes``) when an output buffer is too small, MISSED_DEADLINE_* when the deadline
        passes, GENERAL_FAILURE for device trouble or bad data.
        """
        start = time.perf_counter_ns()
        bound, ctx = self._validate_execution(request, measure_timing, deadline, loop_timeout_duration)
        shapes, device_ns = self._execute(bound, ctx)
        if not ctx.measure:
            return shapes, NO_TIMING
        in_driver_us = (time.perf_counter_ns() - start) // 1000
        on_device_us = NO_TIMING.time_on_device if device_ns is None else min(device_ns // 1000, in_driver_us)
        return shapes, Timing(time_on_device=on_device_us, time_in_driver=in_driver_us)

    def execute(self, inputs: Sequence[np.ndarray | None], *, measure_timing: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout_duration: int | None = None,
                return_timing: bool = False):
        """Convenience: run with numpy inputs (``None`` = omitted optional input); return the outputs.

        Builds shared-memory pools and the Request, calls :meth:`execute_synchronously`, and returns
        a list of arrays shaped as the driver reports them (retrying with larger output buffers when a
        dynamic output did not fit).  With ``return_timing=True`` returns ``(outputs, timing)``.
        """
        main = self.model.main
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(main.input_indexes):
            raise invalid(f"execute expects a list of {len(main.input_indexes)} inputs")
        in_args, in_arrays, offset = [], [], 0
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
            in_args.append(RequestArgument(DataLocation(0, offset, max(arr.nbytes, 0)), dims))
            offset += round_up(arr.nbytes, 64)
        in_pool = self._reusable_pool("in", offset)
        for arr, arg in zip(in_arrays, in_args):
            if arr is not None and arr.nbytes:
                in_pool.array(np.uint8, arg.location.offset, arr.nbytes)[:] = arr.reshape(-1).view(np.uint8)
        guesses = [self._output_bytes_guess(i) for i in range(len(main.output_indexes))]
        for _attempt in range(3):
            out_args, offset = [], 0
            for i, size in enumerate(guesses):
                out_args.append(RequestArgument(DataLocation(1, offset, size), []))
                offset += round_up(size, 64)
            out_pool = self._reusable_pool("out", offset)
            request = Request(in_args, out_args, [in_pool, out_pool])
            try:
                shapes, timing = self.execute_synchronously(request, measure_timing, deadline, loop_timeout_duration)
            except DriverError as err:
                if err.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE or not err.output_shapes:
                    raise
                guesses = [max(g, self._bytes_of(i, s.dimensions)) for i, (g, s) in
                           enumerate(zip(guesses, err.output_shapes))]
                continue
            outputs = []
            for i, arg in enumerate(out_args):
                operand = main.operands[main.output_indexes[i]]
                dims = shapes[i].dimensions if shapes else list(operand.dimensions)
                dtype = OPERAND_TYPE_INFO[operand.type].dtype
                n = element_count(dims)
                arr = np.frombuffer(out_pool.view(), dtype=np.uint8 if dtype == np.bool_ else dtype, count=n,
                                    offset=arg.location.offset).reshape(dims)
                outputs.append(arr.astype(dtype) if dtype == np.bool_ else arr.copy())
            return (outputs, timing) if return_timing else outputs
        raise failure("outputs kept growing across retries")

    def _reusable_pool(self, kind: str, nbytes: int) -> SharedMemory:
        """A shared-memory pool of at least ``nbytes`` for :meth:`execute`, kept per thread and reused
        (a fresh memfd per call costs a page fault per page; outputs are copied out before reuse)."""
        pools = self._thread_pools.__dict__
        pool = pools.get(kind)
        if pool is None or pool.size < nbytes:
            pool = pools[kind] = SharedMemory(max(round_up(nbytes, 4096), 4096))
        return pool

    def cache_payload(self) -> CompiledModel:
        """Compilation cache (``prepareModel_1_3`` with cache files): what this prepared model's device
        needs to rebuild it without compiling (see Device.load_prepared)."""
        raise failure(f"{type(self).__name__} cannot be cached")

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
        measure = _check_measure(measure_timing)
        deadline_ns = check_deadline_argument(deadline)
        loop_ns = _check_loop_timeout(loop_timeout_duration)
        bound = bind_request(self, request)
        bound.begin()  # output buffers stay uninitialized unless this execution writes them
        if deadline_ns is not None and boot_time_ns() > deadline_ns:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "the deadline had passed before execution")
        return bound, ExecutionContext(measure, deadline_ns, loop_ns)

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


def to_dtype(value, dtype: np.dtype, what: str) -> np.ndarray:
    """Convert user data to an operand's dtype: safe casts, float to float, or integers that fit the
    range (never a silent wrap-around)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise invalid(f"{what}: not array-like: {exc}") from None
    if arr.dtype == object:
        raise invalid(f"{what}: not a numeric array")
    if (np.can_cast(arr.dtype, dtype, casting="safe") or dtype == np.bool_
            or (arr.dtype.kind in "iubf" and dtype.kind == "f")):  # to float: at worst loses precision
        return arr.astype(dtype, copy=False)
    if arr.dtype.kind in "iub" and dtype.kind in "iu":  # e.g. int64 → int32: values must fit, no wrap
        lim = np.iinfo(dtype)
        if arr.size == 0 or (arr.min() >= lim.min and arr.max() <= lim.max):
            return arr.astype(dtype)
        raise invalid(f"{what}: values outside the range [{lim.min}, {lim.max}] of {dtype}")
    raise invalid(f"{what}: cannot convert {arr.dtype} data to {dtype}")
