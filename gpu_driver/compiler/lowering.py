"""Lowering: graph nodes → kernel instances (:func:`lower`), through each operation's lowering.

An operation's lowering (registered with its family in gpu_driver/ops/) receives a
:class:`LoweringContext` for one node.  It reads ``ctx.params`` (decoded by the operation's
definition), ``ctx.inputs`` / ``ctx.outputs`` (TensorInfos with shapes, quantisation and constant
values), and calls ``ctx.emit(...)`` once per kernel launch.  It may create preprocessed constants
(``ctx.constant``: repacked weights, bias folded with zero points, …) and scratch tensors.  Its
``supports`` predicate (gpu_driver/compiler/support.py) says whether the kernels handle a node
exactly as stated, so it must be truthful.  Backend-agnostic: no pyopencl/cupy here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..graph import Graph, Node
from ..hal.types import OperandLifeTime
from ..ops.definition import OpParams, TensorInfo
from . import autotune
from .ir import KernelInstance, LoweredModel, ScratchTensor, TensorId, Work


@dataclass
class LoweringContext:
    graph: Graph
    node: Node
    lowered: LoweredModel = field(default_factory=LoweredModel)

    @property
    def params(self) -> OpParams:
        return self.node.params

    @property
    def inputs(self) -> list[TensorInfo]:
        return self.graph.infos(self.node.inputs)

    @property
    def outputs(self) -> list[TensorInfo]:
        return self.graph.infos(self.node.outputs)

    def input(self, i: int) -> TensorId:
        """The tensor of the node's i-th input operand."""
        return TensorId("operand", self.node.inputs[i])

    def output(self, i: int) -> TensorId:
        return TensorId("operand", self.node.outputs[i])

    def is_constant(self, i: int) -> bool:
        """The input's value is fixed for these kernels: a constant, or a model input whose value
        this compilation is specialised on."""
        idx = self.node.inputs[i]
        if idx >= len(self.graph.subgraph.operands):  # a tensor a graph rewrite added
            return self.graph.tensors[idx].value is not None
        lifetime = self.graph.subgraph.operands[idx].lifetime
        if lifetime == OperandLifeTime.SUBGRAPH_INPUT:
            return self.graph.tensors[idx].value is not None
        return lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)

    def constant(self, array: np.ndarray) -> TensorId:
        """Register a lowering-made constant (uploaded once at preparation; stored in the data cache)."""
        self.lowered.constants.append(np.ascontiguousarray(array))
        return TensorId("const", len(self.lowered.constants) - 1)

    def scratch(self, dtype, count: int) -> TensorId:
        """A temporary private to this node's kernels (planned like any other temporary)."""
        self.lowered.scratch.append(ScratchTensor(np.dtype(dtype), int(count)))
        return TensorId("scratch", len(self.lowered.scratch) - 1)

    @property
    def status_code(self) -> int:
        """The non-zero code this node's kernels store in the status word on bad data."""
        return self.node.index + 1

    def status(self, reason: str) -> TensorId:
        """The status word (pass it as the kernel's last output; see compiler/ir.py): a kernel that
        detects bad data stores :attr:`status_code` there, and the execution then fails with
        GENERAL_FAILURE and ``reason`` (prefixed with the operation's index and name)."""
        self.lowered.status_messages[self.status_code] = \
            f"operation {self.node.index} ({self.node.type.name}): {reason}"
        return TensorId("status", 0)

    def alias(self, output: int = 0, input: int = 0) -> None:
        """The node's output shares the storage of its input (reshape-like ops: no kernel)."""
        self.lowered.aliases[self.node.outputs[output]] = self.node.inputs[input]

    def emit(self, template: str, defines: dict, inputs: Sequence[TensorId], outputs: Sequence[TensorId],
             global_size: Sequence[int], work: Work = Work.GRID) -> KernelInstance:
        """Append one kernel launch of ``template`` specialised with ``defines``, over ``global_size``
        work items whose shape is ``work`` (see compiler/ir.py)."""
        k = KernelInstance(template=template, defines=dict(defines), inputs=list(inputs), outputs=list(outputs),
                           global_size=tuple(int(g) for g in global_size), work=work, node=self.node.index)
        self.lowered.kernels.append(k)
        return k

    def emit_elements(self, template: str, defines: dict, inputs: Sequence[TensorId], outputs: Sequence[TensorId],
                      count: int) -> KernelInstance:
        """:meth:`emit` of a kernel over ``count`` elements in runs: work item g computes elements
        [g·RUN, min((g+1)·RUN, COUNT)) (``defines`` gains RUN and COUNT), RUN the target's
        ``element_run``: consecutive elements per work item on a CPU (its vectorised loop), 1 on a GPU."""
        run = max(1, min(autotune.target_tuning().element_run, count))
        return self.emit(template, {**defines, "RUN": run, "COUNT": count}, inputs, outputs,
                         (-(-count // run),), Work.ELEMENTS)
