"""Graph rewrites before lowering: activation fusion and constant folding.

- :func:`fuse_activations`: a quantized RELU / RELU1 / RELU6 that is the only consumer of the output
  of an operation with a fused activation (its family registers ``fused_activation_input``; fused
  activation NONE, same operand type and quantisation) disappears into that fused activation.
  Float RELUs stay separate operations (or join an element-wise chain): as in AOSP, a RELU maps NaN
  to its lower bound while a fused activation lets NaN through.  The producer's params are
  re-derived by its operation definition with the new fuse code, so every derived field (float and
  quantised clamp bounds) is consistent.
- :func:`fold_constants`: a node whose inputs are all constant is computed once, at preparation, with
  the reference device's kernel; its outputs become constants (``TensorInfo.value`` set).

Fused element-wise chains are the third rewrite: gpu_driver/compiler/elementwise_chain.py.
"""
from __future__ import annotations

from dataclasses import replace

from ..graph import Graph, Node
from ..hal.types import OPERAND_TYPE_INFO
from ..ops.activation import RELU_FUSE_CODES
from ..ops.catalog import define, lookup


def activation_input(node: Node, graph: Graph) -> int | None:
    """Position of the fuse-code input of a fusable producer (its registered
    ``fused_activation_input``), or None."""
    entry = lookup(node.type)
    if entry is None or entry.fused_activation_input is None:
        return None
    return entry.fused_activation_input(graph.infos(node.inputs))


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
        if len(us) != 1 or us[0].type not in RELU_FUSE_CODES or us[0].params is None:
            continue
        relu = us[0]
        src, dst = graph.tensors[out], graph.tensors[relu.outputs[0]]
        if OPERAND_TYPE_INFO[src.type].quant_range is None:
            continue  # a float RELU maps NaN to its lower bound, a fused activation lets NaN through
        if src.type != dst.type or src.scale != dst.scale or src.zero_point != dst.zero_point:
            continue
        ins = list(graph.infos(node.inputs))
        ins[pos] = replace(act_info, value=RELU_FUSE_CODES[relu.type])
        try:
            params = define(node.type, ins, graph.infos(relu.outputs))
        except Exception:
            continue
        if getattr(params, "activation", None) != RELU_FUSE_CODES[relu.type]:
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
    folded = 0
    kept = []
    for node in graph.nodes:
        ins = graph.infos(node.inputs)
        entry = lookup(node.type)
        if (node.params is None or entry is None or not ins
                or not all(t.value is not None or t.omitted for t in ins)
                or not any(OPERAND_TYPE_INFO[t.type].is_tensor and t.value is not None for t in ins)):
            kept.append(node)
            continue
        try:
            results = entry.reference(node.params, ins, graph.infos(node.outputs))  # the oracle computes it
        except Exception:
            kept.append(node)
            continue
        for idx, value in zip(node.outputs, results):
            graph.tensors[idx] = replace(graph.tensors[idx], value=value, known_shape=True)
        folded += 1
    graph.nodes = kept
    return folded
