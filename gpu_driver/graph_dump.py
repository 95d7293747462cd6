"""A model as a Graphviz graph: ``to_dot(model, device=None) -> str`` and ``gpu-driver dump``.

The graph shows every operand (index, type, shape, scale and zero point when quantized, lifetime:
input / output / constant / temporary) and every operation (index, type), with an edge from each
operand an operation reads and to each operand it writes.  For an accelerator device it also shows
what preparation makes of the model (gpu_driver.compiler.pipeline, without compiling the program):

- the **fused groups**: operations that run as one kernel — a fused activation
  (compiler/fusion.py) or a fused element-wise chain (compiler/elementwise_chain.py) — each a
  cluster labelled with its kernel; operations folded into constants at preparation are dashed;
- the **memory plan** (compiler/planner.py): where each operand lives (its arena offset and size, an
  input / output buffer, the constant block), and a table of the arena.

The text is written by this module alone; rendering it (``dot -Tsvg``) is :func:`render_svg`'s, and
only where a renderer is installed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .errors import DriverError, invalid
from .graph import Graph, build_graph
from .hal.model import Model
from .hal.types import OPERAND_TYPE_INFO, OperandLifeTime

#: how each operand lifetime is named in the graph
LIFETIMES = {OperandLifeTime.SUBGRAPH_INPUT: "input", OperandLifeTime.SUBGRAPH_OUTPUT: "output",
             OperandLifeTime.CONSTANT_COPY: "constant", OperandLifeTime.CONSTANT_REFERENCE: "constant",
             OperandLifeTime.TEMPORARY_VARIABLE: "temporary", OperandLifeTime.NO_VALUE: "omitted",
             OperandLifeTime.SUBGRAPH: "subgraph", OperandLifeTime.POINTER: "pointer"}
_FILL = {"input": "#cfe8ff", "output": "#d5f5d5", "constant": "#eeeeee", "temporary": "white",
         "omitted": "white", "subgraph": "#fff3c4", "pointer": "white"}


def resolve_model(spec) -> Model:
    """The model ``spec`` names: a HAL Model (or anything with a ``.model``: an imported TF Lite model,
    a zoo BenchModel), a ``.tflite`` path, or a zoo model name ``NAME[:WIDTH[:RESOLUTION]]``
    (gpu_driver.zoo.MODELS, e.g. ``mobilenet_v1:0.25:96``).  Anything else: INVALID_ARGUMENT."""
    if isinstance(spec, Model):
        return spec
    if isinstance(getattr(spec, "model", None), Model):
        return spec.model
    if not isinstance(spec, (str, os.PathLike)):
        raise invalid(f"a model is a Model, a .tflite path or a zoo model name, not {type(spec).__name__}")
    from . import zoo

    text = os.fspath(spec)
    name, *args = text.split(":")
    if name in zoo.MODELS and not os.path.exists(text):
        try:
            width, resolution = (float(args[0]) if args else 1.0), (int(args[1]) if len(args) > 1 else 224)
            if len(args) > 2 or width <= 0 or resolution < 32:
                raise ValueError
        except ValueError:
            raise invalid(f"zoo model {text!r}: expected NAME[:WIDTH[:RESOLUTION]], e.g. {name}:0.25:96") from None
        return zoo.MODELS[name](width, resolution).model
    if text.endswith(".tflite") or os.path.exists(text):
        from . import tflite

        return tflite.load_model(text).model
    raise invalid(f"no model {text!r}: neither a .tflite file nor a zoo model ({', '.join(sorted(zoo.MODELS))})")


@dataclass
class _Compilation:
    """What preparation for an accelerator makes of the model (or why it is not shown)."""

    note: str = ""
    unsupported: set[int] = field(default_factory=set)
    groups: list[tuple[str, list[int], list[str]]] = field(default_factory=list)   # (kind, op indexes, kernels)
    kernels: dict[int, list[str]] = field(default_factory=dict)                    # op index -> kernel names
    folded: set[int] = field(default_factory=set)
    storage: dict[int, str] = field(default_factory=dict)                          # operand -> where it lives
    arena_rows: list[str] = field(default_factory=list)


def _shape(dims) -> str:
    return "[" + ",".join("?" if d == 0 else str(d) for d in dims) + "]"


def _operand_lines(graph: Graph, index: int) -> list[str]:
    operand = graph.subgraph.operands[index]
    tensor = graph.tensors[index]
    info = OPERAND_TYPE_INFO[operand.type]
    dims = tensor.shape if tensor.shape is not None else tuple(operand.dimensions)
    head = f"#{index} {operand.type.name}"
    if info.is_tensor:
        head += " " + (_shape(dims) if dims else "[rank ?]")
    elif tensor.value is not None and operand.lifetime != OperandLifeTime.SUBGRAPH:
        head += f" = {tensor.value}"
    lines = [head]
    if operand.extra_params is not None and hasattr(operand.extra_params, "scales"):
        q = operand.extra_params
        lines.append(f"per-channel scales ({len(q.scales)}) axis {q.channel_dim}")
    elif info.quant_range is not None or operand.scale:
        lines.append(f"scale={operand.scale:.6g} zero_point={operand.zero_point}")
    lines.append(LIFETIMES.get(operand.lifetime, operand.lifetime.name.lower()))
    return lines


def _members(node, producer: dict[int, int]) -> list[int]:
    """The model operations a prepared node stands for: itself, a fused activation (whose output the
    node now writes), every step of an element-wise chain."""
    steps = getattr(node, "steps", None)
    if steps:
        return sorted({k for s in steps for k in _members(s, producer)})
    ops = {node.index}
    ops.update(producer[o] for o in node.outputs if producer.get(o, node.index) != node.index)
    return sorted(ops)


def _where(slot, key: str) -> str:
    if slot.region == "arena":
        return f"arena offset {slot.offset}, {slot.nbytes} B"
    if slot.region == "const":
        return f"constant block offset {slot.offset}, {slot.nbytes} B"
    return f"{slot.region} buffer, {slot.nbytes} B"


def _compile(model: Model, device) -> _Compilation:
    from .accelerator.control_flow import has_control_flow
    from .compiler.pipeline import build_plan, lower, prepare_graph
    from .compiler.support import supported_nodes

    backend = device.backend
    if has_control_flow(model):
        return _Compilation(note="runs as steps (IF / WHILE or data-dependent outputs): fused groups and "
                                 "memory plan not shown")
    unsupported = {k for k, ok in enumerate(supported_nodes(model, backend.features)) if not ok}
    if unsupported:
        return _Compilation(note=f"{len(unsupported)} operation(s) not supported on {device.name} (red): "
                                 "fused groups and memory plan not shown", unsupported=unsupported)
    try:
        graph = prepare_graph(model)
        lowered = lower(graph)
        plan, _ = build_plan(graph, lowered, backend.tuning, max(256, backend.allocator.alignment))
    except DriverError as exc:
        return _Compilation(note=f"not compiled: {exc.message}")
    result = _Compilation()
    producer = {out: k for k, op in enumerate(model.main.operations) for out in op.outputs}
    by_node: dict[int, list[str]] = {}
    for launch in plan.kernels:
        names = by_node.setdefault(launch.node, [])
        if launch.name not in names:
            names.append(launch.name)
    covered: set[int] = set()
    for node in graph.nodes:
        members = _members(node, producer)
        covered.update(members)
        kernels = by_node.get(node.index, [])
        if len(members) > 1:
            kind = "element-wise chain" if getattr(node, "steps", None) else "fused activation"
            result.groups.append((kind, members, kernels))
        else:
            result.kernels[node.index] = kernels
    result.folded = set(range(len(model.main.operations))) - covered

    def root(i: int, hops: int = 0) -> int:   # the operand whose storage i aliases
        return root(lowered.aliases[i], hops + 1) if i in lowered.aliases and hops < len(lowered.aliases) else i

    for i in range(len(graph.tensors)):
        key = f"o{root(i)}"
        if key in plan.storage:
            where = _where(plan.storage[key], key)
            result.storage[i] = where if root(i) == i else f"aliases #{root(i)}: {where}"
    arena = sorted((s.offset, k[0], int(k[1:]), s.nbytes) for k, s in plan.storage.items() if s.region == "arena")
    result.arena_rows = [f"memory plan: arena {plan.arena_bytes} B ({plan.naive_arena_bytes} B without reuse), "
                         f"constants {plan.const_bytes} B"]
    for offset, kind, n, nbytes in arena:   # arena keys: o<N> operand N, s<N> scratch N
        what = f"operand #{n}" if kind == "o" else f"scratch {n}"
        result.arena_rows.append(f"offset {offset}: {kind}{n} ({what}), {nbytes} B")
    return result


def _label(lines: list[str], left: bool = False) -> str:
    """A DOT label of ``lines``: centred, or each left-justified (``\\l``)."""
    escaped = [line.replace("\\", "\\\\").replace('"', '\\"') for line in lines]
    return '"' + ("".join(e + "\\l" for e in escaped) if left else "\\n".join(escaped)) + '"'


def to_dot(model, device=None) -> str:
    """The Graphviz text of ``model`` (a Model, or see :func:`resolve_model`); with an accelerator
    ``device`` (an AcceleratorDevice or a device name) also its fused groups and memory plan."""
    model = resolve_model(model)
    if isinstance(device, str):
        from .runtime.discovery import get_device

        device = get_device(device)
    graph = build_graph(model, model.main)
    sg = model.main
    compiled = _Compilation()
    title = [f"{len(sg.operations)} operations, {len(sg.operands)} operands"]
    if device is not None:
        title.append(f"device {device.name}")
        if getattr(device, "backend", None) is None:
            compiled.note = "runs operation by operation: no fused groups, no memory plan"
        else:
            compiled = _compile(model, device)
    if compiled.note:
        title.append(compiled.note)
    out = ["digraph model {", "  rankdir=TB;", f"  label={_label(title)};", "  labelloc=t;",
           '  node [fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", fontsize=8];']

    grouped = {k: g for g, (_, members, _) in enumerate(compiled.groups) for k in members}
    internal: dict[int, int] = {}   # operand -> group, when only that group's kernel sees it
    for i in range(len(sg.operands)):
        writers = [k for k, op in enumerate(sg.operations) if i in op.outputs]
        if writers and writers[0] in grouped and i not in compiled.storage:
            internal[i] = grouped[writers[0]]

    def operand_node(i: int) -> str:
        lines = _operand_lines(graph, i)
        if i in compiled.storage:
            lines.append(compiled.storage[i])
        elif i in internal:
            lines.append("inside the fused kernel (no storage)")
        fill = _FILL.get(LIFETIMES.get(sg.operands[i].lifetime, ""), "white")
        return f"  t{i} [shape=ellipse, style=filled, fillcolor={_label([fill])}, label={_label(lines)}];"

    def operation_node(k: int) -> str:
        op = sg.operations[k]
        lines = [f"op #{k} {op.type.name}"]
        style = "filled"
        if k in compiled.kernels and compiled.kernels[k]:
            lines.append("kernel " + ", ".join(compiled.kernels[k]))
        elif k in compiled.kernels:
            lines.append("no kernel (aliases its input)")
        if k in compiled.folded:
            lines.append("folded into a constant at preparation")
            style = "filled,dashed"
        fill = "#ffb3b3" if k in compiled.unsupported else "#ffe0b2"
        return f"  op{k} [shape=box, style={_label([style])}, fillcolor={_label([fill])}, label={_label(lines)}];"

    for i in range(len(sg.operands)):
        if i not in internal:
            out.append(operand_node(i))
    for k in range(len(sg.operations)):
        if k not in grouped:
            out.append(operation_node(k))
    for g, (kind, members, kernels) in enumerate(compiled.groups):
        names = " → ".join(sg.operations[k].type.name for k in members)
        label = [f"fused group {g}: {kind} ({names})", "kernel " + (", ".join(kernels) or "none")]
        out += [f"  subgraph cluster_fused_{g} {{", f"    label={_label(label)};", "    style=rounded;",
                '    color="#d35400";']
        out += ["  " + operation_node(k) for k in members]
        out += ["  " + operand_node(i) for i, grp in internal.items() if grp == g]
        out.append("  }")
    for k, op in enumerate(sg.operations):
        for pos, i in enumerate(op.inputs):
            out.append(f'  t{i} -> op{k} [label="{pos}"];')
        for i in op.outputs:
            out.append(f"  op{k} -> t{i};")
    if compiled.arena_rows:
        out.append(f"  memory_plan [shape=note, label={_label(compiled.arena_rows, left=True)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def render_svg(dot_path: str, svg_path: str) -> str | None:
    """Render ``dot_path`` to ``svg_path`` with the ``dot`` binary or the ``graphviz`` package; the
    renderer used, or None when none is installed (nothing is written then)."""
    binary = shutil.which("dot")
    if binary:
        subprocess.run([binary, "-Tsvg", dot_path, "-o", svg_path], check=True, capture_output=True, timeout=300)
        return binary
    try:
        import graphviz
    except ImportError:
        return None
    try:
        with open(dot_path) as f:
            svg = graphviz.Source(f.read()).pipe(format="svg")
    except graphviz.ExecutableNotFound:  # the package without the dot binary it drives
        return None
    with open(svg_path, "wb") as f:
        f.write(svg)
    return "graphviz"
