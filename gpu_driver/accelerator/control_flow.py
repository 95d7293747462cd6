"""Control flow (IF, WHILE) and operations with data-dependent output sizes on an accelerator.

A subgraph holding IF, WHILE or an operation whose output sizes depend on the data
(BOX_WITH_NMS_LIMIT…: its family registers a ``data_dependent`` launch) runs as a
:class:`SubgraphProgram`: a list of steps, each either a *segment* — a maximal run of ordinary
operations, compiled as a model of its own (an AcceleratorPreparedModel, specialised per input shape
like any model with dynamic shapes) — an IF / WHILE, interpreted on the host, or a data-dependent
operation: its kernel writes the outputs at their largest and their row count, the one number read
back to size them.  Every tensor between steps stays in device memory (a
HardwareBuffer of this device, bound device-to-device by the segments); only the boolean of an IF
condition or a WHILE condition subgraph is read back.  Referenced subgraphs (branches, condition,
body) are programs too, built once at preparation.

A WHILE loop whose condition has not turned false within the loop timeout, or an execution past its
deadline, ends with MISSED_DEADLINE_TRANSIENT (interface.md §7.5).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

import numpy as np

from ..compiler.codegen import generate
from ..compiler.ir import DataDependentKernel, KernelInstance
from ..compiler.support import supported_nodes
from ..errors import DriverError, failure
from ..graph import operand_info
from ..hal.model import DataLocation, Model, Operand, Operation, RequestArgument, Subgraph
from ..hal.types import OPERAND_TYPE_INFO, ErrorStatus, OperandLifeTime, OperationType
from ..memory import HardwareBuffer
from ..ops.catalog import lookup
from ..runtime.execution_limits import ExecutionContext, check_not_late
from ..runtime.prepared_model import PreparedModel
from ..runtime.request_binding import BoundRequest
from ..validation import RequestShapes, byte_size
from .prepared_model import COMPILE_TIME

CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)
_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _data_dependent(op: Operation) -> bool:
    entry = lookup(op.type)
    return entry is not None and entry.data_dependent is not None


def _standalone(op: Operation) -> bool:
    """A step of its own: IF, WHILE, or an operation with data-dependent output sizes."""
    return op.type in CONTROL_FLOW or _data_dependent(op)


def has_control_flow(model: Model) -> bool:
    """Whether the model runs as steps (see the module docstring)."""
    return any(_standalone(op) for op in model.main.operations)


@dataclass
class DeviceTensor:
    """A value between steps: its bytes in a device HardwareBuffer (None: an omitted optional input)."""

    buffer: HardwareBuffer | None
    shape: tuple[int, ...]
    nbytes: int


# ---- splitting a subgraph into steps ---------------------------------------------------------------

def _steps(subgraph: Subgraph) -> list[list[Operation] | Operation]:
    """The subgraph's operations as steps: lists of ordinary operations (segments) and IF/WHILE.  A
    segment also ends before an operation whose kernels are specialised on the value of a tensor the
    segment computes (say SLICE's begin): it becomes an input of the next segment, whose kernels
    are specialised on its value at execution."""
    steps: list = []
    produced: set[int] = set()
    for op in subgraph.operations:
        if _standalone(op):
            steps.append(op)
            continue
        entry = lookup(op.type)
        valued = {op.inputs[p] for p in (entry.value_inputs if entry else ()) if p < len(op.inputs)}
        if steps and isinstance(steps[-1], list) and not valued & produced:
            steps[-1].append(op)
        else:
            steps.append([op])
            produced = set()
        produced.update(op.outputs)
    return steps


def _needed_after(subgraph: Subgraph, steps: list) -> list[set[int]]:
    """For each step, the operands a later step or the subgraph's outputs read."""
    needed = set(subgraph.output_indexes)
    result = []
    for step in reversed(steps):
        result.append(set(needed))
        for op in (step if isinstance(step, list) else [step]):
            needed.update(op.inputs)
    return result[::-1]


def segment_model(model: Model, subgraph: Subgraph, ops: list[Operation],
                  needed: set[int]) -> tuple[Model, list[int], list[int]] | None:
    """The run ``ops`` of ``subgraph`` as a model of its own: (model, the subgraph operands it takes as
    inputs, those it returns); None when nothing it computes is read later."""
    produced = {o for op in ops for o in op.outputs}
    used: dict[int, None] = {}
    for op in ops:
        for i in (*op.inputs, *op.outputs):
            used.setdefault(i, None)
    operands = subgraph.operands
    ins = [i for i in used if i not in produced and operands[i].lifetime not in (*_CONSTANT, OperandLifeTime.NO_VALUE)]
    outs = [i for i in used if i in produced and i in needed]
    if not outs:
        return None
    index = {old: new for new, old in enumerate(used)}
    new_operands = []
    for old in used:
        o = operands[old]
        lifetime = o.lifetime
        if old in ins:
            lifetime = OperandLifeTime.SUBGRAPH_INPUT
        elif old in outs:
            lifetime = OperandLifeTime.SUBGRAPH_OUTPUT
        elif old in produced:
            lifetime = OperandLifeTime.TEMPORARY_VARIABLE
        new_operands.append(Operand(o.type, list(o.dimensions), o.scale, o.zero_point, lifetime, o.location,
                                    o.extra_params))
    new_ops = [Operation(op.type, [index[i] for i in op.inputs], [index[o] for o in op.outputs]) for op in ops]
    sub = Model(Subgraph(new_operands, new_ops, [index[i] for i in ins], [index[o] for o in outs]), [],
                model.operand_values, model.pools, model.relax_computation_float32_to_float16,
                model.extension_name_to_prefix)
    return sub, ins, outs


def _unknown_rank(model: Model) -> bool:
    """Whether a tensor operand of the model's main subgraph has an unknown rank."""
    return any(OPERAND_TYPE_INFO[o.type].is_tensor and not o.dimensions for o in model.main.operands)


def _lowerable(op: Operation, features: frozenset) -> bool:
    entry = lookup(op.type)
    return entry is not None and entry.lower is not None and entry.requires <= features


def _declared(model: Model, subgraph: Subgraph, op: Operation) -> tuple[list, list]:
    return ([operand_info(model, subgraph, i) for i in op.inputs],
            [operand_info(model, subgraph, o) for o in op.outputs])


def _data_dependent_ok(model: Model, subgraph: Subgraph, op: Operation) -> bool:
    """Its launch exists for the declared operands (shapes unknown here count as known later)."""
    ins, outs = _declared(model, subgraph, op)
    if any(t.shape is None for t in ins[:3]):
        return False
    return lookup(op.type).data_dependent(ins, outs) is not None


def _referenced_indexes(subgraph: Subgraph, op: Operation) -> list[int]:
    positions = (1, 2) if op.type == OperationType.IF else (0, 1)
    return [subgraph.operands[op.inputs[p]].location.offset for p in positions]


def control_flow_support(model: Model, features: frozenset) -> list[bool]:
    """For each main operation: whether the accelerator runs it — ordinary operations as part of their
    segment model, IF / WHILE when every operation of every subgraph they reach is supported."""
    memo: dict[int, bool] = {}

    def subgraph_ok(index: int, stack: tuple) -> bool:
        if index in stack:
            return False  # a recursive reference (validation refuses it anyway)
        if index not in memo:
            memo[index] = all(_support(model.referenced[index], (*stack, index)))
        return memo[index]

    def _support(subgraph: Subgraph, stack: tuple) -> list[bool]:
        steps = _steps(subgraph)
        flags: dict[int, bool] = {}
        for step, needed in zip(steps, _needed_after(subgraph, steps)):
            if isinstance(step, list):
                built = segment_model(model, subgraph, step, needed)
                if built is None:
                    ok = [True] * len(step)
                elif _unknown_rank(built[0]):  # decided per input shapes at execution (_Segment)
                    ok = [_lowerable(op, features) for op in step]
                else:
                    ok = supported_nodes(built[0], features)
                flags.update({id(op): f for op, f in zip(step, ok)})
            elif step.type in CONTROL_FLOW:
                flags[id(step)] = all(subgraph_ok(i, stack) for i in _referenced_indexes(subgraph, step))
            else:
                flags[id(step)] = _data_dependent_ok(model, subgraph, step)
        return [flags[id(op)] for op in subgraph.operations]

    try:
        return _support(model.main, ())
    except DriverError:
        return [False] * len(model.main.operations)


# ---- running ----------------------------------------------------------------------------------------

class _Segment:
    """A run of ordinary operations, prepared as a model of its own — at preparation, or, when some
    of its tensors have an unknown rank, per input-shape signature at execution."""

    #: segment models prepared per input-shape signature (unknown ranks)
    MAX_SHAPED = 16

    def __init__(self, device, built: tuple[Model, list[int], list[int]]):
        self.model, self.inputs, self.outputs = built
        self.device = device
        self.types = [self.model.main.operands[i].type for i in self.model.main.output_indexes]
        self._shaped: dict[tuple, PreparedModel] = {}
        self._shaped_lock = threading.Lock()  # executions of one prepared model may run at once
        #: per argument layout, what the prepared model derives from a request that names no pool
        #: (BoundRequest.shared_plans): every run with that layout reuses it
        self._plans: dict[tuple, dict] = {}
        self.prepared = None if _unknown_rank(self.model) else device.prepare_model(self.model)

    def _prepared_for(self, tensors: list[DeviceTensor]) -> PreparedModel:
        if self.prepared is not None:
            return self.prepared
        key = tuple(t.shape if t.buffer is not None else None for t in tensors)
        with self._shaped_lock:
            prepared = self._shaped.get(key)
        if prepared is None:
            main = self.model.main
            operands = list(main.operands)
            for idx, shape in zip(main.input_indexes, key):
                if shape is not None and OPERAND_TYPE_INFO[operands[idx].type].is_tensor:
                    operands[idx] = replace(operands[idx], dimensions=list(shape))
            started = time.perf_counter_ns()
            try:
                prepared = self.device.prepare_model(replace(self.model, main=replace(main, operands=operands)))
            finally:
                COMPILE_TIME.add(time.perf_counter_ns() - started)
            with self._shaped_lock:
                if len(self._shaped) >= self.MAX_SHAPED:
                    self._shaped.pop(next(iter(self._shaped)))
                self._shaped[key] = prepared
        return prepared

    def run(self, values: dict[int, DeviceTensor], ctx: ExecutionContext, read) -> None:
        tensors = [read(values, idx) for idx in self.inputs]
        prepared = self._prepared_for(tensors)
        pools, in_args = [], []
        for v in tensors:
            if v.buffer is None:
                in_args.append(RequestArgument(has_no_value=True))
                continue
            pools.append(v.buffer)
            in_args.append(RequestArgument(DataLocation(len(pools) - 1, 0, v.nbytes), list(v.shape)))
        shapes = [prepared.known_output_shape(k) for k in range(len(self.outputs))]
        for _attempt in range(3):
            sizes = [byte_size(t, s) if s is not None else 256 for t, s in zip(self.types, shapes)]
            outs = [HardwareBuffer.blob(max(n, 1), device=self.device) for n in sizes]
            out_args = [RequestArgument(DataLocation(len(pools) + k, 0, n)) for k, n in enumerate(sizes)]
            # the request is built here, correct by construction: bound without validation, which
            # would refuse the zero-length arguments of zero-sized tensors
            layout = (id(prepared), tuple((v.buffer is None, v.nbytes, v.shape) for v in tensors), tuple(sizes))
            shared = self._plans.get(layout)
            if shared is None:
                if len(self._plans) >= 4 * self.MAX_SHAPED:
                    self._plans.clear()
                shared = self._plans.setdefault(layout, {})
            bound = BoundRequest(in_args, out_args, pools + outs, RequestShapes(
                [None if v.buffer is None else tuple(v.shape) for v in tensors], list(shapes)), shared_plans=shared)
            try:
                result, _ = prepared.run_bound(bound, ExecutionContext(False, ctx.deadline_ns, ctx.loop_timeout_ns),
                                               time.perf_counter_ns())
            except DriverError as exc:
                if exc.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE or not exc.output_shapes:
                    raise
                shapes = [tuple(s.dimensions) for s in exc.output_shapes]
                continue
            for idx, buf, shape, t in zip(self.outputs, outs, result, self.types):
                dims = tuple(shape.dimensions)
                values[idx] = DeviceTensor(buf, dims, byte_size(t, dims))
            return
        raise failure("a control-flow segment's outputs kept growing")


class _LaunchSlot:
    """A data-dependent kernel's launch with its scratch buffers and row counter bound: one
    execution's use at a time (see _DataDependentStep); inputs and outputs are rebound per run."""

    def __init__(self, launcher, allocator, program, name: str, launch: DataDependentKernel):
        self.counter = allocator.alloc(4)
        self.scratch = [allocator.alloc(max(n, 1)) for n in launch.scratch_bytes]
        inputs, outputs = len(launch.input_positions), len(launch.max_output_bytes)
        first_output = inputs + len(self.scratch)
        #: the argument positions of the inputs, then the outputs (bound per run)
        self.tensor_positions = [*range(inputs), *range(first_output, first_output + outputs)]
        # the counter stands in for the inputs and outputs while no run has them bound
        args = [self.counter] * inputs + self.scratch + [self.counter] * (outputs + 1)
        self.launch = launcher.make_launch(program, name, args, launch.global_size, None)


class _DataDependentStep:
    """An operation with data-dependent output sizes: its kernel (compiled once per specialisation)
    over the device tensors, its outputs sized by the row count it reports.

    The launch, its scratch buffers and its row counter are kept between executions in a pool per
    specialisation: an execution takes a slot (a new one when every slot is in use by another thread),
    rebinds the inputs and outputs, and gives the slot back once the count has been read (the kernel
    has finished with its scratch then).  Outputs are fresh buffers every run: they are values that
    later steps, a WHILE loop's next iteration or the caller still read."""

    #: specialisations whose launch slots are kept (the oldest dropped beyond)
    MAX_POOLS = 16

    def __init__(self, device, model: Model, subgraph: Subgraph, op: Operation):
        self.device = device
        self.op = op
        self.hook = lookup(op.type).data_dependent
        self.inputs, self.outputs = _declared(model, subgraph, op)
        self._programs: dict[tuple, tuple] = {}
        self._slots: dict[tuple, list[_LaunchSlot]] = {}
        self._lock = threading.Lock()

    def _program(self, key: tuple, launch: DataDependentKernel):
        with self._lock:
            found = self._programs.get(key)
        if found is None:
            backend = self.device.backend.host_lane()
            kernel = KernelInstance(launch.template, dict(launch.defines), [], [], launch.global_size)
            started = time.perf_counter_ns()
            try:
                source = generate([kernel], backend.compiler.prelude)
                found = (backend.launcher.load(backend.compiler.compile(source), [kernel.name]), kernel.name)
            finally:
                COMPILE_TIME.add(time.perf_counter_ns() - started)
            with self._lock:
                found = self._programs.setdefault(key, found)
        return found

    def _take_slot(self, launch: DataDependentKernel) -> tuple[tuple, _LaunchSlot]:
        key = (launch.template, tuple(sorted(launch.defines.items())), tuple(launch.scratch_bytes),
               len(launch.input_positions), len(launch.max_output_bytes), tuple(launch.global_size))
        with self._lock:
            free = self._slots.get(key)
            if free:
                return key, free.pop()
        program, name = self._program(key[:2], launch)
        backend = self.device.backend.host_lane()
        return key, _LaunchSlot(backend.launcher, backend.allocator, program, name, launch)

    def _give_back(self, key: tuple, slot: _LaunchSlot) -> None:
        with self._lock:
            if key not in self._slots and len(self._slots) >= self.MAX_POOLS:
                self._slots.pop(next(iter(self._slots)))
            self._slots.setdefault(key, []).append(slot)

    def run(self, values: dict[int, DeviceTensor], ctx: ExecutionContext, read) -> None:
        tensors = {p: read(values, self.op.inputs[p]) for p in range(len(self.op.inputs))
                   if OPERAND_TYPE_INFO[self.inputs[p].type].is_tensor}
        ins = [replace(t, shape=tensors[p].shape, known_shape=True) if p in tensors else t
               for p, t in enumerate(self.inputs)]
        launch = self.hook(ins, self.outputs)
        if launch is None:
            raise failure(f"{self.op.type.name}: no kernel for these operands")
        backend = self.device.backend.host_lane()  # one work item, waited for at once
        allocator, launcher = backend.allocator, backend.launcher
        outs = [HardwareBuffer.blob(max(n, 1), device=self.device) for n in launch.max_output_bytes]
        key, slot = self._take_slot(launch)
        buffers = [tensors[p].buffer.device_buffer for p in launch.input_positions] + [o.device_buffer for o in outs]
        for position, buffer in zip(slot.tensor_positions, buffers):
            launcher.rebind(slot.launch, position, buffer)
        launcher.enqueue([slot.launch])
        count = int(allocator.download(slot.counter, np.zeros(1, np.int32))[0])  # the one number read back
        for position in slot.tensor_positions:
            launcher.rebind(slot.launch, position, slot.counter)  # the pool keeps no tensor alive
        self._give_back(key, slot)  # the kernel is done with its scratch (on an error the slot is dropped)
        if count < 0:
            raise failure(launch.error)
        for idx, buf, shape, info in zip(self.op.outputs, outs, launch.shapes(count), self.outputs):
            values[idx] = DeviceTensor(buf, tuple(shape), byte_size(info.type, shape))


class SubgraphProgram:
    """A subgraph as steps over device tensors (see the module docstring)."""

    def __init__(self, device, model: Model, subgraph: Subgraph, programs: dict[int, SubgraphProgram]):
        self.device = device
        self.model = model
        self.subgraph = subgraph
        self.programs = programs
        self._constants: dict[int, DeviceTensor] = {}
        self.steps: list = []
        steps = _steps(subgraph)
        for step, needed in zip(steps, _needed_after(subgraph, steps)):
            if isinstance(step, list):
                built = segment_model(model, subgraph, step, needed)
                if built is not None:
                    self.steps.append(_Segment(device, built))
                continue
            if step.type not in CONTROL_FLOW:
                self.steps.append(_DataDependentStep(device, model, subgraph, step))
                continue
            for index in _referenced_indexes(subgraph, step):
                if index not in programs:
                    programs[index] = None  # being built (validation refuses cycles)
                    programs[index] = SubgraphProgram(device, model, model.referenced[index], programs)
            self.steps.append(step)

    def run(self, inputs: list[DeviceTensor], ctx: ExecutionContext) -> list[DeviceTensor]:
        values = dict(zip(self.subgraph.input_indexes, inputs))
        for step in self.steps:
            check_not_late(ctx.deadline_ns, "during the execution")
            if isinstance(step, (_Segment, _DataDependentStep)):
                step.run(values, ctx, self.read)
            elif step.type == OperationType.IF:
                branch = _referenced_indexes(self.subgraph, step)[0 if self._condition(values, step.inputs[0]) else 1]
                outs = self.programs[branch].run([self.read(values, i) for i in step.inputs[3:]], ctx)
                values.update(zip(step.outputs, outs))
            else:
                values.update(zip(step.outputs, self._loop(values, step, ctx)))
        return [self.read(values, i) for i in self.subgraph.output_indexes]

    def _loop(self, values: dict[int, DeviceTensor], op: Operation, ctx: ExecutionContext) -> list[DeviceTensor]:
        cond_index, body_index = _referenced_indexes(self.subgraph, op)
        cond, body = self.programs[cond_index], self.programs[body_index]
        state = [self.read(values, i) for i in op.inputs[2:]]
        carried = len(body.subgraph.output_indexes)
        start, compiled = time.monotonic_ns(), COMPILE_TIME.ns
        while True:  # compiling a specialisation on first use does not count against the timeout
            if time.monotonic_ns() - start - (COMPILE_TIME.ns - compiled) > ctx.loop_timeout_ns:
                raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "WHILE loop exceeded the loop timeout")
            check_not_late(ctx.deadline_ns, "during a WHILE loop")
            (flag,) = cond.run(state, ctx)
            if not _truth(self.device, flag):
                return state[:len(op.outputs)]
            state[:carried] = body.run(state, ctx)

    def _condition(self, values: dict[int, DeviceTensor], index: int) -> bool:
        return _truth(self.device, self.read(values, index))

    def read(self, values: dict[int, DeviceTensor], index: int) -> DeviceTensor:
        """The device tensor of operand ``index``: computed, a subgraph input, or a constant (uploaded once)."""
        v = values.get(index)
        if v is not None:
            return v
        operand = self.subgraph.operands[index]
        if operand.lifetime == OperandLifeTime.NO_VALUE:
            return DeviceTensor(None, (), 0)
        if operand.lifetime not in _CONSTANT:
            raise failure(f"operand {index} has no value when it is read")
        if index not in self._constants:
            info = operand_info(self.model, self.subgraph, index)
            self._constants[index] = upload(self.device, operand.type, info.value)
        return self._constants[index]


