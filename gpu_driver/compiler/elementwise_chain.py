"""Fused element-wise groups: float32 element-wise operations become one generated kernel.

Float32 element-wise operations — the binary ADD, SUB, MUL, DIV (with their fused activation),
MAXIMUM, MINIMUM and the unary RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR, ABS, EXP, LOG, NEG, RSQRT,
SIN, SQRT, HARD_SWISH — join into groups: an operation joins the group of the one operation reading
its output when that output is no model output and has the reader's shape (or, for a reader of at
most BROADCAST_JOIN_ELEMENTS elements, a shape the reader broadcasts at most BROADCAST_JOIN_FACTOR
times: a layer norm's statistics, then recomputed for each element they are broadcast to).  A group is a
tree whose root is its last operation (a chain in the simplest case: an LSTM cell's
c' = σ(f)·c + σ(i)·tanh(g) is one group of six).  Each group of two or more becomes one
:class:`ElementwiseChain` node (:func:`fuse_elementwise_chains`, run after activation fusion and
constant folding), lowered by :func:`lower_elementwise_chain` to one ``elementwise_chain.cl``
instance whose body :func:`chain_defines` writes.  A binary operation's other operand may be any
tensor that broadcasts to the group's shape.  Quantized operations stay unfused.

A float32 SLICE, STRIDED_SLICE, SPLIT or REVERSE whose outputs only group members read is dropped:
its readers read its input in place (an element offset and strides, ``ElementwiseChain.views``), so
a recurrent cell's gate split costs no kernel; a single operation reading such an output becomes a
group of its own.

Each step is the C statement of the operation's own kernel (``binary.cl``, ``activation.cl``,
``unary.cl``) on the running fp32 value: ADD/SUB/MUL/DIV clamp with ``v < lo ? lo : v`` and
``hi < v ? hi : v`` to their activation's bounds within [−FLT_MAX, FLT_MAX] (a NaN goes through;
with a RELU operation fused into them, ``nan_to_low``, they clamp as that RELU does),
MAXIMUM/MINIMUM are ``a < b ? b : a`` / ``b < a ? b : a``, the RELUs ``lo < v ? v : lo`` then ``hi < v ? hi : v`` (a NaN gives lo, as ``activation.cl``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import failure
from ..graph import Graph, Node
from ..hal.types import OperandType, OperationType
from ..ops.activation import RELU_FUSE_CODES
from ..ops.fused_activation import float_activation_range
from ..ops.slicing import GatherParams
from .fusion import consumers
from .ir import TensorId, c_literal
from .lowering import LoweringContext
from .lowering_helpers import broadcast_strides, pad_dims, row_strides

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
    #: a slice or split output the steps read in place: tensor → (its source, element offset, element
    #: stride per axis of the tensor); the source is among ``inputs``, the tensor is not
    views: dict[int, tuple[int, int, tuple[int, ...]]] = field(default_factory=dict)


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


#: a result of another shape, broadcast by its reader, joins the reader's group (recomputed for
#: each element it is broadcast to) when the reader has at most this many elements
BROADCAST_JOIN_ELEMENTS = 16384
#: and each of its values is broadcast to at most this many (an SE block's sigmoid, broadcast over
#: every pixel, costs more recomputed than its own launch)
BROADCAST_JOIN_FACTOR = 32


def _joins(shape, reader_shape) -> bool:
    """Whether a step's result of ``shape`` joins its one reader's group (``reader_shape``; None: the
    reader is no chain step): the same shape, or one the reader broadcasts when it is small."""
    if reader_shape is None:
        return False
    if tuple(shape) == tuple(reader_shape):
        return True
    padded, target = pad_dims(shape), pad_dims(reader_shape)
    size, reader_size = int(np.prod(padded)), int(np.prod(target))
    return (len(shape) <= len(reader_shape) and all(d in (1, t) for d, t in zip(padded, target))
            and reader_size <= BROADCAST_JOIN_ELEMENTS and reader_size <= BROADCAST_JOIN_FACTOR * size)


def _groups(graph: Graph) -> list[list[Node]]:
    """Every chain step's group (single operations included), in execution order."""
    users = consumers(graph)
    model_outputs = set(graph.subgraph.output_indexes)
    shapes = {id(n): _chain_step_shape(graph, n) for n in graph.nodes}
    parent: dict[int, Node] = {}
    for node in graph.nodes:
        shape = shapes[id(node)]
        if shape is None or node.outputs[0] in model_outputs:
            continue
        us = list({id(u): u for u in users.get(node.outputs[0], [])}.values())  # x·x reads x twice: one user
        if len(us) == 1 and _joins(shape, shapes[id(us[0])]):
            parent[id(node)] = us[0]
    groups: dict[int, list[Node]] = {}
    for node in graph.nodes:
        if shapes[id(node)] is None:
            continue
        root = node
        while id(root) in parent:
            root = parent[id(root)]
        groups.setdefault(id(root), []).append(node)
    return list(groups.values())


