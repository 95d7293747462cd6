"""Slices of concatenations read the concatenated tensors themselves.

TF Lite writes a Keras recurrent layer's output sequence as a tensor list updated once per time
step: ``seq' = CONCATENATION(SLICE(seq, [0, t)), item_t, SLICE(seq, [t + 1, T)))``.  Unrolled
(accelerator/loop_unrolling.py), that is a chain of T concatenations each copying the whole
sequence, and two slices per step, each a kernel of its own.  :func:`forward_slices` rewrites a SLICE
(unit steps) of a CONCATENATION whose range along the concatenation axis (whole along the others)

- is exactly one of its inputs: the slice's readers read that input;
- is exactly several of its inputs, and every reader is a CONCATENATION on the same axis: those
  inputs take the slice's place among the reader's;
- lies inside one input: the slice reads that input (at the shifted offset), and a slice of a slice
  reads the first one's source;

after which :func:`drop_unused` removes the operations nobody reads, so the chain above becomes one
CONCATENATION of the T items (the slices of the constant initial sequence fold into constants).
Float and int32 tensors only (a quantized concatenation may requantize its inputs).
"""
from __future__ import annotations

from dataclasses import replace

from ..graph import Graph, Node
from ..hal.types import OperandType, OperationType
from .fusion import consumers, producers

_PLAIN = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32)


def forward_slices(graph: Graph) -> int:
    """Rewrite slices of concatenations as described in the module docstring; returns how many."""
    producer = producers(graph)
    outputs = set(graph.subgraph.output_indexes)
    done = 0
    for node in list(graph.nodes):
        if node.type != OperationType.SLICE or node.params is None or any(s != 1 for s in node.params.steps):
            continue
        source = graph.tensors[node.inputs[0]]
        if source.type not in _PLAIN:
            continue
        begin, shape = node.params.begins[0], node.params.gather_shapes[0]
        concat = producer.get(node.inputs[0])
        if concat is None or concat.type != OperationType.CONCATENATION or concat.params is None:
            continue
        cp = concat.params
        axis = cp.axis
        dims = source.shape
        if any(a != axis and (begin[a] != 0 or shape[a] != dims[a]) for a in range(len(dims))):
            continue
        lo, hi = begin[axis], begin[axis] + shape[axis]
        parts = concat.inputs[cp.first:cp.first + len(cp.axis_sizes)]
        offsets = [sum(cp.axis_sizes[:i]) for i in range(len(parts))]
        covered = [i for i, (o, s) in enumerate(zip(offsets, cp.axis_sizes)) if s and lo <= o and o + s <= hi]
        inside = [i for i, (o, s) in enumerate(zip(offsets, cp.axis_sizes)) if o <= lo and hi <= o + s and s]
        out = node.outputs[0]
        if covered and sum(cp.axis_sizes[i] for i in covered) == hi - lo and out not in outputs:
            readers = [] if len(covered) == 1 else consumers(graph).get(out, [])
            if len(covered) == 1:
                _replace_uses(graph, out, parts[covered[0]])
            elif readers and all(_same_axis_concat(graph, r, axis) for r in readers):
                for r in readers:
                    _splice(graph, r, out, [parts[i] for i in covered], [cp.axis_sizes[i] for i in covered])
            else:
                continue
            done += 1
        elif inside:
            i = inside[0]
            shifted = list(begin)
            shifted[axis] -= offsets[i]
            node.inputs = [parts[i], *node.inputs[1:]]
            node.params = replace(node.params, begins=[tuple(shifted)])
            _compose(graph, node, producer)
            done += 1
    return done


def _same_axis_concat(graph: Graph, node: Node, axis: int) -> bool:
    return (node.type == OperationType.CONCATENATION and node.params is not None and node.params.axis == axis
            and graph.tensors[node.outputs[0]].type in _PLAIN)


def _replace_uses(graph: Graph, old: int, new: int) -> None:
    for n in graph.nodes:
        if old in n.inputs:
            n.inputs = [new if i == old else i for i in n.inputs]


def _splice(graph: Graph, concat: Node, old: int, parts: list[int], sizes: list[int]) -> None:
    """Replace the tensor input ``old`` of ``concat`` by ``parts`` (their sizes along its axis)."""
    p = concat.params
    tensors = concat.inputs[p.first:p.first + len(p.axis_sizes)]
    new_tensors, new_sizes = [], []
    for t, s in zip(tensors, p.axis_sizes):
        if t == old:
            new_tensors += parts
            new_sizes += sizes
        else:
            new_tensors.append(t)
            new_sizes.append(s)
    concat.inputs = [*concat.inputs[:p.first], *new_tensors, *concat.inputs[p.first + len(tensors):]]
    concat.params = replace(p, axis_sizes=tuple(new_sizes), requantize=(False,) * len(new_sizes))


def _compose(graph: Graph, node: Node, producer: dict[int, Node]) -> None:
    """A SLICE of a unit-step SLICE reads the first slice's source at the summed offset."""
    inner = producer.get(node.inputs[0])
    while inner is not None and inner.type == OperationType.SLICE and inner.params is not None \
            and all(s == 1 for s in inner.params.steps):
        begin = tuple(a + b for a, b in zip(node.params.begins[0], inner.params.begins[0]))
        node.inputs = [inner.inputs[0], *node.inputs[1:]]
        node.params = replace(node.params, begins=[begin])
        inner = producer.get(node.inputs[0])


def drop_unused(graph: Graph, only: set[int] | None = None) -> int:
    """Remove the operations none of whose outputs is read or a graph output (of ``only``, node ids,
    when given); returns how many."""
    keep = set(graph.subgraph.output_indexes)
    kept: list[Node] = []
    dropped = 0
    for node in reversed(graph.nodes):
        if (node.type in (OperationType.IF, OperationType.WHILE) or any(o in keep for o in node.outputs)
                or only is not None and id(node) not in only):
            kept.append(node)
            keep.update(node.inputs)
        else:
            dropped += 1
    graph.nodes = kept[::-1]
    return dropped
