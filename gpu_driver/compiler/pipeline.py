"""The preparation pipeline: Model → CompiledModel (binary, launch plan, constants).

    build_graph → fold constants / fuse activations and chains → lower (each operation's lowering)
    → plan memory and launches (the backend's launch tuning resolves local sizes)
    → codegen (the backend's prelude) → compile

:func:`compile_model` produces the typed artifact of gpu_driver.compiler.artifact — exactly what the
model/data cache stores — and never touches device memory: gpu_driver.accelerator.executable
instantiates it on a backend device, so preparation from cache is instantiation alone.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import failure
from ..graph import Graph, build_graph
from ..hal.model import Model
from ..hal.types import OPERAND_TYPE_INFO
from ..ops.catalog import lookup
from .artifact import CompiledModel, IOBinding, KernelLaunch, LaunchPlan, StatusWord, StorageSlot
from .autotune import lowering_for, tuning
from .codegen import assign_names, fixed_local_sizes, generate
from .cost import estimated_work
from .elementwise_chain import ElementwiseChain, fuse_elementwise_chains, lower_elementwise_chain
from .fusion import (fold_channel_pads, fold_constants, fold_spatial_pads, fuse_activations, fuse_depthwise_inputs,
                     fuse_input_scales, fuse_prelus, fuse_residual_adds)
from .ir import LoweredModel, TensorId
from .lowering import LoweringContext
from .support import check_supported
from .slice_forwarding import drop_unused, forward_slices
from .planner import Interval, pack, plan_arena
from .projection_batching import batch_projections


def operand_nbytes(graph: Graph, index: int) -> int:
    t = graph.tensors[index]
    info = OPERAND_TYPE_INFO[t.type]
    if not info.is_tensor:
        return info.byte_size
    if t.omitted:  # an optional input the request leaves out: no storage
        return 0
    shape = t.dims()
    return int(math.prod(shape)) * info.byte_size


def prepare_graph(model: Model, input_shapes: Sequence[tuple[int, ...]] | None = None,
                  fuse: bool = True, fold: bool = True, check_support: bool = False,
                  fuse_chains: bool = True, input_values: dict[int, object] | None = None) -> Graph:
    """build_graph + graph rewrites (the graph the kernels are generated from).

    ``check_support``: raise GENERAL_FAILURE unless every operation's lowering supports it with these
    shapes (for specialisations of dynamic-shape models, whose support was decided on a
    representative signature)."""
    graph = build_graph(model, model.main, list(input_shapes) if input_shapes is not None else None, input_values)
    if fold:
        fold_constants(graph)
        if fuse and forward_slices(graph):
            fold_constants(graph)
            drop_unused(graph)
    if fuse:
        fuse_activations(graph)
        batch_projections(graph)
    if check_support:
        check_supported(graph)
    if fuse:
        fold_spatial_pads(graph)
        fuse_residual_adds(graph)
        fold_channel_pads(graph)
        fuse_input_scales(graph)
        fuse_prelus(graph)
        fuse_depthwise_inputs(graph)
    if fuse and fuse_chains:
        fuse_elementwise_chains(graph)
    return graph


def lower(graph: Graph) -> LoweredModel:
    lowered = LoweredModel()
    for node in graph.nodes:
        if isinstance(node, ElementwiseChain):
            lower_elementwise_chain(LoweringContext(graph, node, lowered))
            continue
        entry = lookup(node.type)
        if entry is None or entry.lower is None:
            raise failure(f"no lowering for operation {node.index} ({node.type.name})")
        if node.params is None:
            raise failure(f"operation {node.index} ({node.type.name}): shapes or parameters unknown at compile time")
        entry.lower(LoweringContext(graph, node, lowered))
    return lowered


def build_plan(graph: Graph, lowered: LoweredModel, tuning,
               alignment: int = 256) -> tuple[LaunchPlan, list[np.ndarray]]:
    """The memory plan and launch plan plus the constants to upload; ``tuning`` (a backend's
    LaunchTuning) gives each launch its local size."""
    sg = graph.subgraph
    model_inputs, model_outputs = list(sg.input_indexes), list(sg.output_indexes)

    def root(i: int) -> int:
        seen = set()
        while i in lowered.aliases and i not in seen:
            seen.add(i)
            i = lowered.aliases[i]
        return i

    members: dict[int, set[int]] = {}
    for i in range(len(graph.tensors)):
        members.setdefault(root(i), set()).add(i)

    def key_of(t: TensorId) -> str:
        if t.kind == "operand":
            return f"o{root(t.index)}"
        if t.kind == "const":
            return f"c{t.index}"
        if t.kind == "scratch":
            return f"s{t.index}"
        if t.kind == "status":
            return "st"
        raise failure(f"unknown tensor kind {t.kind!r}")

    sizes: dict[str, tuple[str, int]] = {}   # storage key -> (region, nbytes)
    constants: list[np.ndarray] = []
    const_keys: list[str] = []

    def place(key: str) -> None:
        if key in sizes:
            return
        kind, idx = key[0], (int(key[1:]) if key[1:].isdigit() else -1)
        if kind == "c":
            arr = lowered.constants[idx]
            sizes[key] = ("const", int(arr.nbytes))
            constants.append(np.ascontiguousarray(arr))
            const_keys.append(key)
        elif key == "st":
            sizes[key] = ("status", 4)
        elif kind == "s":
            s = lowered.scratch[idx]
            sizes[key] = ("arena", int(s.count * np.dtype(s.dtype).itemsize))
        else:
            t = graph.tensors[idx]
            group = members.get(idx, {idx})
            if t.value is not None and OPERAND_TYPE_INFO[t.type].is_tensor:
                arr = np.ascontiguousarray(np.asarray(t.value, dtype=t.dtype))
                if arr.dtype == np.bool_:
                    arr = arr.astype(np.uint8)
                sizes[key] = ("const", int(arr.nbytes))
                constants.append(arr)
                const_keys.append(key)
            elif idx in model_inputs:
                sizes[key] = ("input", operand_nbytes(graph, idx))
            elif group & set(model_outputs):
                sizes[key] = ("output", operand_nbytes(graph, idx))
            else:
                sizes[key] = ("arena", operand_nbytes(graph, idx))

    assign_names(lowered.kernels)
    kernels = []
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for pos, k in enumerate(lowered.kernels):
        args = tuple(key_of(t) for t in (*k.inputs, *k.outputs))
        for a in args:
            place(a)
            first.setdefault(a, pos)
            last[a] = pos
        kernels.append(KernelLaunch(k.name, args, k.global_size, tuning.local_size(k.work, k.global_size), k.node,
                                    k.template))

    def binding(idx: int, is_output: bool) -> IOBinding:
        key = f"o{root(idx)}"
        place(key)
        t = graph.tensors[idx]
        shape = (t.dims() if is_output else t.shape) if OPERAND_TYPE_INFO[t.type].is_tensor else ()
        return IOBinding(key, operand_nbytes(graph, idx), tuple(shape))

    inputs = [binding(idx, False) for idx in model_inputs]
    outputs = [binding(idx, True) for idx in model_outputs]
    intervals = [Interval(k, nbytes, first.get(k, 0), last.get(k, 0))
                 for k, (region, nbytes) in sizes.items() if region == "arena"]
    mplan = plan_arena(intervals, alignment)
    const_offsets, const_bytes = pack([(k, sizes[k][1]) for k in const_keys], alignment)
    offsets = {**mplan.offsets, **const_offsets}
    storage = {k: StorageSlot(region, nbytes, offsets.get(k, 0)) for k, (region, nbytes) in sizes.items()}
    plan = LaunchPlan(
        kernels=kernels, storage=storage, const_keys=const_keys, const_bytes=const_bytes,
        arena_bytes=mplan.arena_bytes, naive_arena_bytes=mplan.naive_bytes, inputs=inputs, outputs=outputs,
        status=StatusWord("st", dict(sorted(lowered.status_messages.items()))) if "st" in storage else None)
    return plan, constants


def compile_model(model: Model, backend, input_shapes: Sequence[tuple[int, ...]] | None = None,
                  check_support: bool = False, input_values: dict[int, object] | None = None,
                  lane: str | None = "") -> CompiledModel:
    """Everything expensive of preparation, for ``backend`` (a backends.base.BackendDevice: its
    compiler and prelude, its launch tuning and its allocator's view alignment); ``input_values``
    specialises the kernels on the values of those model inputs (support.value_input_positions).
    ``lane``: the backend lane to compile for; None lets the backend choose by the model's
    estimated work (compiler.cost)."""
    with lowering_for(backend.tuning):  # rewrites that depend on the device's kernels (fusion.py)
        graph = prepare_graph(model, input_shapes, check_support=check_support, input_values=input_values)
    if lane is None:
        lane = backend.lane_for(estimated_work(graph), len(graph.nodes))
    with tuning(backend):  # lowerings may time candidate tiles on the device (compiler/autotune.py)
        lowered = lower(graph)
    plan, constants = build_plan(graph, lowered, backend.tuning, max(256, backend.allocator.alignment))
    plan.lane = lane
    source = generate(lowered.kernels, backend.compiler.prelude, fixed_local_sizes(plan.kernels))
    binary = backend.lane(lane).compiler.compile(source) if plan.kernels else b""
    return CompiledModel(binary, plan, constants, source)
