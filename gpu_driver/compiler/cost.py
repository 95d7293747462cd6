"""Estimated work of a graph: what a backend weighs to decide where a model runs
(``BackendDevice.lane_for``: PoCL runs small models in the calling thread).

One unit is one element read or written, or one multiply-add.  The estimate only has to be of the
right order (a model of 10⁴ units from one of 10⁸): every operation counts the elements of its
tensors; one whose arithmetic outgrows them (convolutions, matrix products, recurrent cells)
registers its multiply-adds (``multiply_adds`` in ops/registry.py).
"""
from __future__ import annotations

from ..graph import Graph
from ..ops.catalog import lookup
from ..sizes import element_count


def _known(t) -> bool:
    return t.shape is not None and t.known_shape


def node_work(graph: Graph, node) -> int:
    """The estimated work of one graph node (an unknown dimension counts as 1)."""
    tensors = [graph.tensors[i] for i in (*node.inputs, *node.outputs) if i >= 0]
    work = sum(element_count(max(1, d) for d in t.shape) for t in tensors if t.shape is not None)
    entry = lookup(node.type)
    if entry is not None and entry.multiply_adds is not None and all(_known(t) for t in tensors):
        work += entry.multiply_adds([graph.tensors[i] for i in node.inputs],
                                    [graph.tensors[i] for i in node.outputs])
    return work


def estimated_work(graph: Graph) -> int:
    """The estimated work of one execution of ``graph`` (every node once)."""
    return sum(node_work(graph, node) for node in graph.nodes)
