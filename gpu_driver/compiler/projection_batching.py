"""Batched input projections: the per-time-step FULLY_CONNECTEDs of one sequence become one.

A Keras recurrent layer that TF Lite writes as a WHILE loop, unrolled (accelerator/loop_unrolling.py),
projects each time step's input on its own: ``FULLY_CONNECTED(RESHAPE(GATHER(seq, [t])), W, b)``,
T products of one row each, every one a kernel launch after a gather launch.  :func:`batch_projections`
finds the float32 FULLY_CONNECTEDs that share their constant weights, bias and activation and whose
inputs are single rows of one tensor (a GATHER of one constant index along axis 0, through
value-preserving RESHAPE-like operations and same-type CASTs), and replaces them by one
FULLY_CONNECTED over the whole tensor, placed where the first of them was, and a SLICE of its rows per
step; the element-wise operations reading a step's rows then read them in place
(compiler/elementwise_chain.py), and the gathers, left unread, are dropped.  Each output row is the
same dot product as before.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..graph import Graph, Node
from ..hal.types import OperandType, OperationType
from ..ops.catalog import lookup
from ..ops.definition import TensorInfo
from ..ops.fully_connected import FullyConnectedParams
from ..ops.shape_ops import lower_alias
from ..ops.slicing import GatherParams
from .fusion import producers
from .slice_forwarding import drop_unused

_F32 = OperandType.TENSOR_FLOAT32


def _same_values(graph: Graph, node: Node) -> bool:
    """A RESHAPE-like operation or a CAST to its own type: the output holds the input's elements."""
    entry = lookup(node.type)
    if node.params is None or entry is None:
        return False
    if entry.lower is lower_alias:
        return True
    a, b = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    return node.type == OperationType.CAST and (a.type, a.scale, a.zero_point) == (b.type, b.scale, b.zero_point)


def _source(graph: Graph, producer: dict[int, Node], tensor: int, path: list[Node]) -> int:
    """The first tensor of the value-preserving operations ending in ``tensor``; those operations are
    appended to ``path``."""
    while tensor in producer and _same_values(graph, producer[tensor]):
        path.append(producer[tensor])
        tensor = producer[tensor].inputs[0]
    return tensor


def _row_of(graph: Graph, producer: dict[int, Node], tensor: int,
            path: list[Node]) -> tuple[int, int, int] | None:
    """(source tensor, first element, element count) when ``tensor`` holds one row of axis 0 of a
    float32 tensor, gathered by a constant index; else None.  The operations from the source to
    ``tensor`` are appended to ``path``."""
    tensor = _source(graph, producer, tensor, path)
    node = producer.get(tensor)
    if node is None or node.type != OperationType.GATHER or node.params is None:
        return None
    table, axis, index = (graph.tensors[i] for i in node.inputs[:3])
    if table.type != _F32 or table.shape is None or axis.value is None or index.value is None:
        return None
    row = int(np.prod(table.shape[1:], dtype=np.int64))
    if int(axis.value) != 0 or np.asarray(index.value).size != 1:
        return None
    t = int(np.asarray(index.value).reshape(-1)[0])
    if not 0 <= t < table.shape[0]:
        return None
    path.append(node)
    return _source(graph, producer, node.inputs[0], path), t * row, row


def _constant(graph: Graph, values) -> int:
    """A new INT32 vector constant in the graph; its index."""
    array = np.asarray(values, dtype=np.int32)
    graph.tensors.append(TensorInfo(OperandType.TENSOR_INT32, array.shape, value=array, index=len(graph.tensors)))
    return len(graph.tensors) - 1


def batch_projections(graph: Graph) -> int:
    """Rewrite the per-step projections as described in the module docstring; returns how many
    FULLY_CONNECTEDs were replaced."""
    producer = producers(graph)
    groups: dict[tuple, list[tuple[Node, int, list[Node]]]] = {}
    for node in graph.nodes:
        p = node.params
        if (node.type != OperationType.FULLY_CONNECTED or not isinstance(p, FullyConnectedParams) or p.residual
                or p.quant is not None or graph.tensors[node.outputs[0]].type != _F32):
            continue
        weights, bias = graph.tensors[node.inputs[1]], graph.tensors[node.inputs[2]]
        if weights.value is None or bias.value is None or weights.type != _F32:
            continue
        path: list[Node] = []
        row = _row_of(graph, producer, node.inputs[0], path)
        if row is None or row[2] % p.input_size or row[1] % p.input_size:
            continue
        source, first, _ = row
        key = (source, node.inputs[1], node.inputs[2], p.activation, p.float_min, p.float_max, p.nan_to_low,
               p.hard_swish)
        groups.setdefault(key, []).append((node, first // p.input_size, path))
    replaced: dict[int, list[Node]] = {}
    feeding: set[int] = set()   # the gathers and views of the replaced products
    count = 0
    for (source, *_), members in groups.items():
        info = graph.tensors[source]
        if len(members) < 2 or info.shape is None or not 2 <= len(info.shape) <= 4:
            continue
        head = members[0][0]
        p = head.params
        rows = int(np.prod(info.shape, dtype=np.int64)) // p.input_size
        out = graph.tensors[head.outputs[0]]
        graph.tensors.append(TensorInfo(_F32, (rows, p.num_units), index=len(graph.tensors), provided=True))
        projected = len(graph.tensors) - 1
        batched = Node(head.index, head.type, [source, *head.inputs[1:]], [projected],
                       replace(p, batch=rows, output_shapes=[(rows, p.num_units)]))
        replaced[id(head)] = [batched]
        for node, first_row, path in members:
            feeding.update(id(n) for n in path)
            n = node.params.batch
            shape = (n, p.num_units)
            slice_params = GatherParams(output_shapes=[tuple(out.shape)], gather_shapes=[shape],
                                        begins=[(first_row, 0)], steps=(1, 1))
            piece = Node(node.index, OperationType.SLICE,
                         [projected, _constant(graph, [first_row, 0]), _constant(graph, shape)],
                         list(node.outputs), slice_params)
            replaced.setdefault(id(node), []).append(piece)
        count += len(members)
    if not count:
        return 0
    graph.nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    drop_unused(graph, feeding)
    return count