def _host_read(device, t: DeviceTensor, nbytes: int) -> np.ndarray:
    """The first ``nbytes`` of a device tensor, read through the lane of the device for tiny work
    (PoCL's inline lane: no worker wake-up); every step before has finished."""
    handle = t.buffer.device_buffer
    if handle is None:  # a tensor in host memory
        return np.frombuffer(t.buffer.read(0, nbytes), np.uint8)
    return device.backend.host_lane().allocator.download(handle, np.empty(nbytes, np.uint8))


def _truth(device, t: DeviceTensor) -> bool:
    """The boolean a condition tensor holds (one byte read back from the device)."""
    return bool(_host_read(device, t, 1)[0])


def upload(device, operand_type, value) -> DeviceTensor:
    """A host value as a device tensor of ``operand_type``."""
    info = OPERAND_TYPE_INFO[operand_type]
    arr = np.ascontiguousarray(np.asarray(value, dtype=np.uint8 if info.dtype == np.bool_ else info.dtype))
    shape = arr.shape if info.is_tensor else ()
    buf = HardwareBuffer.blob(max(arr.nbytes, 1), device=device)
    if arr.nbytes:
        buf.write(0, arr.tobytes())
    return DeviceTensor(buf, tuple(int(d) for d in shape), arr.nbytes)


def download(device, t: DeviceTensor, operand_type) -> np.ndarray:
    info = OPERAND_TYPE_INFO[operand_type]
    raw = _host_read(device, t, t.nbytes) if t.nbytes else np.empty(0, np.uint8)
    arr = np.frombuffer(bytes(raw), dtype=np.uint8 if info.dtype == np.bool_ else info.dtype)
    arr = (arr != 0) if info.dtype == np.bool_ else arr
    return arr.reshape(t.shape) if info.is_tensor else arr.reshape(-1)[0]


class ControlFlowPreparedModel(PreparedModel):
    """A model with IF / WHILE prepared on an accelerator: its main subgraph as a SubgraphProgram."""

    def __init__(self, device, model: Model):
        super().__init__(device, model)
        self.program = SubgraphProgram(device, model, model.main, {})

    def _compute(self, inputs, ctx: ExecutionContext):
        main = self.model.main
        tensors = [DeviceTensor(None, (), 0) if v is None else upload(self.device, main.operands[i].type, v)
                   for v, i in zip(inputs, main.input_indexes)]
        outs = self.program.run(tensors, ctx)
        return [download(self.device, t, main.operands[i].type) for t, i in zip(outs, main.output_indexes)], None
