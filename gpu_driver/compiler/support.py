"""Whether the accelerator kernels run an operation: decided here, from the operation registry.

An operation is supported when its family registers a lowering, its parameters decode at
preparation (constant arguments, known shapes), the device has the features the lowering needs and
the lowering's ``supports`` predicate agrees; a fused activation is supported with its producer.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools

import numpy as np

from ..errors import DriverError, failure
from ..graph import Graph, Node, build_graph
from ..hal.model import Model
from ..hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType
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


#: sizes tried, in order, for the unknown input dimensions of a dynamic-shape model (see support_graph);
#: 0 last: some declared outputs admit only an empty input (the rows a data-dependent operation kept)
REPRESENTATIVE_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 224, 0)
#: at most this many combinations of representative values are tried (see support_graph)
MAX_VALUE_COMBINATIONS = 256


def value_input_positions(model: Model) -> list[int]:
    """Positions of the main-subgraph inputs whose *values* some operation's definition reads (a
    scalar argument, or a tensor its family lists in ``value_inputs``: paddings, axes, a shape…).
    Accelerators compile one specialisation per distinct value of these (see
    AcceleratorPreparedModel)."""
    sg = model.main
    position = {idx: k for k, idx in enumerate(sg.input_indexes)}
    found = set()
    for op in sg.operations:
        entry = lookup(op.type)
        if entry is None:
            continue
        for i, idx in enumerate(op.inputs):
            if idx in position and (i in entry.value_inputs or not OPERAND_TYPE_INFO[sg.operands[idx].type].is_tensor):
                found.add(position[idx])
    return sorted(found)


def _representative_values(model: Model, position: int, shape) -> list:
    """Candidate values for a value input at support time: small fills, a range, and the declared
    dimensions of the outputs of its consumers (for shape-like arguments)."""
    sg = model.main
    idx = sg.input_indexes[position]
    operand = sg.operands[idx]
    info = OPERAND_TYPE_INFO[operand.type]
    if not info.is_tensor:
        return [info.dtype.type(1) if operand.type != OperandType.BOOL else False, info.dtype.type(0)]
    shape = tuple(shape)
    n = int(np.prod(shape))
    dtype = info.dtype
    fills = [np.zeros(shape, dtype), np.ones(shape, dtype), np.arange(n).reshape(shape).astype(dtype)]
    if dtype.kind == "i":
        fills.append(np.full(shape, -1, dtype))
    for op in sg.operations:
        if idx in op.inputs:
            for out in op.outputs:
                dims = sg.operands[out].dimensions
                if len(shape) == 1 and len(dims) == n and 0 not in dims:
                    fills.append(np.asarray(dims, dtype))
    return fills


def _omittable_input_positions(model: Model) -> set[int]:
    """Positions of the main-subgraph inputs that feed only inputs an operation may omit (an LSTM's
    projection bias, say): a request may leave them out, and the accelerator specialises on that."""
    sg = model.main
    position = {idx: k for k, idx in enumerate(sg.input_indexes)}
    optional, required = set(), set()
    for op in sg.operations:
        entry = lookup(op.type)
        for i, idx in enumerate(op.inputs):
            if idx in position:
                (optional if entry is not None and i in entry.signature.omittable else required).add(position[idx])
    return optional - required


def _with_unknown_result_dims(model: Model) -> Model:
    """``model`` with the dimensions of every operation result (temporaries and outputs of the main
    subgraph) unknown, their ranks kept."""
    main = copy.copy(model.main)
    main.operands = [copy.copy(o) for o in model.main.operands]
    for o in main.operands:
        if o.lifetime in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT) and o.dimensions:
            o.dimensions = [0] * len(o.dimensions)
    return dataclasses.replace(model, main=main)


def support_graph(model: Model) -> Graph:
    """The graph support is decided on.

    Shape-static models: the declared graph.  Models whose inputs have unknown dimensions (a 0 entry)
    are executed through per-signature specialisations (AcceleratorPreparedModel._specialization),
    so support is decided on a *representative specialisation*: every unknown input dimension set to
    one size from REPRESENTATIVE_DIMS, the first for which shape inference decodes every operation
    (else the one that decodes most).  Likewise, inputs whose values an operation reads
    (:func:`value_input_positions`) get representative values (:func:`_representative_values`).
    What ``supports`` checks there — types, ranks, constant arguments, quantisation — does not
    depend on the sizes or values chosen.  The few size- or value-dependent conditions (e.g. a
    recurrent op's batch > 0) are re-checked for every concrete signature at its first execution; a
    signature that fails them fails that execution with GENERAL_FAILURE (:func:`check_supported`).
    Optional inputs that are model inputs (a request may omit them) get a representative presence
    pattern too: those declared with a 0 dimension omitted, else every one omitted, else none; each
    pattern a request brings is its own specialisation.
    Inputs of unknown rank cannot be specialised: their consumers stay unsupported.
    """
    sg = model.main
    graph = build_graph(model, sg)
    declared = [sg.operands[i] for i in sg.input_indexes]
    dynamic = [OPERAND_TYPE_INFO[o.type].is_tensor and 0 in (o.dimensions or ()) for o in declared]
    valued = value_input_positions(model)
    optional = _omittable_input_positions(model)
    if graph.fully_specified or not (any(dynamic) or valued or optional):
        return graph
    if any(OPERAND_TYPE_INFO[o.type].is_tensor and not o.dimensions for o in declared):
        return graph  # unknown rank
    best, best_count = graph, sum(n.params is not None for n in graph.nodes)
    # representative values need not reproduce the declared dimensions of what they shape
    probe = _with_unknown_result_dims(model) if valued else model
    # presence patterns of the optional inputs: those declared with a 0 dimension omitted, then every
    # optional input omitted (the request decides; each pattern is its own specialisation)
    patterns = [{p for p in optional if 0 in (declared[p].dimensions or ())}]
    if optional and optional != patterns[0]:
        patterns.append(optional)
    if patterns[0]:  # last, every one given (a 0 dimension may only be a size the request decides)
        patterns.append(set())
    sizes, known = list(REPRESENTATIVE_DIMS[:1]), {}
    if any(dynamic):  # every size, then dimensions borrowed from known operands of the same rank
        sizes = [*REPRESENTATIVE_DIMS, *(("borrowed", k) for k in range(MAX_BORROWED))]
        known = _known_shapes(model)
    for omitted, size in itertools.product(patterns, sizes):
        shapes = [None if p in omitted else _filled_dims(known, o.dimensions, size)
                  if OPERAND_TYPE_INFO[o.type].is_tensor else () for p, o in enumerate(declared)]
        if any(s is False for s in shapes):
            continue  # no k-th operand of that rank to borrow from
        candidates = [[None] if shapes[p] is None else _representative_values(model, p, shapes[p]) for p in valued]
        for combination in itertools.islice(itertools.product(*candidates), MAX_VALUE_COMBINATIONS):
            try:
                g = build_graph(probe, probe.main, shapes, dict(zip(valued, combination)))
            except DriverError:
                continue  # e.g. a kernel larger than the chosen spatial size, or an invalid value
            if g.fully_specified:
                return g
            count = sum(n.params is not None for n in g.nodes)
            if count > best_count or (best is graph and omitted):  # omitted inputs: even undecoded
                best, best_count = g, count
    return best


#: at most this many known operand shapes are borrowed for unknown input dimensions (see _filled_dims)
MAX_BORROWED = 8


def _known_shapes(model: Model) -> dict[int, list[tuple[int, ...]]]:
    """The distinct fully known shapes of the main subgraph's tensor operands, by rank."""
    shapes: dict[int, list[tuple[int, ...]]] = {}
    for o in model.main.operands:
        dims = tuple(o.dimensions)
        if OPERAND_TYPE_INFO[o.type].is_tensor and dims and 0 not in dims and dims not in shapes.get(len(dims), []):
            shapes.setdefault(len(dims), []).append(dims)
    return shapes


def _filled_dims(known: dict[int, list[tuple[int, ...]]], dims, size) -> tuple[int, ...] | bool:
    """``dims`` with its unknown (0) entries set: to ``size``, or, for ``("borrowed", k)``, from the
    k-th distinct known shape of the same rank (``known``, :func:`_known_shapes`: an input
    concatenated with, or added to, tensors of known shape needs their sizes, not a uniform one).
    False when there is no k-th such shape."""
    if not isinstance(size, tuple):
        return tuple(d or size for d in dims)
    shapes = known.get(len(dims), [])
    if size[1] >= len(shapes):
        return False
    return tuple(d or b for d, b in zip(dims, shapes[size[1]]))


def supported_nodes(model: Model, features: frozenset = frozenset({"fp64"})) -> list[bool]:
    """One bool per main-subgraph operation: can the kernels run it exactly (fusion taken into account)
    on a device with ``features`` (BackendDevice.features)?"""
    graph = support_graph(model)
    ok = [node_supported(graph, n, features) or _decided_by_values(graph, n, model, features) for n in graph.nodes]
    for producer, relu, fused in fusable_pairs(graph):
        # a fused activation runs inside the producer's kernel: both are supported if that kernel is
        if not ok[relu.index] and ok[producer.index] and node_supported(graph, fused, features):
            ok[relu.index] = True
    return ok


def _decided_by_values(graph: Graph, node: Node, model: Model, features: frozenset) -> bool:
    """An operation that no representative value decodes (say SPACE_TO_BATCH_ND paddings that must
    make the padded size a multiple of the block) but whose only unknowns are the values of model
    inputs it reads: its family's kernels cover every operand type its signature allows, and they
    are specialised on the actual values at the first execution (a value they cannot run fails
    that execution with GENERAL_FAILURE, check_supported)."""
    entry = lookup(node.type)
    if node.params is not None or entry is None or entry.lower is None or not entry.requires <= features:
        return False
    inputs = set(model.main.input_indexes)
    valued = {model.main.input_indexes[p] for p in value_input_positions(model)}
    if not any(idx in valued and (pos in entry.value_inputs or graph.tensors[idx].shape == ())
               for pos, idx in enumerate(node.inputs)):
        return False  # undecoded for another reason than values (say the presence of optional inputs)
    for pos, idx in enumerate(node.inputs):
        t = graph.tensors[idx]
        if t.value is not None or t.omitted:
            continue
        if idx in valued and (pos in entry.value_inputs or t.shape == ()):
            continue  # a value the kernels are specialised on
        if idx in inputs or t.known_shape:
            if t.shape is None or 0 in t.shape and not t.known_shape:
                return False  # a data input of unknown shape: decided by support_graph's sizes, not here
            continue
        return False  # computed by an operation that did not decode
    return True


def check_supported(graph: Graph) -> None:
    """GENERAL_FAILURE naming the first operation whose lowering does not support it as specialised."""
    for node in graph.nodes:
        if not node_supported(graph, node):
            shapes = [list(graph.tensors[i].shape or ()) for i in node.inputs]
            raise failure(f"operation {node.index} ({node.type.name}) is not supported by the accelerator "
                          f"kernels for input shapes {shapes}")
