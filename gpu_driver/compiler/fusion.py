"""Graph rewrites before lowering: activation fusion and constant folding.

- :func:`fuse_activations`: a RELU / RELU1 / RELU6 that is the only consumer of the output of an
  operation with a fused activation (its family registers ``fused_activation_input``; fused
  activation NONE, same operand type and quantisation) disappears into that fused activation.  The
  producer's params are re-derived by its operation definition with the new fuse code, so every
  derived field (float and quantised clamp bounds) is consistent.  On a float output the params also
  get ``nan_to_low``: as in AOSP, the RELU operation maps NaN to its lower bound while a fused
  activation lets NaN through, and the kernels' clamp (FUSED_CLAMP) keeps the RELU's rule.  A float
  HARD_SWISH that is the only consumer of such an operation's output joins it too (``hard_swish``,
  applied after its clamp: FUSED_ACTIVATION).
- :func:`fuse_residual_adds`: a float ADD (no broadcast) one of whose operands is the output of an
  operation that can add a tensor in its epilogue (its family registers ``accepts_residual``; fused
  activation NONE, sole consumer the ADD) disappears into that operation: the ADD's other operand
  becomes the producer's last input (``residual``) and the ADD's activation its fused activation.
  The other operand must exist when the producer runs (a model input, or an earlier node's output);
  a later node computing it moves to just before the producer when its own inputs are ready there.
  Runs after support is decided: the fused node has an input its signature does not list.
- :func:`fold_channel_pads`: the residual of such a fused operation that is a float PAD adding zero
  channels at the end of the last axis only (its sole consumer) is read unpadded: the PAD disappears
  and the epilogue adds zeros for the channels past the residual's own (a MediaPipe BlazeFace block
  pads its shortcut so).
- :func:`fold_spatial_pads`: a PAD adding only zero rows and columns (a quantized input's zero point)
  around an NHWC image, read only by operations that can take it into their own explicit padding
  (their family registers ``accepts_zero_pad``: the convolutions that are not GEMMs), disappears
  into it: they read the unpadded image (TF Lite's stride-2 layers pad so).
- :func:`fuse_input_scales`: a float MUL (activation NONE) of a tensor by a vector along its last axis
  (every other axis of the vector 1: a squeeze-and-excitation block's channel weights), whose only
  consumer takes the product as its input 0 and can scale its input channels (its family registers
  ``accepts_input_scale``: a GEMM, which multiplies each weight row by the channel's scale),
  disappears into that consumer: it reads the tensor, and the vector becomes its last input before
  a residual (``input_scale``).  Runs after the residual ADDs are fused.
- :func:`fuse_prelus`: a float PRELU by a constant vector along the last axis, whose input is the
  output of an operation that can apply it after its activation (its family registers
  ``accepts_prelu``: a GEMM) and is read by nothing else, disappears into that operation: the vector
  becomes its last input (``prelu``).  Runs after the residual ADDs and input scales are fused.
- :func:`fuse_depthwise_inputs`: a float depthwise convolution (its family registers ``fuses_into_gemm``)
  whose output is read only by a 1×1 convolution lowered as a GEMM, as its input 0 (that family
  registers ``accepts_depthwise_input``), disappears into it: the GEMM reads the depthwise's input
  and computes the depthwise outputs of its rows itself (its params' ``depthwise``; the depthwise
  filter and bias become its last two inputs).  Runs last, after the other rewrites of the GEMM.
- :func:`fold_constants`: a node whose inputs are all constant is computed once, at preparation, with
  the reference device's kernel; its outputs become constants (``TensorInfo.value`` set).

Fused element-wise chains are the third rewrite: gpu_driver/compiler/elementwise_chain.py.
"""
from __future__ import annotations

from dataclasses import replace

from ..graph import Graph, Node
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType
from ..ops.activation import RELU_FUSE_CODES
from ..ops.catalog import define, lookup
from ..ops.padding import PadParams
from .lowering import LoweringContext


def activation_input(node: Node, graph: Graph) -> int | None:
    """Position of the fuse-code input of a fusable producer (its registered
    ``fused_activation_input``), or None."""
    entry = lookup(node.type)
    if entry is None or entry.fused_activation_input is None:
        return None
    return entry.fused_activation_input(graph.infos(node.inputs))


