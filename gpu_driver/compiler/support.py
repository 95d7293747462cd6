"""Whether the accelerator kernels run an operation: decided here, from the operation registry.

An operation is supported when its family registers a lowering, its parameters decode at
preparation (constant arguments, known shapes), the device has the features the lowering needs and
the lowering's ``supports`` predicate agrees; a fused activation is supported with its producer.
"""
from __future__ import annotations

from ..errors import DriverError, failure
from ..graph import Graph, Node, build_graph
from ..hal.model import Model
from ..hal.types import OPERAND_TYPE_INFO
from ..ops.catalog import lookup
from .fusion import fusable_pairs
from .lowering import LoweringContext


def node_supported(graph: Graph, node: Node, features: frozenset | None = None) -> bool:
    """Whether the kernels run ``node`` exactly as stated: a lowering exists, the node's parameters
    are decoded (constant arguments, known shapes), the device has the ``features`` the lowering
    requires (None: not checked) and its ``supports`` predicate agrees."""
    entry = lookup(node.type)
    if entry is None or entry.lower is None or node.params is None:
        return False  # no kernels, non-constant parameters, or a shape that depends on tensor values
    if features is not None and not entry.requires <= features:
        return False  # the device lacks a feature the kernels need (e.g. fp64)
    if entry.supports is None:
        return True
    try:
        return bool(entry.supports(LoweringContext(graph, node)))
    except Exception:  # a predicate that cannot decide says no
        return False


#: sizes tried, in order, for the unknown input dimensions of a dynamic-shape model (see support_graph)
REPRESENTATIVE_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 224)


def support_graph(model: Model) -> Graph:
    """The graph support is decided on.

    Shape-static models: the declared graph.  Models whose inputs have unknown dimensions (a 0 entry)
    are executed through per-signature specialisations (AcceleratorPreparedModel._specialization),
    so support is decided on a *representative specialisation*: every unknown input dimension set to
    one size from REPRESENTATIVE_DIMS, the first for which shape inference decodes every operation
    (else the one that decodes most).  What ``supports`` checks there — types, ranks, constant
    arguments, quantisation — does not depend on the sizes chosen.  The few size-dependent
    conditions (e.g. a recurrent op's batch > 0) are re-checked for every concrete signature at its
    first execution; a signature that fails them fails that execution with GENERAL_FAILURE
    (:func:`check_supported`).  Inputs of unknown rank cannot be specialised: their consumers stay
    unsupported.
    """
    sg = model.main
    graph = build_graph(model, sg)
    declared = [sg.operands[i] for i in sg.input_indexes]
    dynamic = [OPERAND_TYPE_INFO[o.type].is_tensor and 0 in (o.dimensions or ()) for o in declared]
    if graph.fully_specified or not any(dynamic):
        return graph
    if any(OPERAND_TYPE_INFO[o.type].is_tensor and not o.dimensions for o in declared):
        return graph  # unknown rank
    best, best_count = graph, sum(n.params is not None for n in graph.nodes)
    for size in REPRESENTATIVE_DIMS:
        shapes = [tuple(d or size for d in o.dimensions) if OPERAND_TYPE_INFO[o.type].is_tensor else ()
                  for o in declared]
        try:
            g = build_graph(model, sg, shapes)
        except DriverError:
            continue  # e.g. a kernel larger than the chosen spatial size
        if g.fully_specified:
            return g
        count = sum(n.params is not None for n in g.nodes)
        if count > best_count:
            best, best_count = g, count
    return best


def supported_nodes(model: Model, features: frozenset = frozenset({"fp64"})) -> list[bool]:
    """One bool per main-subgraph operation: can the kernels run it exactly (fusion taken into account)
    on a device with ``features`` (BackendDevice.features)?"""
    graph = support_graph(model)
    ok = [node_supported(graph, n, features) for n in graph.nodes]
    for producer, relu, fused in fusable_pairs(graph):
        # a fused activation runs inside the producer's kernel: both are supported if that kernel is
        if not ok[relu.index] and ok[producer.index] and node_supported(graph, fused, features):
            ok[relu.index] = True
    return ok


def check_supported(graph: Graph) -> None:
    """GENERAL_FAILURE naming the first operation whose lowering does not support it as specialised."""
    for node in graph.nodes:
        if not node_supported(graph, node):
            shapes = [list(graph.tensors[i].shape or ()) for i in node.inputs]
            raise failure(f"operation {node.index} ({node.type.name}) is not supported by the accelerator "
                          f"kernels for input shapes {shapes}")
