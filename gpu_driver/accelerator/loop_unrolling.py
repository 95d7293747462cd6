"""WHILE loops with a trip count known at preparation, unrolled into the main subgraph.

Keras recurrent layers (LSTM, GRU, SimpleRNN) reach TF Lite as WHILE loops over the time steps: the
condition compares two counters with constants, the body adds one to each.  Interpreted on the
host (accelerator/control_flow.py), every iteration costs a condition read back and the launches
of a separately compiled body.  When the condition depends only on values the preparation can
compute, the loop runs a fixed number of times; :func:`unroll_static_loops` then replaces the WHILE
with that many copies of the body's operations, so the whole model compiles into one program (the
counters fold into constants there).

A loop is static when every input its condition reads, followed back through the body's updates
of the loop-carried and state operands it depends on, starts from a value known at preparation: a
constant, or an operation of constants.  The trip count is found by running those parts of the
condition and the body with the reference kernels.  Loops that may not end within
:data:`MAX_TRIP_COUNT` iterations, that would exceed :data:`MAX_UNROLLED_OPERATIONS`, that run zero
times, or whose body passes an input or a constant straight through to a loop-carried output stay
WHILE operations (interpreted, with the loop timeout of interface.md §7.5).
"""
from __future__ import annotations

import copy
import logging
from dataclasses import replace

import numpy as np

from ..graph import encode_value, merge_shapes, operand_info
from ..hal.model import DataLocation, Model, Operation, Subgraph
from ..hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperationType
from ..ops.catalog import lookup
from ..ops.definition import TensorInfo

log = logging.getLogger(__name__)

#: iterations a loop may run and still be unrolled
MAX_TRIP_COUNT = 512
#: operations the main subgraph may hold after unrolling
MAX_UNROLLED_OPERATIONS = 4096
#: results of at most this many elements computed from constants become constants (the counters,
#: and the indices and slice positions computed from them, which kernels are specialised on)
FOLD_MAX_ELEMENTS = 64

_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)
_KNOWN = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE, OperandLifeTime.NO_VALUE)
_PER_ITERATION = (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.SUBGRAPH_OUTPUT)


def unroll_static_loops(model: Model) -> Model:
    """``model`` with each WHILE of its main subgraph whose trip count is known at preparation
    replaced by copies of its body (repeatedly, so a static loop nested in an unrolled body is
    unrolled too); ``model`` itself when no loop qualifies."""
    main = model.main
    changed = False
    position = 0
    while position < len(main.operations):
        op = main.operations[position]
        if op.type != OperationType.WHILE:
            position += 1
            continue
        cond, body = (model.referenced[int(main.operands[i].location.offset)] for i in op.inputs[:2])
        trips = _trip_count(model, main, op, cond, body)
        budget = MAX_UNROLLED_OPERATIONS - (len(main.operations) - 1)
        if trips is None or trips == 0 or trips * len(body.operations) > budget or not _outputs_unrollable(body, op):
            position += 1
            continue
        if not changed:  # copy on first write: the caller's model is left as it is
            main = replace(main, operands=list(main.operands), operations=list(main.operations),
                           output_indexes=list(main.output_indexes))
            model = replace(model, main=main)
            changed = True
        unrolled = _fold_small_constants(model, _unroll(main, body, op, trips))
        main.operations[position:position + 1] = unrolled
        log.debug("unrolled a WHILE loop of %d iterations (%d operations)", trips, len(unrolled))
        # the copies may hold WHILE loops of their own: the scan goes on from the first copy
    return model


def _outputs_unrollable(body: Subgraph, op: Operation) -> bool:
    """Whether each loop-carried output of the body is computed by one of its operations, and by
    a different operand per output (the last iteration's operations write the WHILE's outputs)."""
    produced = {i for o in body.operations for i in o.outputs}
    carried = body.output_indexes[:len(op.outputs)]
    return all(i in produced for i in carried) and len(set(carried)) == len(carried)


# ---- values known at preparation ---------------------------------------------------------------------

