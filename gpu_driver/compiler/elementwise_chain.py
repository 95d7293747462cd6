"""Fused element-wise chains: a run of float32 element-wise operations becomes one generated kernel.

A chain of float32 element-wise operations — the binary ADD, SUB, MUL, DIV (with their fused
activation), MAXIMUM, MINIMUM and the unary RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR, ABS, EXP, LOG,
NEG, RSQRT, SIN, SQRT, HARD_SWISH — in which each operation after the first consumes the previous one's output,
every output has the chain's shape, and every intermediate has exactly one consumer and is not a
model output, becomes one :class:`ElementwiseChain` node (:func:`fuse_elementwise_chains`, run after
activation fusion and constant folding), lowered by :func:`lower_elementwise_chain` to one
``elementwise_chain.cl`` instance whose body :func:`chain_defines` writes.  A binary operation's
other operand may be any tensor that broadcasts to the chain's shape.  Quantized chains stay unfused.

Each step is the C statement of the operation's own kernel (``binary.cl``, ``activation.cl``,
``unary.cl``) on the running fp32 value: ADD/SUB/MUL/DIV clamp with ``v < lo ? lo : v`` and
``hi < v ? hi : v`` to their activation's bounds within [−FLT_MAX, FLT_MAX] (a NaN goes through;
with a RELU operation fused into them, ``nan_to_low``, they clamp as that RELU does),
MAXIMUM/MINIMUM are ``a < b ? b : a`` / ``b < a ? b : a``, the RELUs ``lo < v ? v : lo`` then ``hi < v ? hi : v`` (a NaN gives lo, as ``activation.cl``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import failure
from ..graph import Graph, Node
from ..hal.types import OperandType, OperationType
from ..ops.activation import RELU_FUSE_CODES
from ..ops.fused_activation import float_activation_range
from .fusion import consumers
from .ir import TensorId, c_literal
from .lowering import LoweringContext
from .lowering_helpers import broadcast_strides, pad_dims

_O = OperationType
#: unary chain steps that apply a function to the running value v (the RELUs clamp: RELU_FUSE_CODES)
_CHAIN_FUNCTIONS = {
    _O.LOGISTIC: "1.0f / (1.0f + gd_exp(-v))", _O.TANH: "gd_tanh(v)", _O.FLOOR: "floor(v)", _O.ABS: "fabs(v)",
    _O.EXP: "gd_exp(v)", _O.LOG: "log(v)", _O.NEG: "-v", _O.RSQRT: "1.0f / sqrt(v)", _O.SIN: "sin(v)",
    _O.SQRT: "sqrt(v)", _O.HARD_SWISH: "gd_hard_swish(v)"}
_CHAIN_UNARY = (*RELU_FUSE_CODES, *_CHAIN_FUNCTIONS)
#: binary chain steps: the C expression of operands {a} and {b}
_CHAIN_BINARY = {_O.ADD: "{a} + {b}", _O.SUB: "{a} - {b}", _O.MUL: "{a} * {b}", _O.DIV: "{a} / {b}",
                 _O.MAXIMUM: "{a} < {b} ? {b} : {a}", _O.MINIMUM: "{b} < {a} ? {b} : {a}"}
#: the binary operations with a fused activation, always bounded to [−FLT_MAX, FLT_MAX]
_ARITHMETIC = (_O.ADD, _O.SUB, _O.MUL, _O.DIV)


@dataclass
class ElementwiseChain(Node):
    """Fused element-wise operations (``steps``, in order): index, type and params are the last
    step's; ``inputs`` are every tensor the steps read from outside the chain; ``outputs`` the last
    step's output."""

    steps: list[Node] = field(default_factory=list)


def _operands(node: Node) -> list[int]:
    """The tensors a chain step reads."""
    return node.inputs[:1] if node.type in _CHAIN_UNARY else node.inputs[:2]


def _chain_step_shape(graph: Graph, node: Node):
    """The output shape if ``node`` can be a float32 chain step (rank ≤ 4, not empty), else None."""
    if node.params is None or len(node.outputs) != 1 or isinstance(node, ElementwiseChain):
        return None
    if node.type not in _CHAIN_UNARY and not (node.type in _CHAIN_BINARY and len(node.inputs) >= 2):
        return None
    tensors = _operands(node)
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
            us = list({id(u): u for u in users.get(out, [])}.values())  # x·x reads x twice: one user
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
            for i in _operands(n):
                if i not in internal and i not in inputs:
                    inputs.append(i)
        tail = chain[-1]
        last[id(tail)] = ElementwiseChain(tail.index, tail.type, inputs, list(tail.outputs), tail.params,
                                          steps=list(chain))
        dropped.update(id(n) for n in chain[:-1])
    graph.nodes = [last.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return len(chains)


def chain_defines(out_shape, operand_strides, steps) -> dict:
    """Defines of ``elementwise_chain.cl`` for a fused chain of float32 element-wise operations.

    ``out_shape``: the output as rank 4.  ``operand_strides[k]``: None when input k has the output's
    shape (read at the flat index), else its 4 element strides per output axis (0 = broadcast).
    ``steps`` (in order) act on the running value ``v``; an operand reference is "v" or an input
    index k:  ("load", k) | ("binary", expression of {a} and {b}, ref a, ref b) |
    ("unary", expression of v) | ("clamp", lo, hi) (a RELU: a NaN gives lo) | ("bound", lo, hi) (a NaN goes
    through).  One C statement per step, so (as in the unfused kernels) every intermediate is rounded
    to float32 and compilers cannot contract across operations.
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
        elif kind == "binary":
            body.append(f"v = {step[1].format(a=ref(step[2]), b=ref(step[3]))};")
        elif kind == "unary":
            body.append(f"v = {step[1]};")
        elif kind == "clamp":  # a RELU: std::min(std::max(lo, v), hi), a NaN gives lo
            lo, hi = c_literal(step[1]), c_literal(step[2])
            body.append(f"v = {lo} < v ? v : {lo};")
            body.append(f"v = {hi} < v ? {hi} : v;")
        elif kind == "bound":
            lo, hi = c_literal(step[1]), c_literal(step[2])
            body.append(f"v = v < {lo} ? {lo} : v;")
            body.append(f"v = {hi} < v ? {hi} : v;")
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


def _steps(node: Node, ref) -> list[tuple]:
    """The chain steps of one operation; ``ref(tensor)`` names an operand ("v" or an input slot)."""
    if node.type in _CHAIN_BINARY:
        steps = [("binary", _CHAIN_BINARY[node.type], ref(node.inputs[0]), ref(node.inputs[1]))]
        if node.type in _ARITHMETIC:
            kind = "clamp" if node.params.nan_to_low else "bound"
            steps.append((kind, *float_activation_range(node.params.activation)))
            if node.params.hard_swish:
                steps.append(("unary", _CHAIN_FUNCTIONS[_O.HARD_SWISH]))
        return steps
    steps = [] if ref(node.inputs[0]) == "v" else [("load", ref(node.inputs[0]))]
    if node.type in RELU_FUSE_CODES:
        steps.append(("clamp", *float_activation_range(RELU_FUSE_CODES[node.type])))
    else:
        steps.append(("unary", _CHAIN_FUNCTIONS[node.type]))
    return steps


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
    for node in chain.steps:
        steps.extend(_steps(node, lambda idx: "v" if idx == prev else slot[idx]))
        prev = node.outputs[0]
    d = chain_defines(out_shape, strides, steps)
    ctx.emit_elements("elementwise_chain.cl", d, [TensorId("operand", i) for i in chain.inputs], [ctx.output(0)],
                      d["COUNT"])
