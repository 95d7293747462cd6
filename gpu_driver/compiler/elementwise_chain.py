"""Fused element-wise chains: a run of float32 element-wise operations becomes one generated kernel.

A chain of float32 element-wise operations (ADD/MUL — with their fused activation — RELU, RELU1,
RELU6, LOGISTIC, TANH, FLOOR) in which each operation after the first consumes the previous one's
output, every output has the chain's shape, and every intermediate has exactly one consumer and is
not a model output, becomes one :class:`ElementwiseChain` node (:func:`fuse_elementwise_chains`, run
after activation fusion and constant folding), lowered by :func:`lower_elementwise_chain` to one
``elementwise_chain.cl`` instance whose body :func:`chain_defines` writes.  ADD/MUL's other operand
may be any tensor that broadcasts to the chain's shape.  Quantized chains stay unfused.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import quant
from ..errors import failure
from ..graph import Graph, Node
from ..hal.types import OperandType, OperationType
from ..ops.activation import RELU_FUSE_CODES
from .fusion import consumers
from .ir import TensorId, Work, c_literal
from .lowering import LoweringContext
from .lowering_helpers import broadcast_strides, pad_dims


#: unary chain steps that apply a function (the RELUs clamp: RELU_FUSE_CODES)
_CHAIN_FUNCTIONS = {OperationType.LOGISTIC: "logistic", OperationType.TANH: "tanh", OperationType.FLOOR: "floor"}
_CHAIN_UNARY = (*RELU_FUSE_CODES, *_CHAIN_FUNCTIONS)
_CHAIN_BINARY = (OperationType.ADD, OperationType.MUL)


@dataclass
class ElementwiseChain(Node):
    """Fused element-wise operations (``steps``, in order): index, type and params are the last
    step's; ``inputs`` are every tensor the steps read from outside the chain; ``outputs`` the last
    step's output."""

    steps: list[Node] = field(default_factory=list)


def _chain_step_shape(graph: Graph, node: Node):
    """The output shape if ``node`` can be a float32 chain step (rank ≤ 4, not empty), else None."""
    if node.params is None or len(node.outputs) != 1 or isinstance(node, ElementwiseChain):
        return None
    if node.type in _CHAIN_UNARY:
        tensors = [node.inputs[0]]
    elif node.type in _CHAIN_BINARY and len(node.inputs) >= 2:
        tensors = node.inputs[:2]
    else:
        return None
    out = graph.tensors[node.outputs[0]]
    infos = [graph.tensors[i] for i in tensors] + [out]
    if any(t.type != OperandType.TENSOR_FLOAT32 or t.shape is None or len(t.shape) > 4 for t in infos):
        return None
    shape = tuple(node.params.output_shapes[0])
    if 0 in shape or (node.type in _CHAIN_UNARY and tuple(infos[0].shape) != shape):
        return None
    return shape


def elementwise_chains(graph: Graph) -> list[list[Node]]:
    """Maximal fusable chains (≥ 2 operations), each in execution order."""
    users = consumers(graph)
    model_outputs = set(graph.subgraph.output_indexes)
    taken: set[int] = set()
    chains = []
    for node in graph.nodes:
        if id(node) in taken:
            continue
        shape = _chain_step_shape(graph, node)
        if shape is None:
            continue
        chain = [node]
        while True:
            out = chain[-1].outputs[0]
            us = users.get(out, [])
            if out in model_outputs or len(us) != 1 or id(us[0]) in taken:
                break
            if _chain_step_shape(graph, us[0]) != shape:
                break
            chain.append(us[0])
        if len(chain) >= 2:
            taken.update(id(n) for n in chain)
            chains.append(chain)
    return chains