def _piece_views(graph: Graph, node: Node) -> dict[int, tuple[int, int, tuple[int, ...]]] | None:
    """For a float32 slice or split (``GatherParams``, no tiling) with known shapes: each output →
    (source tensor, element offset, element stride per output axis) reading it in place; else None."""
    p = node.params
    if not isinstance(p, GatherParams) or p.tile or not node.inputs:
        return None
    source = graph.tensors[node.inputs[0]]
    if source.type != OperandType.TENSOR_FLOAT32 or source.shape is None:
        return None
    in_strides = row_strides(source.shape)
    views = {}
    for out, gshape, begin, oshape in zip(node.outputs, p.gather_shapes, p.begins, p.output_shapes):
        offset = sum(b * s for b, s in zip(begin, in_strides))
        long_axes = [(d, st * s) for d, st, s in zip(gshape, p.steps, in_strides) if d != 1]
        if [d for d, _ in long_axes] != [int(d) for d in oshape if d != 1]:
            return None
        strides = iter(s for _, s in long_axes)
        views[out] = (node.inputs[0], int(offset), tuple(next(strides) if d != 1 else 0 for d in oshape))
    return views


def _contiguous(graph: Graph, tensor: int, view: tuple[int, int, tuple[int, ...]]) -> bool:
    """Whether ``view`` of ``tensor`` is one block of consecutive source elements in row-major order."""
    shape = graph.tensors[tensor].shape
    return all(s == r for d, s, r in zip(shape, view[2], row_strides(shape)) if d != 1)


