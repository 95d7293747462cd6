"""Graph rewrites before lowering: activation fusion and constant folding.

- :func:`fuse_activations`: a RELU / RELU1 / RELU6 that is the only consumer of a CONV_2D,
  DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD or MUL output (fused activation NONE, same operand type and
  quantisation) disappears into that operation's fused activation.  The producer's params are
  re-derived by its operation definition with the new fuse code, so every derived field (float and
  quantised clamp bounds) is consistent.
- :func:`fold_constants`: a node whose inputs are all constant is computed once, at preparation, with
  the reference device's kernel; its outputs become constants (``TensorInfo.value`` set).
- :func:`fuse_elementwise_chains` (after the other two): a chain of float32 element-wise operations
  (ADD/MUL — with their fused activation — RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR) in which each
  operation after the first consumes the previous one's output, every output has the chain's shape,
  and every intermediate has exactly one consumer and is not a model output, becomes one
  :class:`ElementwiseChain` node, lowered to one generated kernel (lowerings/elementwise.py,
  codegen.elementwise_chain).  ADD/MUL's other operand may be any tensor that broadcasts to the
  chain's shape.  Quantized chains stay unfused.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..graph import Graph, Node
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType
from ..operations import define

_ACT_CODES = {OperationType.RELU: 1, OperationType.RELU1: 2, OperationType.RELU6: 3}


def activation_input(node: Node, graph: Graph) -> int | None:
    """Position of the fuse-code input of a fusable producer, or None."""
    t = node.type
    n = len(node.inputs)
    typ = lambda i: graph.tensors[node.inputs[i]].type  # noqa: E731
    if t in (OperationType.ADD, OperationType.MUL):
        return 2 if n >= 3 else None
    if t == OperationType.FULLY_CONNECTED:
        return 3 if n >= 4 else None
    if t == OperationType.CONV_2D:
        if n >= 10 and typ(7) == OperandType.INT32:
            return 9
        return 6 if n >= 7 else None
    if t == OperationType.DEPTHWISE_CONV_2D:
        if n >= 11 and typ(8) == OperandType.INT32:
            return 10
        return 7 if n >= 8 else None
    return None


def consumers(graph: Graph) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for node in graph.nodes:
        for i in node.inputs:
            out.setdefault(i, []).append(node)
    return out


def fusable_pairs(graph: Graph) -> list[tuple[Node, Node, Node]]:
    """(producer, activation node, producer re-defined with the activation) for every fusable pair.

    The third element is a new Node (the producer's index, inputs and params with the fused code,
    and the activation's outputs) — the graph is not modified.
    """
    users = consumers(graph)
    model_outputs = set(graph.subgraph.output_indexes)
    pairs = []
    for node in graph.nodes:
        if node.params is None:
            continue
        pos = activation_input(node, graph)
        if pos is None or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        if out in model_outputs:
            continue
        act_info = graph.tensors[node.inputs[pos]]
        if act_info.value is None or int(act_info.value) != 0:
            continue
        us = users.get(out, [])
        if len(us) != 1 or us[0].type not in _ACT_CODES or us[0].params is None:
            continue
        relu = us[0]
        src, dst = graph.tensors[out], graph.tensors[relu.outputs[0]]
        if src.type != dst.type or (OPERAND_TYPE_INFO[src.type].quant_range is not None
                                    and (src.scale != dst.scale or src.zero_point != dst.zero_point)):
            continue
        ins = list(graph.infos(node.inputs))
        ins[pos] = replace(act_info, value=_ACT_CODES[relu.type])
        try:
            params = define(node.type, ins, graph.infos(relu.outputs))
        except Exception:
            continue
        if getattr(params, "activation", None) != _ACT_CODES[relu.type]:
            continue
        fused = Node(node.index, node.type, list(node.inputs), list(relu.outputs), params)
        pairs.append((node, relu, fused))
    return pairs


def fuse_activations(graph: Graph) -> int:
    """Rewrite ``graph`` in place; returns the number of activations fused."""
    pairs = fusable_pairs(graph)
    if not pairs:
        return 0
    replace_by = {id(p): f for p, _, f in pairs}
    dropped = {id(r) for _, r, _ in pairs}
    graph.nodes = [replace_by.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return len(pairs)


def fold_constants(graph: Graph) -> int:
    """Compute nodes whose inputs are all constant, once; returns the number of nodes folded."""
    from ..reference.registry import KERNELS  # the reference kernels (the oracle) compute folded values

    folded = 0
    kept = []
    for node in graph.nodes:
        ins = graph.infos(node.inputs)
        if (node.params is None or node.type not in KERNELS or not ins
                or not all(t.value is not None or t.omitted for t in ins)
                or not any(OPERAND_TYPE_INFO[t.type].is_tensor and t.value is not None for t in ins)):
            kept.append(node)
            continue
        try:
            results = KERNELS[node.type](node.params, ins, graph.infos(node.outputs))
        except Exception:
            kept.append(node)
            continue
        for idx, value in zip(node.outputs, results):
            graph.tensors[idx] = replace(graph.tensors[idx], value=value, known_shape=True)
        folded += 1
    graph.nodes = kept
    return folded


_CHAIN_UNARY = (OperationType.RELU, OperationType.RELU1, OperationType.RELU6, OperationType.LOGISTIC,
                OperationType.TANH, OperationType.FLOOR)
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