def fuse_elementwise_chains(graph: Graph) -> int:
    """Replace each chain by one ElementwiseChain node at its last step's position; returns the count."""
    chains = elementwise_chains(graph)
    if not chains:
        return 0
    last = {}
    dropped = set()
    for chain in chains:
        internal = {n.outputs[0] for n in chain[:-1]}
        inputs = []
        for n in chain:
            for i in (n.inputs[:1] if n.type in _CHAIN_UNARY else n.inputs[:2]):
                if i not in internal and i not in inputs:
                    inputs.append(i)
        tail = chain[-1]
        last[id(tail)] = ElementwiseChain(tail.index, tail.type, inputs, list(tail.outputs), tail.params,
                                          steps=list(chain))
        dropped.update(id(n) for n in chain[:-1])
    graph.nodes = [last.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return len(chains)


_CHAIN_UNARY_C = {"logistic": "v = 1.0f / (1.0f + exp(-v));", "tanh": "v = tanh(v);", "floor": "v = floor(v);"}


def chain_defines(out_shape, operand_strides, steps) -> dict:
    """Defines of ``elementwise_chain.cl`` for a fused chain of float32 element-wise operations.

    ``out_shape``: the output as rank 4.  ``operand_strides[k]``: None when input k has the output's
    shape (read at the flat index), else its 4 element strides per output axis (0 = broadcast).
    ``steps`` (in order) act on the running value ``v``; an operand reference is "v" or an input
    index k:  ("load", k) | ("+" or "*", ref, ref) | ("clamp", lo, hi) | ("logistic",) | ("tanh",) |
    ("floor",).  One C statement per step, so (as in the unfused kernels) every intermediate is
    rounded to float32 and compilers cannot contract across operations.
    """
    def ref(r) -> str:
        if r == "v":
            return "v"
        s = operand_strides[r]
        if s is None:
            return f"in{r}[i]"
        terms = [f"i{axis} * {stride}" for axis, stride in enumerate(s) if stride] or ["0"]
        return f"in{r}[{' + '.join(terms)}]"

    body = []
    for step in steps:
        kind = step[0]
        if kind == "load":
            body.append(f"v = {ref(step[1])};")
        elif kind in ("+", "*"):
            body.append(f"v = {ref(step[1])} {kind} {ref(step[2])};")
        elif kind == "clamp":
            body.append(f"v = fmin(fmax(v, {c_literal(step[1])}), {c_literal(step[2])});")
        elif kind in _CHAIN_UNARY_C:
            body.append(_CHAIN_UNARY_C[kind])
        else:
            raise failure(f"elementwise chain: unknown step {step!r}")
    params = [f"GLOBAL const float* RESTRICT in{k}" for k in range(len(operand_strides))]
    params.append("GLOBAL float* RESTRICT out")
    d0, d1, d2, d3 = (int(d) for d in out_shape)
    index = ""
    if any(s is not None for s in operand_strides):
        index = (f"int r = i; const int i3 = r % {d3}; r /= {d3}; const int i2 = r % {d2}; r /= {d2}; "
                 f"const int i1 = r % {d1}; const int i0 = r / {d1}; (void)i0; (void)i1; (void)i2; (void)i3;")
    return {"COUNT": d0 * d1 * d2 * d3, "PARAMS": ", ".join(params), "INDEX": index,
            "BODY": "\n    ".join(body)}


def lower_elementwise_chain(ctx: LoweringContext) -> None:
    """An ElementwiseChain node: its steps as one generated kernel."""
    chain, graph = ctx.node, ctx.graph
    out_shape = pad_dims(graph.tensors[chain.outputs[0]].shape)
    slot = {idx: k for k, idx in enumerate(chain.inputs)}
    strides = []
    for idx in chain.inputs:
        shape = graph.tensors[idx].shape
        strides.append(None if pad_dims(shape) == out_shape else broadcast_strides(shape, out_shape))
    steps: list[tuple] = []
    prev = None  # the operand holding the running value

    def ref(idx):
        return "v" if idx == prev else slot[idx]

    for node in chain.steps:
        if node.type in (OperationType.ADD, OperationType.MUL):
            steps.append(("+" if node.type == OperationType.ADD else "*", ref(node.inputs[0]), ref(node.inputs[1])))
            code = node.params.activation
        else:
            if prev is None:
                steps.append(("load", slot[node.inputs[0]]))
            code = RELU_FUSE_CODES.get(node.type, 0)
            if node.type in _CHAIN_FUNCTIONS:
                steps.append((_CHAIN_FUNCTIONS[node.type],))
        if code:
            steps.append(("clamp", *quant.activation_range_float(code)))
        prev = node.outputs[0]
    d = chain_defines(out_shape, strides, steps)
    ctx.emit("elementwise_chain.cl", d, [TensorId("operand", i) for i in chain.inputs], [ctx.output(0)],
             (d["COUNT"],), Work.ELEMENTS)