def _needed_operations(subgraph: Subgraph, targets: list[int]) -> list[Operation] | None:
    """The operations ``targets`` depend on, in subgraph order; None when one is IF / WHILE."""
    producer = {i: o for o in subgraph.operations for i in o.outputs}
    needed: set[int] = set()
    stack = list(targets)
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen or i not in producer:
            continue
        seen.add(i)
        o = producer[i]
        if o.type in _CONTROL_FLOW:
            return None
        needed.add(id(o))
        stack.extend(o.inputs)
    return [o for o in subgraph.operations if id(o) in needed]


def _input_dependencies(subgraph: Subgraph, targets: list[int]) -> set[int] | None:
    """The positions of the subgraph inputs ``targets`` depend on; None through IF / WHILE."""
    ops = _needed_operations(subgraph, targets)
    if ops is None:
        return None
    reached = set(targets) | {i for o in ops for i in o.inputs}
    return {p for p, i in enumerate(subgraph.input_indexes) if i in reached}


class _Evaluator:
    """Runs the operations one set of ``targets`` of a subgraph depends on with the reference
    kernels, given the values of some subgraph inputs (constants are decoded once)."""

    def __init__(self, model: Model, subgraph: Subgraph, targets: list[int],
                 operations: list[Operation] | None = None):
        self.model = model
        self.subgraph = subgraph
        self.targets = targets
        self.operations = _needed_operations(subgraph, targets) if operations is None else operations
        self._declared: dict[int, TensorInfo] = {}

    def declared(self, i: int) -> TensorInfo:
        """Operand ``i`` as declared, a constant's value decoded (once)."""
        if i not in self._declared:
            self._declared[i] = operand_info(self.model, self.subgraph, i)
        return self._declared[i]

    def run(self, given: dict[int, object]) -> list | None:
        """The targets' values, with ``given`` (operand index → value) for subgraph inputs; None when
        something they need is not known, or a definition or kernel refuses its inputs."""
        if self.operations is None:
            return None
        tensors: dict[int, TensorInfo] = {}

        def info(i: int) -> TensorInfo | None:
            if i in tensors:
                return tensors[i]
            if i in given:
                t = replace(operand_info(self.model, self.subgraph, i, with_value=False), value=given[i],
                            known_shape=True)
                if OPERAND_TYPE_INFO[t.type].is_tensor:
                    t.shape = tuple(getattr(given[i], "shape", ()))
            else:
                t = self.declared(i)
                if t.value is None and not t.omitted:
                    return None
            tensors[i] = t
            return t

        for o in self.operations:
            ins = [info(i) for i in o.inputs]
            if any(t is None for t in ins):
                return None
            outs = [replace(self.declared(i)) for i in o.outputs]
            entry = lookup(o.type)
            if entry is None:
                return None
            try:
                results = entry.reference(entry.define(ins, outs), ins, outs)
                for i, t, value in zip(o.outputs, outs, results):
                    t.value = value
                    if OPERAND_TYPE_INFO[t.type].is_tensor:
                        t.shape = merge_shapes(t.shape, getattr(value, "shape", ()), f"operand {i}")
                    t.known_shape = True
                    tensors[i] = t
            except Exception:  # speculative: whatever refuses leaves the loop interpreted, where it fails as it would
                return None
        values = [info(i) for i in self.targets]
        return None if any(t is None for t in values) else [t.value for t in values]