def fuse_elementwise_chains(graph: Graph) -> int:
    """Replace each group by one ElementwiseChain node at its last operation's position; a slice or
    split whose outputs only chain steps read is dropped, its readers reading its input in place
    (a single chain step reading it becomes a group of its own).  Returns the number of groups."""
    groups = _groups(graph)
    if not groups:
        return 0
    users = consumers(graph)
    model_outputs = set(graph.subgraph.output_indexes)
    steps = {id(n) for g in groups for n in g}
    views: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    dropped = set()
    for node in reversed(graph.nodes):   # readers first: a slice of a dropped slice is dropped too
        if id(node) in steps or any(o in model_outputs for o in node.outputs):
            continue
        readers = [u for o in node.outputs for u in users.get(o, [])]
        piece = _piece_views(graph, node) if readers and all(id(u) in steps or id(u) in dropped
                                                             for u in readers) else None
        if piece is not None and all(id(u) in steps or _contiguous(graph, o, piece[o])
                                     for o in node.outputs for u in users.get(o, [])):
            views.update(piece)
            dropped.add(id(node))
    for piece, (source, offset, strides) in list(views.items()):
        while source in views:   # a row block of a contiguous block: its offset in the first source
            source, offset = views[source][0], views[source][1] + offset
        views[piece] = (source, offset, strides)
    last = {}
    count = 0
    for group in groups:
        if len(group) < 2 and not any(i in views for i in _operands(group[0])):
            continue
        internal = {n.outputs[0] for n in group[:-1]}
        inputs, group_views = [], {}
        for n in group:
            for i in _operands(n):
                if i in internal:
                    continue
                if i in views:
                    group_views[i] = views[i]
                elif i not in inputs:
                    inputs.append(i)
        for source, _, _ in group_views.values():
            if source not in inputs:
                inputs.append(source)
        tail = group[-1]
        last[id(tail)] = ElementwiseChain(tail.index, tail.type, inputs, list(tail.outputs), tail.params,
                                          steps=list(group), views=group_views)
        dropped.update(id(n) for n in group[:-1])
        count += 1
    graph.nodes = [last.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return count


def chain_defines(out_shape, operand_views, steps) -> dict:
    """Defines of ``elementwise_chain.cl`` for fused float32 element-wise operations.

    ``out_shape``: the output as rank 4.  ``operand_views[k]``: None when input k has the output's
    shape (read at the flat index), else (element offset, its 4 element strides per output axis;
    0 = broadcast); an offset given as a string is read from the int input ``offsets`` after the
    float inputs (``"offsets[0]"``).  ``steps`` (in order) act on the running value ``v``; an operand reference is
    "v", a stored value's name ("t3") or an input index k:  ("load", ref) |
    ("binary", expression of {a} and {b}, ref a, ref b) | ("unary", expression of v) |
    ("clamp", lo, hi) (a RELU: a NaN gives lo) | ("bound", lo, hi) (a NaN goes through) |
    ("store", name) (v kept for a later step).  One C statement per step, so (as in the unfused
    kernels) every intermediate is rounded to float32 and compilers cannot contract across operations.
    """
    def ref(r) -> str:
        if isinstance(r, str):
            return r
        view = operand_views[r]
        if view is None:
            return f"in{r}[i]"
        offset, strides = view
        terms = ([str(offset)] if offset != 0 else []) + [f"i{axis} * {s}" for axis, s in enumerate(strides) if s]
        return f"in{r}[{' + '.join(terms) or '0'}]"

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
        elif kind == "store":
            body.append(f"const float {step[1]} = v;")
        else:
            raise failure(f"elementwise chain: unknown step {step!r}")
    params = [f"GLOBAL const float* RESTRICT in{k}" for k in range(len(operand_views))]
    if any(v is not None and isinstance(v[0], str) for v in operand_views):
        params.append("GLOBAL const int* RESTRICT offsets")
    params.append("GLOBAL float* RESTRICT out")
    d0, d1, d2, d3 = (int(d) for d in out_shape)
    index = ""
    if any(v is not None for v in operand_views):
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
    """An ElementwiseChain node: its steps as one generated kernel.  The running value ``v`` carries
    each step's result to the next; a result another later step reads is stored as ``t<k>``."""
    chain, graph = ctx.node, ctx.graph
    out_shape = pad_dims(graph.tensors[chain.outputs[0]].shape)
    read = {i for n in chain.steps for i in _operands(n)}
    direct = [i for i in chain.inputs if i in read]
    slot = {idx: k for k, idx in enumerate(direct)}
    views = []
    for idx in direct:
        shape = graph.tensors[idx].shape
        views.append(None if pad_dims(shape) == out_shape else (0, broadcast_strides(shape, out_shape)))
    # the slices' offsets are data (a constant input), not literals: the recurrent cells of every time
    # step, reading their own step's slices, then share one kernel
    offsets = []
    for piece, (source, offset, strides) in chain.views.items():
        shape = pad_dims(graph.tensors[piece].shape)
        strides = (0,) * (4 - len(strides)) + tuple(strides)
        slot[piece] = len(views)
        views.append((f"offsets[{len(offsets)}]",
                      tuple(0 if d == 1 and o != 1 else s for d, s, o in zip(shape, strides, out_shape))))
        offsets.append(offset)
    position = {n.outputs[0]: k for k, n in enumerate(chain.steps)}
    stored = {i for k, n in enumerate(chain.steps) for i in _operands(n) if position.get(i, k - 1) != k - 1}

    def ref(idx: int, k: int):
        if idx in position:
            return "v" if position[idx] == k - 1 else f"t{position[idx]}"
        return slot[idx]

    steps: list[tuple] = []
    for k, node in enumerate(chain.steps):
        steps.extend(_steps(node, lambda idx, _k=k: ref(idx, _k)))
        if node.outputs[0] in stored:
            steps.append(("store", f"t{k}"))
    d = chain_defines(out_shape, views, steps)
    inputs = [TensorId("operand", i) for i in direct]
    inputs += [TensorId("operand", source) for source, _, _ in chain.views.values()]
    if offsets:
        inputs.append(ctx.constant(np.array(offsets, np.int32)))
    ctx.emit_elements("elementwise_chain.cl", d, inputs, [ctx.output(0)], d["COUNT"])
