"""The preparation pipeline: Model → (binary, plan, constants) → an executable launch list.

    build_graph → fuse activations / fold constants → lower (LOWERINGS) → plan memory → codegen
    → backend.compile → (instantiate:) backend.load → upload constants → bind kernel arguments once

:func:`compile_model` produces a :class:`CompiledModel` — exactly what the model/data cache stores:
the binary, a msgpack-able ``plan`` (kernel names, argument storage keys, sizes, buffer layout, I/O
bindings) and the constants (numpy arrays).  :func:`instantiate` turns that triple into an
:class:`Executable` on a backend without compiling, so preparation from cache is just ``instantiate``.

Storage keys in the plan: ``o<N>`` operand N (after alias resolution), ``c<N>`` lowering-made
constant N, ``s<N>`` scratch tensor N, ``st`` the status word.  Regions: "arena" (planned temporaries
and scratch, with reuse), "const" (packed constants), "input" / "output" (one device buffer each),
"status" (one int32, only when some kernel can fail: see ``LoweringContext.status``).

Status word: a kernel that detects bad data at execution (e.g. an out-of-range EMBEDDING_LOOKUP
index) stores its non-zero code there; ``plan["status"]["messages"]`` maps each code (as a string)
to a message naming the operation.  The word is zeroed when instantiated; after each run
:meth:`Executable.check_status` reads it (one 4-byte download, only for plans that have one),
re-zeroes it if it was set and raises GENERAL_FAILURE with that message.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import failure
from ..graph import Graph, build_graph
from ..hal.model import Model
from ..hal.types import OPERAND_TYPE_INFO
from ..ops.catalog import lookup
from .codegen import assign_names, generate
from .elementwise_chain import ElementwiseChain, fuse_elementwise_chains, lower_elementwise_chain
from .fusion import fold_constants, fuse_activations
from .ir import LoweredModel, TensorId
from .lowering import LoweringContext
from .support import check_supported
from .planner import Interval, pack, plan_arena

PLAN_VERSION = 1


@dataclass
class CompiledModel:
    binary: bytes
    plan: dict
    constants: list[np.ndarray]
    source: str = ""


def operand_nbytes(graph: Graph, index: int) -> int:
    t = graph.tensors[index]
    info = OPERAND_TYPE_INFO[t.type]
    if not info.is_tensor:
        return info.byte_size
    shape = t.dims()
    return int(math.prod(shape)) * info.byte_size


def prepare_graph(model: Model, input_shapes: Sequence[tuple[int, ...]] | None = None,
                  fuse: bool = True, fold: bool = True, check_support: bool = False,
                  fuse_chains: bool = True) -> Graph:
    """build_graph + graph rewrites (the graph the kernels are generated from).

    ``check_support``: raise GENERAL_FAILURE unless every operation's lowering supports it with these
    shapes (for specialisations of dynamic-shape models, whose support was decided on a
    representative signature)."""
    graph = build_graph(model, model.main, list(input_shapes) if input_shapes is not None else None)
    if fold:
        fold_constants(graph)
    if fuse:
        fuse_activations(graph)
    if check_support:
        check_supported(graph)
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


def build_plan(graph: Graph, lowered: LoweredModel, alignment: int = 256) -> tuple[dict, list[np.ndarray]]:
    """The memory plan and launch plan (msgpack-able) plus the constants to upload."""
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

    storage: dict[str, dict] = {}
    constants: list[np.ndarray] = []
    const_keys: list[str] = []

    def region_of(key: str) -> dict:
        if key in storage:
            return storage[key]
        kind, idx = key[0], (int(key[1:]) if key[1:].isdigit() else -1)
        if kind == "c":
            arr = lowered.constants[idx]
            entry = {"region": "const", "nbytes": int(arr.nbytes)}
            constants.append(np.ascontiguousarray(arr))
            const_keys.append(key)
        elif key == "st":
            entry = {"region": "status", "nbytes": 4}
        elif kind == "s":
            s = lowered.scratch[idx]
            entry = {"region": "arena", "nbytes": int(s.count * np.dtype(s.dtype).itemsize)}
        else:
            t = graph.tensors[idx]
            group = members.get(idx, {idx})
            if t.value is not None and OPERAND_TYPE_INFO[t.type].is_tensor:
                arr = np.ascontiguousarray(np.asarray(t.value, dtype=t.dtype))
                if arr.dtype == np.bool_:
                    arr = arr.astype(np.uint8)
                entry = {"region": "const", "nbytes": int(arr.nbytes)}
                constants.append(arr)
                const_keys.append(key)
            elif idx in model_inputs:
                entry = {"region": "input", "nbytes": operand_nbytes(graph, idx), "index": model_inputs.index(idx)}
            elif group & set(model_outputs):
                entry = {"region": "output", "nbytes": operand_nbytes(graph, idx)}
            else:
                entry = {"region": "arena", "nbytes": operand_nbytes(graph, idx)}
        storage[key] = entry
        return entry

    names = assign_names(lowered.kernels)
    kernels = []
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for pos, k in enumerate(lowered.kernels):
        args = [key_of(t) for t in (*k.inputs, *k.outputs)]
        for a in args:
            region_of(a)
            first.setdefault(a, pos)
            last[a] = pos
        kernels.append({"name": k.name, "args": args, "global": list(k.global_size),
                        "local": None if k.local_size is None else list(k.local_size), "node": k.node,
                        "template": k.template})
    inputs = []
    for i, idx in enumerate(model_inputs):
        key = f"o{root(idx)}"
        entry = region_of(key)
        t = graph.tensors[idx]
        inputs.append({"key": key, "nbytes": operand_nbytes(graph, idx),
                       "shape": list(t.shape) if OPERAND_TYPE_INFO[t.type].is_tensor else [],
                       "direct": entry["region"] == "input" and entry.get("index") == i})
    outputs = []
    for idx in model_outputs:
        key = f"o{root(idx)}"
        region_of(key)
        t = graph.tensors[idx]
        outputs.append({"key": key, "nbytes": operand_nbytes(graph, idx),
                        "shape": list(t.dims()) if OPERAND_TYPE_INFO[t.type].is_tensor else []})
    # arena
    intervals = [Interval(k, e["nbytes"], first.get(k, 0), last.get(k, 0))
                 for k, e in storage.items() if e["region"] == "arena"]
    mplan = plan_arena(intervals, alignment)
    for k, off in mplan.offsets.items():
        storage[k]["offset"] = off
    const_offsets, const_bytes = pack([(k, storage[k]["nbytes"]) for k in const_keys], alignment)
    for k, off in const_offsets.items():
        storage[k]["offset"] = off
    n_inputs = sum(1 for e in storage.values() if e["region"] == "input")
    n_outputs = sum(1 for e in storage.values() if e["region"] in ("output", "status"))
    plan = {
        "version": PLAN_VERSION,
        "kernel_names": names,
        "kernels": kernels,
        "storage": storage,
        "const_keys": const_keys,
        "const_bytes": const_bytes,
        "arena_bytes": mplan.arena_bytes,
        "naive_arena_bytes": mplan.naive_bytes,
        "inputs": inputs,
        "outputs": outputs,
        "num_buffers": (1 if mplan.arena_bytes else 0) + (1 if const_bytes else 0) + n_inputs + n_outputs,
        "input_shapes": [i["shape"] for i in inputs],
        "status": ({"key": "st", "messages": {str(c): m for c, m in sorted(lowered.status_messages.items())}}
                   if "st" in storage else None),
    }
    return plan, constants


def compile_model(model: Model, backend, input_shapes: Sequence[tuple[int, ...]] | None = None,
                  check_support: bool = False) -> CompiledModel:
    """Everything expensive of preparation, for ``backend`` (its dialect and compiler)."""
    graph = prepare_graph(model, input_shapes, check_support=check_support)
    lowered = lower(graph)
    plan, constants = build_plan(graph, lowered, max(256, getattr(backend, "alignment", 256)))
    source = generate(lowered.kernels, backend.dialect)
    binary = backend.compile(source) if plan["kernels"] else b""
    return CompiledModel(binary, plan, constants, source)


@dataclass
class Executable:
    """A compiled model instantiated on a backend: device buffers, bound launches."""

    backend: Any
    plan: dict
    launches: list = field(default_factory=list)
    views: dict = field(default_factory=dict)        # storage key -> DeviceBuffer
    buffers: list = field(default_factory=list)      # the allocations (arena, const, inputs, outputs)
    input_buffers: list = field(default_factory=list)   # per model input: DeviceBuffer or None
    output_buffers: list = field(default_factory=list)  # per model output: DeviceBuffer to read from
    status_buffer: Any = None                          # the status word (plans whose kernels can fail)

    def run(self, timed: bool = False) -> int | None:
        """Launch every kernel and wait; the device time in ns with ``timed``."""
        return self.backend.launch_all(self.launches, timed)

    def enqueue(self, timed: bool = False):
        """Launch every kernel without waiting; timing marks for ``backend.elapsed_ns`` after finish."""
        return self.backend.enqueue_all(self.launches, timed)

    def enqueue_status_read(self) -> np.ndarray | None:
        """Enqueue the read of the status word (None when no kernel can fail); valid after finish."""
        if self.status_buffer is None:
            return None
        return self.backend.download(self.status_buffer, np.zeros(1, dtype=np.int32), blocking=False)

    def check_status(self, word: np.ndarray | None = None) -> None:
        """After the run: GENERAL_FAILURE (naming the operation) if a kernel reported bad data.
        ``word`` is what :meth:`enqueue_status_read` returned (read now when not given)."""
        if self.status_buffer is None:
            return
        if word is None:
            word = self.backend.download(self.status_buffer, np.zeros(1, dtype=np.int32))
        code = int(word[0])
        if code:
            self.backend.upload(self.status_buffer, np.zeros(1, dtype=np.int32))
            message = self.plan["status"]["messages"].get(str(code), f"kernel status code {code}")
            raise failure(f"execution failed: {message}")


def instantiate(backend, binary: bytes, plan: dict, constants: Sequence[np.ndarray]) -> Executable:
    """Load ``binary``, allocate the planned buffers, upload constants, bind every launch's arguments."""
    if plan.get("version") != PLAN_VERSION:
        raise failure(f"unsupported plan version {plan.get('version')!r}")
    exe = Executable(backend, plan)
    storage = plan["storage"]
    arena = backend.alloc(plan["arena_bytes"]) if plan["arena_bytes"] else None
    const = backend.alloc(plan["const_bytes"]) if plan["const_bytes"] else None
    exe.buffers.extend(b for b in (arena, const) if b is not None)
    if const is not None:
        packed = np.zeros(plan["const_bytes"], dtype=np.uint8)
        for key, arr in zip(plan["const_keys"], constants):
            raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            off = storage[key]["offset"]
            packed[off:off + raw.size] = raw
        backend.upload(const, packed)
    for key, e in storage.items():
        region = e["region"]
        if region == "arena":
            exe.views[key] = backend.view(arena, e["offset"], e["nbytes"])
        elif region == "const":
            exe.views[key] = backend.view(const, e["offset"], e["nbytes"])
        else:
            buf = backend.alloc(e["nbytes"])
            exe.buffers.append(buf)
            exe.views[key] = buf
    exe.input_buffers = [exe.views[i["key"]] if i["direct"] else None for i in plan["inputs"]]
    exe.output_buffers = [exe.views[o["key"]] for o in plan["outputs"]]
    if plan.get("status"):
        exe.status_buffer = exe.views[plan["status"]["key"]]
        backend.upload(exe.status_buffer, np.zeros(1, dtype=np.int32))
    if plan["kernels"]:
        program = backend.load(binary, plan["kernel_names"])
        exe.program = program
        for k in plan["kernels"]:
            exe.launches.append(backend.make_launch(program, k["name"], [exe.views[a] for a in k["args"]],
                                                    k["global"], k["local"]))
    return exe