def _family_accepts(graph: Graph, node: Node, predicate: str) -> bool:
    """Whether ``node``'s family registers the fusion predicate ``predicate`` (an OperationDef field:
    ``accepts_residual``, ``accepts_input_scale``, ``accepts_prelu``, ``accepts_zero_pad``,
    ``accepts_depthwise_input``, ``fuses_into_gemm``) and it holds for the node; a predicate that
    raises says no."""
    accepts = getattr(lookup(node.type), predicate, None)
    if accepts is None:
        return False
    try:
        return bool(accepts(LoweringContext(graph, node)))
    except Exception:
        return False


def producers(graph: Graph) -> dict[int, Node]:
    """Tensor → the node computing it."""
    return {o: n for n in graph.nodes for o in n.outputs}


def consumers(graph: Graph) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for node in graph.nodes:
        for i in node.inputs:
            out.setdefault(i, []).append(node)
    return out


def _sole_consumers(graph: Graph, kinds) -> list[tuple[Node, int, Node]]:
    """(producer, position of its fuse-code input, consumer) for every operation with a fused
    activation whose one output is not a model output and has exactly one consumer, of a type in
    ``kinds`` (with params)."""
    users = consumers(graph)
    model_outputs = set(graph.subgraph.output_indexes)
    found = []
    for node in graph.nodes:
        pos = activation_input(node, graph) if node.params is not None else None
        if pos is None or len(node.outputs) != 1 or node.outputs[0] in model_outputs:
            continue
        us = users.get(node.outputs[0], [])
        if len(us) == 1 and us[0].type in kinds and us[0].params is not None:
            found.append((node, pos, us[0]))
    return found


def fusable_pairs(graph: Graph) -> list[tuple[Node, Node, Node]]:
    """(producer, activation node, producer re-defined with the activation) for every fusable pair.

    The third element is a new Node (the producer's index, inputs and params with the fused code,
    and the activation's outputs) — the graph is not modified.
    """
    pairs = []
    for node, pos, relu in _sole_consumers(graph, RELU_FUSE_CODES):
        act_info = graph.tensors[node.inputs[pos]]
        if act_info.value is None or int(act_info.value) != 0:
            continue
        src, dst = graph.tensors[node.outputs[0]], graph.tensors[relu.outputs[0]]
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
        if OPERAND_TYPE_INFO[src.type].quant_range is None:
            params = replace(params, nan_to_low=True)  # the RELU operation's rule: a NaN gives the lower bound
        fused = Node(node.index, node.type, list(node.inputs), list(relu.outputs), params)
        pairs.append((node, relu, fused))
    return pairs


def fusable_hard_swishes(graph: Graph) -> list[tuple[Node, Node, Node]]:
    """(producer, HARD_SWISH node, producer with it fused) for every float HARD_SWISH that is the only
    consumer of the output of an operation with a fused activation; the graph is not modified."""
    pairs = []
    for node, _, swish in _sole_consumers(graph, (OperationType.HARD_SWISH,)):
        src, dst = graph.tensors[node.outputs[0]], graph.tensors[swish.outputs[0]]
        if (OPERAND_TYPE_INFO[src.type].quant_range is not None or src.type != dst.type
                or getattr(node.params, "hard_swish", True)):
            continue
        fused = Node(node.index, node.type, list(node.inputs), list(swish.outputs),
                     replace(node.params, hard_swish=True))
        pairs.append((node, swish, fused))
    return pairs