def _trip_count(model: Model, main: Subgraph, op: Operation, cond: Subgraph, body: Subgraph) -> int | None:
    """How many times the WHILE ``op`` (condition ``cond``, body ``body``) runs its body, when the
    preparation can know it; else None."""
    outer = op.inputs[2:]
    carried = len(body.output_indexes)        # loop-carried and state-only operands
    # the positions the condition reads, closed under the body's updates of them
    tracked = _input_dependencies(cond, cond.output_indexes[:1])
    if tracked is None:
        return None
    while True:
        grown = set(tracked)
        for p in tracked:
            if p < carried:
                deps = _input_dependencies(body, [body.output_indexes[p]])
                if deps is None:
                    return None
                grown |= deps
        if grown == tracked:
            break
        tracked = grown
    start = _Evaluator(model, main, [outer[p] for p in sorted(tracked)]).run({})
    if start is None:
        return None
    values = dict(zip(sorted(tracked), start))
    updated = sorted(p for p in tracked if p < carried)
    condition = _Evaluator(model, cond, cond.output_indexes[:1])
    update = _Evaluator(model, body, [body.output_indexes[p] for p in updated])
    for trips in range(MAX_TRIP_COUNT + 1):
        result = condition.run({cond.input_indexes[p]: v for p, v in values.items()})
        if result is None:
            return None
        try:
            go_on = bool(np.asarray(result[0]).reshape(-1)[0])
        except IndexError:
            return None
        if not go_on:
            return trips
        new = update.run({body.input_indexes[p]: v for p, v in values.items()})
        if new is None:
            return None
        values.update(zip(updated, new))
    return None


# ---- unrolling -----------------------------------------------------------------------------------

def _unroll(main: Subgraph, body: Subgraph, op: Operation, trips: int) -> list[Operation]:
    """The operations replacing the WHILE ``op``: ``trips`` copies of the body's, operands added
    to ``main``; the last copy writes the WHILE's outputs."""
    carried = len(body.output_indexes)
    current = list(op.inputs[2:])                # the main operand holding each body input
    shared: dict[int, int] = {}                  # constants, omitted operands, subgraph references
    operations: list[Operation] = []
    for trip in range(trips):
        last = trip == trips - 1
        mapping = dict(shared)
        mapping.update(zip(body.input_indexes, current))
        if last:
            mapping.update(zip(body.output_indexes[:len(op.outputs)], op.outputs))

        def operand(i: int) -> int:
            if i not in mapping:
                source = body.operands[i]
                new = copy.deepcopy(source)
                if source.lifetime in (OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.SUBGRAPH_OUTPUT):
                    new.lifetime = OperandLifeTime.TEMPORARY_VARIABLE
                main.operands.append(new)
                mapping[i] = len(main.operands) - 1
                if source.lifetime not in _PER_ITERATION:
                    shared[i] = mapping[i]
            return mapping[i]

        for o in body.operations:
            operations.append(Operation(o.type, [operand(i) for i in o.inputs], [operand(i) for i in o.outputs]))
        current[:carried] = [operand(i) for i in body.output_indexes]
    return operations



def _fold_small_constants(model: Model, operations: list[Operation]) -> list[Operation]:
    """``operations`` (of ``model.main``) without those whose inputs are constants and whose outputs,
    temporaries of 1 to :data:`FOLD_MAX_ELEMENTS` elements, are computed here and become
    CONSTANT_COPY operands (appended to ``model.operand_values``): the definitions of the
    operations reading them see their values, as the kernels do after constant folding."""
    main = model.main
    folded: dict[int, object] = {}
    added = bytearray()
    kept = []
    for o in operations:
        results = None
        if o.type not in _CONTROL_FLOW and \
                all(main.operands[i].lifetime == OperandLifeTime.TEMPORARY_VARIABLE for i in o.outputs) and \
                all(i in folded or main.operands[i].lifetime in _KNOWN for i in o.inputs):
            results = _Evaluator(model, main, list(o.outputs), [o]).run(folded)
        if results is None or any(not 0 < np.size(v) <= FOLD_MAX_ELEMENTS for v in results):
            kept.append(o)
            continue
        for i, value in zip(o.outputs, results):
            folded[i] = value
            info = OPERAND_TYPE_INFO[main.operands[i].type]
            raw = encode_value(main.operands[i].type, value)
            location = DataLocation(0, len(model.operand_values) + len(added), len(raw))
            added += raw
            main.operands[i] = replace(main.operands[i], lifetime=OperandLifeTime.CONSTANT_COPY, location=location,
                                       dimensions=list(np.shape(value)) if info.is_tensor else [])
    model.operand_values = bytes(model.operand_values) + bytes(added)
    return kept
