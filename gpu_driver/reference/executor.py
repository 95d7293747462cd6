"""The reference executor: runs a validated model operation by operation with numpy kernels.

Control flow (IF, WHILE) is interpreted here.  Deadlines are checked between operations
(MISSED_DEADLINE_TRANSIENT); a WHILE loop that runs past the loop timeout is aborted the same way.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..errors import DriverError, failure
from ..graph import merge_shapes, operand_info
from ..hal.model import Model, Subgraph
from ..hal.types import LOOP_TIMEOUT_DEFAULT_NS, OPERAND_TYPE_INFO, ErrorStatus, OperationType, boot_time_ns
from ..ops.catalog import lookup
from ..ops.definition import TensorInfo


@dataclass
class ExecutionLimits:
    """Absolute deadline (boot clock, see hal.types.boot_time_ns) and WHILE loop timeout, both in nanoseconds."""

    deadline_ns: int | None = None
    loop_timeout_ns: int = LOOP_TIMEOUT_DEFAULT_NS


def _check_deadline(limits: ExecutionLimits) -> None:
    if limits.deadline_ns is not None and boot_time_ns() > limits.deadline_ns:
        raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "execution deadline passed")


class ReferenceExecutor:
    """Executes the subgraphs of one model; stateless between calls, so safe to share."""

    def __init__(self, model: Model):
        self.model = model
        # Declared operand infos (with constant values decoded once) per subgraph.
        self._declared = {id(sg): [operand_info(model, sg, i) for i in range(len(sg.operands))]
                          for sg in [model.main, *model.referenced]}

    def run(self, inputs: list[np.ndarray | None], limits: ExecutionLimits | None = None) -> list[np.ndarray]:
        """Execute the main subgraph; ``inputs`` in main.input_indexes order (None = omitted)."""
        return self.run_subgraph(self.model.main, inputs, limits or ExecutionLimits())

    def run_subgraph(self, subgraph: Subgraph, inputs: list, limits: ExecutionLimits) -> list[np.ndarray]:
        tensors: list[TensorInfo] = [replace(t) for t in self._declared[id(subgraph)]]
        for idx, value in zip(subgraph.input_indexes, inputs):
            t = tensors[idx]
            if value is None:
                t.omitted = True
                t.value = None
            else:
                t.value = value
                if OPERAND_TYPE_INFO[t.type].is_tensor:
                    t.shape = tuple(np.shape(value))
            t.known_shape = True
        for n, op in enumerate(subgraph.operations):
            _check_deadline(limits)
            ins = [tensors[i] for i in op.inputs]
            outs = [tensors[i] for i in op.outputs]
            if op.type == OperationType.IF:
                results = self._run_if(ins, limits)
            elif op.type == OperationType.WHILE:
                results = self._run_while(ins, len(op.outputs), limits)
            else:
                entry = lookup(op.type)
                if entry is None:
                    raise failure(f"reference device has no kernel for {op.type.name}")
                results = entry.reference(entry.define(ins, outs), ins, outs)
            for out_idx, value in zip(op.outputs, results):
                t = tensors[out_idx]
                t.value = value
                if OPERAND_TYPE_INFO[t.type].is_tensor:
                    t.shape = merge_shapes(self._declared[id(subgraph)][out_idx].shape, np.shape(value),
                                           f"operation {n} ({op.type.name}) output operand {out_idx}")
                t.known_shape = True
        return [tensors[i].value for i in subgraph.output_indexes]

    # ---- control flow ----------------------------------------------------------------------------
    def _referenced(self, info: TensorInfo) -> Subgraph:
        return self.model.referenced[int(info.value)]

    def _run_if(self, ins: list[TensorInfo], limits: ExecutionLimits) -> list[np.ndarray]:
        cond = bool(np.asarray(ins[0].value).reshape(-1)[0])
        branch = self._referenced(ins[1] if cond else ins[2])
        return self.run_subgraph(branch, [t.value for t in ins[3:]], limits)

    def _run_while(self, ins: list[TensorInfo], num_outputs: int, limits: ExecutionLimits) -> list[np.ndarray]:
        cond_graph = self._referenced(ins[0])
        body = self._referenced(ins[1])
        values = [t.value for t in ins[2:]]
        num_body_outputs = len(body.output_indexes)
        start = time.monotonic_ns()
        while True:
            _check_deadline(limits)
            if time.monotonic_ns() - start > limits.loop_timeout_ns:
                raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "WHILE loop exceeded the loop timeout")
            (cond,) = self.run_subgraph(cond_graph, values, limits)
            if not bool(np.asarray(cond).reshape(-1)[0]):
                break
            values[:num_body_outputs] = self.run_subgraph(body, values, limits)
        return values[:num_outputs]