def _rewrite(graph: Graph, pairs: list[tuple[Node, Node, Node]]) -> int:
    """Replace each producer by its fused node and drop the activation nodes; the number of pairs."""
    replace_by = {id(p): f for p, _, f in pairs}
    dropped = {id(r) for _, r, _ in pairs}
    graph.nodes = [replace_by.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
    return len(pairs)


def fuse_activations(graph: Graph) -> int:
    """Rewrite ``graph`` in place (RELUs first, then HARD_SWISHes); returns the number of activations fused."""
    fused = _rewrite(graph, fusable_pairs(graph))
    return fused + _rewrite(graph, fusable_hard_swishes(graph))


def _available_by(graph: Graph, node: Node, computed_by: dict[int, Node], order: dict[int, int],
                  tensor: int) -> Node | bool:
    """Whether ``tensor`` can be read when ``node`` runs: True when it is a model input or an earlier
    node's output; the node computing it when that node comes later but could run just before
    ``node`` (its own inputs ready by then; no control flow or data-dependent sizes); else False."""
    source = computed_by.get(tensor)
    if source is None or order[id(source)] < order[id(node)]:
        return True
    entry = lookup(source.type)
    if (entry is None or entry.data_dependent is not None or source.type in (OperationType.IF, OperationType.WHILE)
            or any(i in computed_by and order[id(computed_by[i])] >= order[id(node)] for i in source.inputs)):
        return False
    return source


def _residual_fusion(graph: Graph, add: Node, side: int, computed_by: dict[int, Node], order: dict[int, int],
                     users: dict[int, list[Node]]) -> tuple[Node, Node | None] | None:
    """The producer of ``add``'s input ``side`` re-defined with the ADD fused, and the node to move
    just before it (the one computing the other operand, when it comes later), or None."""
    mine, other = add.inputs[side], add.inputs[1 - side]
    node = computed_by.get(mine)
    if (node is None or node.params is None or users.get(mine) != [add]
            or mine in graph.subgraph.output_indexes):
        return None
    pos = activation_input(node, graph)
    if pos is None or len(node.outputs) != 1:
        return None
    code = graph.tensors[node.inputs[pos]]
    p = node.params
    if (code.value is None or int(code.value) != 0 or getattr(p, "residual", True)
            or getattr(p, "hard_swish", False) or getattr(p, "nan_to_low", False) or getattr(p, "prelu", False)):
        return None
    ready = _available_by(graph, node, computed_by, order, other)
    if graph.tensors[other].value is not None or ready is False:
        return None  # a constant, or not computable before the producer runs
    if not _family_accepts(graph, node, "accepts_residual"):
        return None
    try:
        ins = list(graph.infos(node.inputs))
        ins[pos] = replace(code, value=add.params.activation)
        params = define(node.type, ins, graph.infos(add.outputs))
    except Exception:
        return None
    params = replace(params, residual=True, nan_to_low=add.params.nan_to_low, hard_swish=add.params.hard_swish)
    fused = Node(node.index, node.type, [*node.inputs, other], list(add.outputs), params)
    return fused, (ready if isinstance(ready, Node) else None)


def _next_residual_add(graph: Graph) -> tuple[Node, Node, Node, Node | None] | None:
    """(producer, ADD, fused producer, node to move before it or None) for the first fusable residual
    ADD (float32 operands and result of one shape); when both operands qualify, the later producer
    takes the ADD."""
    users = consumers(graph)
    computed_by = producers(graph)
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    for add in graph.nodes:
        if add.type != OperationType.ADD or add.params is None or len(add.inputs) < 2:
            continue
        a, b, out = (graph.tensors[i] for i in (add.inputs[0], add.inputs[1], add.outputs[0]))
        if not (a.type == b.type == out.type == OperandType.TENSOR_FLOAT32 and a.known_shape and b.known_shape
                and tuple(a.shape) == tuple(b.shape) == tuple(out.shape)):
            continue
        options = [(computed_by[add.inputs[side]], *found) for side in (0, 1)
                   if (found := _residual_fusion(graph, add, side, computed_by, order, users)) is not None]
        if options:
            producer, fused, hoisted = max(options, key=lambda o: order[id(o[0])])
            return producer, add, fused, hoisted
    return None


def fuse_residual_adds(graph: Graph) -> int:
    """Rewrite ``graph`` in place, one ADD at a time (a node computing the other operand after the
    producer moves to just before it); returns the number of ADDs fused."""
    fused = 0
    while (found := _next_residual_add(graph)) is not None:
        producer, add, node, hoisted = found
        if hoisted is not None:
            graph.nodes.remove(hoisted)
            graph.nodes.insert(graph.nodes.index(producer), hoisted)
        fused += _rewrite(graph, [(producer, add, node)])
    return fused


def _trailing_zero_channels(node: Node, graph: Graph) -> bool:
    """``node`` is a float32 constant-zero PAD of the last axis' end only."""
    p = node.params
    if not isinstance(p, PadParams) or p.mode != "constant" or p.fill != 0 or not p.paddings:
        return False
    if graph.tensors[node.inputs[0]].type != OperandType.TENSOR_FLOAT32:
        return False
    *leading, last = p.paddings
    return all(tuple(pad) == (0, 0) for pad in leading) and last[0] == 0 and last[1] > 0


def fold_channel_pads(graph: Graph) -> int:
    """Rewrite ``graph`` in place (after :func:`fuse_residual_adds`); returns the number of PADs folded."""
    folded = 0
    users = consumers(graph)
    computed_by = producers(graph)
    for node in list(graph.nodes):
        if not getattr(node.params, "residual", False):
            continue
        residual = node.inputs[-1]
        pad = computed_by.get(residual)
        if (pad is None or users.get(residual) != [node] or residual in graph.subgraph.output_indexes
                or not _trailing_zero_channels(pad, graph)):
            continue
        node.inputs[-1] = pad.inputs[0]
        graph.nodes.remove(pad)
        folded += 1
    return folded


def _spatial_zero_pad(graph: Graph, pad: Node) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a PAD that only adds rows and columns of zeros (a quantized
    input's zero point) around a rank-4 image, else None."""
    p = pad.params
    if not isinstance(p, PadParams) or p.mode != "constant" or len(p.paddings) != 4:
        return None
    (n0, n1), (top, bottom), (left, right), (c0, c1) = p.paddings
    x = graph.tensors[pad.inputs[0]]
    if n0 or n1 or c0 or c1 or min(top, bottom, left, right) < 0 or not x.known_shape:
        return None
    return (top, bottom, left, right) if p.fill == (x.zero_point if x.is_quantized else 0) else None


def _takes_pad(graph: Graph, node: Node, padded: int) -> bool:
    """``node`` reads the padded image ``padded`` as its input 0 only and can take the PAD into its
    own explicit padding (its family registers ``accepts_zero_pad``)."""
    return (node.params is not None and bool(node.inputs) and node.inputs[0] == padded
            and padded not in node.inputs[1:] and _family_accepts(graph, node, "accepts_zero_pad"))


def fold_spatial_pads(graph: Graph) -> int:
    """Rewrite ``graph`` in place (after support is decided, before :func:`fuse_residual_adds`): a PAD
    adding only zero rows and columns around an NHWC image, read only by operations that take it
    (:func:`_takes_pad`), disappears into their explicit padding; returns the number of PADs folded."""
    folded = 0
    users = consumers(graph)
    for pad in [n for n in graph.nodes if n.type in (OperationType.PAD, OperationType.PAD_V2)]:
        pads = _spatial_zero_pad(graph, pad) if pad.params is not None else None
        out = pad.outputs[0]
        readers = users.get(out, [])
        if (pads is None or not readers or out in graph.subgraph.output_indexes
                or not all(_takes_pad(graph, r, out) for r in readers)):
            continue
        top, bottom, left, right = pads
        for reader in readers:
            p = reader.params
            params = replace(p, in_h=p.in_h - top - bottom, in_w=p.in_w - left - right,
                             pad_top=p.pad_top + top, pad_bottom=p.pad_bottom + bottom,
                             pad_left=p.pad_left + left, pad_right=p.pad_right + right)
            graph.nodes[graph.nodes.index(reader)] = Node(reader.index, reader.type,
                                                          [pad.inputs[0], *reader.inputs[1:]],
                                                          list(reader.outputs), params)
        graph.nodes.remove(pad)
        users = consumers(graph)
        folded += 1
    return folded


def _channel_vector(shape, channels: int) -> bool:
    """``shape`` is a vector of ``channels`` along the last axis: every other axis 1."""
    return len(shape) >= 1 and shape[-1] == channels and all(d == 1 for d in shape[:-1])


def _input_scale(graph: Graph, mul: Node, users: dict[int, list[Node]]) -> tuple[Node, Node] | None:
    """(consumer, consumer with ``mul`` fused as its input scale) when ``mul`` qualifies
    (:func:`fuse_input_scales`), else None."""
    p = mul.params
    if (mul.type != OperationType.MUL or p is None or len(mul.inputs) < 2 or p.activation != 0
            or p.nan_to_low or p.hard_swish):
        return None
    out = mul.outputs[0]
    readers = users.get(out, [])
    if len(readers) != 1 or out in graph.subgraph.output_indexes:
        return None
    node = readers[0]
    if (node.params is None or not node.inputs or node.inputs[0] != out or out in node.inputs[1:] or getattr(node.params, "input_scale", True)
            or getattr(node.params, "prelu", False)):
        return None
    info = graph.tensors[out]
    if info.type != OperandType.TENSOR_FLOAT32 or not info.known_shape or not info.shape:
        return None
    for side in (0, 1):
        x, s = (graph.tensors[mul.inputs[i]] for i in (side, 1 - side))
        if (x.type == s.type == OperandType.TENSOR_FLOAT32 and x.known_shape and s.known_shape
                and tuple(x.shape) == tuple(info.shape) and _channel_vector(s.shape, info.shape[-1])):
            if not _family_accepts(graph, node, "accepts_input_scale"):
                return None
            inputs = list(node.inputs)
            inputs[0] = mul.inputs[side]
            inputs.insert(len(inputs) - 1 if getattr(node.params, "residual", False) else len(inputs),
                          mul.inputs[1 - side])
            return node, Node(node.index, node.type, inputs, list(node.outputs),
                              replace(node.params, input_scale=True))
    return None


def fuse_input_scales(graph: Graph) -> int:
    """Rewrite ``graph`` in place (after :func:`fuse_residual_adds`); returns the number of MULs fused."""
    fused = 0
    users = consumers(graph)
    for mul in list(graph.nodes):
        found = _input_scale(graph, mul, users)
        if found is None:
            continue
        node, scaled = found
        graph.nodes[graph.nodes.index(node)] = scaled
        graph.nodes.remove(mul)
        users = consumers(graph)
        fused += 1
    return fused


def _prelu_fusion(graph: Graph, prelu: Node, computed_by: dict[int, Node],
                  users: dict[int, list[Node]]) -> tuple[Node, Node] | None:
    """(producer of ``prelu``'s input, that producer with the PRELU fused) when it qualifies
    (:func:`fuse_prelus`), else None."""
    if prelu.type != OperationType.PRELU or prelu.params is None or len(prelu.inputs) != 2:
        return None
    x, alpha_id = prelu.inputs
    node = computed_by.get(x)
    if (node is None or node.params is None or users.get(x) != [prelu] or x in graph.subgraph.output_indexes
            or len(node.outputs) != 1 or alpha_id == x or getattr(node.params, "prelu", True)):
        return None
    src, alpha, out = (graph.tensors[i] for i in (x, alpha_id, prelu.outputs[0]))
    if not (src.type == alpha.type == out.type == OperandType.TENSOR_FLOAT32 and src.known_shape and out.known_shape
            and src.shape and tuple(src.shape) == tuple(out.shape) and alpha.value is not None
            and _channel_vector(alpha.shape, src.shape[-1])):
        return None
    if not _family_accepts(graph, node, "accepts_prelu"):
        return None
    return node, Node(node.index, node.type, [*node.inputs, alpha_id], list(prelu.outputs),
                      replace(node.params, prelu=True))


def fuse_prelus(graph: Graph) -> int:
    """Rewrite ``graph`` in place (after the residual ADDs and input scales); returns the number of
    PRELUs fused."""
    fused = 0
    maps = None
    for prelu in [n for n in graph.nodes if n.type == OperationType.PRELU]:
        maps = maps or (producers(graph), consumers(graph))
        found = _prelu_fusion(graph, prelu, *maps)
        if found is not None:
            fused += _rewrite(graph, [(found[0], prelu, found[1])])
            maps = None
    return fused


def _depthwise_fusion(graph: Graph, node: Node, computed_by: dict[int, Node],
                      users: dict[int, list[Node]]) -> tuple[Node, Node] | None:
    """(the depthwise producer of ``node``'s input 0, ``node`` with it fused) when they qualify
    (:func:`fuse_depthwise_inputs`), else None."""
    if node.params is None or not node.inputs or getattr(node.params, "depthwise", True) is not None:
        return None
    x = node.inputs[0]
    dw = computed_by.get(x)
    if (dw is None or dw.params is None or len(dw.outputs) != 1 or users.get(x) != [node]
            or x in node.inputs[1:] or x in graph.subgraph.output_indexes):
        return None
    if not (_family_accepts(graph, dw, "fuses_into_gemm") and _family_accepts(graph, node, "accepts_depthwise_input")):
        return None
    return dw, Node(node.index, node.type, [dw.inputs[0], *node.inputs[1:], dw.inputs[1], dw.inputs[2]],
                    list(node.outputs), replace(node.params, depthwise=dw.params))


def fuse_depthwise_inputs(graph: Graph) -> int:
    """Rewrite ``graph`` in place (after every other rewrite of the GEMMs); returns the number of
    depthwise convolutions fused."""
    fused = 0
    computed_by, users = producers(graph), consumers(graph)
    for node in list(graph.nodes):
        found = _depthwise_fusion(graph, node, computed_by, users)
        if found is None:
            continue
        dw, gemm = found
        graph.nodes[graph.nodes.index(node)] = gemm
        graph.nodes.remove(dw)
        computed_by, users = producers(graph), consumers(graph)
        fused += 1
    return fused


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
