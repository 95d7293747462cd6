"""Validation of models and requests (interface.md §9).

:func:`validate_model` applies every rule of §9.1 (model level, referenced subgraphs, operands,
operations with the signatures registered in :mod:`gpu_driver.ops`, IF/WHILE, graph order, feature
level) and then runs each operation's definition through :func:`gpu_driver.graph.build_graph` where
shapes are known.  :func:`validate_request` applies §9.2 against a validated model and returns the
combined argument shapes.  Every violation raises ``DriverError(INVALID_ARGUMENT)`` whose message
names the operand / operation / argument and the rule; malformed Python objects (wrong types,
None, negative numbers) are violations too, never a TypeError.

Experimental operation codes (feature level ``hal.types.FEATURE_LEVEL_EXPERIMENTAL``, operations.md
App. A) exist only when the environment variable ``GPU_DRIVER_EXPERIMENTAL=1`` is set; it is read
at every model validation (:func:`experimental_enabled`), off by default.  With it off a model
that uses one is refused (INVALID_ARGUMENT naming the switch); with it on the operation is
validated by its signature like any other, and never raises the feature level a model needs.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

from .errors import DriverError, invalid
from .hal.model import DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation, Request, RequestArgument, Subgraph, \
    SymmPerChannelQuantParams
from .graph import build_graph
from .memory import Memory
from .ops.catalog import implemented_feature_level, lookup
from .ops.signature import OpContext, check_signature
from .hal.types import FEATURE_LEVEL_EXPERIMENTAL, FLT_MAX, OPERAND_TYPE_INFO, UINT32_MAX, OperandLifeTime, \
    OperandType, OperationType, operation_feature_level

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
_EXTENSION_NAME = re.compile(r"^[a-z0-9._]*\.[a-z0-9._]*$")
_CONSTANT_LIFETIMES = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)
_OEM_TYPES = (OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
#: the switch that makes experimental operation codes exist (see the module docstring)
EXPERIMENTAL_ENV = "GPU_DRIVER_EXPERIMENTAL"


def experimental_enabled() -> bool:
    """Whether experimental operation codes exist: ``GPU_DRIVER_EXPERIMENTAL=1`` in the environment now."""
    return os.environ.get(EXPERIMENTAL_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class RequestShapes:
    """Combined shapes of a validated request: inputs fully specified (None = omitted input);
    outputs may hold 0 entries (unknown) or be None (unknown rank)."""

    inputs: list[tuple[int, ...] | None]
    outputs: list[tuple[int, ...] | None]


# ---- small checks on Python values -------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _int(v, what: str, lo: int = 0, hi: int = UINT32_MAX) -> int:
    if not _is_int(v):
        raise invalid(f"{what} must be an integer, got {v!r}")
    v = int(v)
    if not lo <= v <= hi:
        raise invalid(f"{what} = {v} is out of range [{lo}, {hi}]")
    return v


def _int_list(v, what: str) -> list[int]:
    if not isinstance(v, (list, tuple)):
        raise invalid(f"{what} must be a list of integers, got {type(v).__name__}")
    return [_int(x, f"{what}[{i}]") for i, x in enumerate(v)]


def _list(v, what: str) -> list:
    if not isinstance(v, (list, tuple)):
        raise invalid(f"{what} must be a list, got {type(v).__name__}")
    return list(v)


def _float32(v, what: str) -> float:
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
        raise invalid(f"{what} must be a number, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or abs(f) > FLT_MAX:
        raise invalid(f"{what} = {v!r} is not a finite float32")
    return f


def _enum(enum_type, v, what: str):
    if isinstance(v, (bool, np.bool_)) or not _is_int(v):
        raise invalid(f"{what} must be an integer code, got {v!r}")
    try:
        return enum_type(int(v))
    except ValueError:
        return None


def byte_size(operand_type: OperandType, dims) -> int:
    """Bytes of an operand of known dimensions (0 entries count as 0 → size 0)."""
    info = OPERAND_TYPE_INFO[operand_type]
    if not info.is_tensor:
        return info.byte_size
    n = info.byte_size
    for d in dims:
        n *= int(d)
    return n


def combine_dims(model_dims, request_dims, what: str) -> list[int]:
    """operands.md §2 combination of a request argument's dimensions with the model operand's: same
    rank if both known; per axis the request may differ from the model only where the model's entry
    is 0 (unknown) -- a 0 in the request where the model fixes the axis is an error too (AOSP
    validateRequestArguments)."""
    if not model_dims:
        return list(request_dims)
    if not request_dims:
        return list(model_dims)
    if len(model_dims) != len(request_dims):
        raise invalid(f"{what}: rank {len(request_dims)} differs from the model's rank {len(model_dims)}")
    out = []
    for axis, (m, r) in enumerate(zip(model_dims, request_dims)):
        if m and m != r:
            if r == 0:
                raise invalid(f"{what}: dimension {axis} is 0 (unspecified) but the model specifies {m}; "
                              "a request may only leave unknown model dimensions unspecified")
            raise invalid(f"{what}: dimension {axis} is {r} but the model specifies {m}")
        out.append(m or r)
    return out


def _memory_size(pool, what: str) -> int:
    if not isinstance(pool, Memory):
        raise invalid(f"{what} must be a gpu_driver.memory.Memory, got {type(pool).__name__}")
    try:
        size = pool.size
    except Exception as exc:  # a closed or broken pool
        raise invalid(f"{what}: cannot read its size ({exc})") from None
    if not _is_int(size) or size <= 0:
        raise invalid(f"{what} has size {size!r}; a memory pool must have size > 0")
    return int(size)


# ---- model ---------------------------------------------------------------------------------------------

class _ModelValidator:
    def __init__(self, model: Model, feature_level: int):
        self.model = model
        self.feature_level = feature_level
        self.version = 1
        self.values_size = 0
        self.pool_sizes: list[int] = []
        self.referenced: list[Subgraph] = []

    def need(self, fl: int, why: str) -> None:
        if fl > self.feature_level:
            raise invalid(f"{why} needs feature level {fl}, above this driver's {self.feature_level}")
        self.version = max(self.version, fl)

    # -- model level ---------------------------------------------------------------------------------
    def run(self) -> None:
        m = self.model
        if not isinstance(m.operand_values, (bytes, bytearray, memoryview)):
            raise invalid(f"operand_values must be bytes, got {type(m.operand_values).__name__}")
        self.values_size = memoryview(m.operand_values).nbytes
        pools = _list(m.pools, "pools")
        self.pool_sizes = [_memory_size(p, f"pool {i}") for i, p in enumerate(pools)]
        if not isinstance(m.relax_computation_float32_to_float16, (bool, np.bool_)):
            raise invalid("relax_computation_float32_to_float16 must be a bool")
        self._check_extension_prefixes(_list(m.extension_name_to_prefix, "extension_name_to_prefix"))
        if not isinstance(m.main, Subgraph):
            raise invalid(f"main must be a Subgraph, got {type(m.main).__name__}")
        self.referenced = _list(m.referenced, "referenced")
        for i, sg in enumerate(self.referenced):
            if not isinstance(sg, Subgraph):
                raise invalid(f"referenced subgraph {i} must be a Subgraph, got {type(sg).__name__}")
        if self.referenced:
            self.need(4, "referenced subgraphs")
        # structural shape of every subgraph first (lists, operand records), then references
        names = ["main"] + [f"referenced subgraph {i}" for i in range(len(self.referenced))]
        graphs = [m.main, *self.referenced]
        for name, sg in zip(names, graphs):
            self._check_containers(sg, name)
        self._check_references(graphs, names)
        for name, sg in zip(names, graphs):  # operands first: IF/WHILE checks read other subgraphs'
            for i, o in enumerate(sg.operands):
                self._check_operand(o, f"{name}: operand {i}")
        for name, sg in zip(names, graphs):
            self._check_subgraph(sg, name)

    def _check_extension_prefixes(self, entries: list) -> None:
        names, prefixes = set(), set()
        for i, e in enumerate(entries):
            if not isinstance(e, ExtensionNameAndPrefix):
                raise invalid(f"extension_name_to_prefix[{i}] must be an ExtensionNameAndPrefix")
            if not isinstance(e.name, str) or not _EXTENSION_NAME.match(e.name):
                raise invalid(f"extension_name_to_prefix[{i}]: invalid extension name {e.name!r} "
                              "(lowercase letters, digits, '.', '_', at least one '.')")
            prefix = _int(e.prefix, f"extension_name_to_prefix[{i}].prefix", 0, 0xFFFF)
            if e.name in names:
                raise invalid(f"extension_name_to_prefix: duplicate name {e.name!r}")
            if prefix in prefixes:
                raise invalid(f"extension_name_to_prefix: duplicate prefix {prefix}")
            names.add(e.name)
            prefixes.add(prefix)
        if entries:
            self.need(3, "extension_name_to_prefix")

    def _check_containers(self, sg: Subgraph, name: str) -> None:
        operands = _list(sg.operands, f"{name}: operands")
        operations = _list(sg.operations, f"{name}: operations")
        if not operands:
            raise invalid(f"{name}: a subgraph needs at least one operand")
        if not operations:
            raise invalid(f"{name}: a subgraph needs at least one operation")
        for i, o in enumerate(operands):
            if not isinstance(o, Operand):
                raise invalid(f"{name}: operand {i} must be an Operand, got {type(o).__name__}")
            if not isinstance(o.location, DataLocation):
                raise invalid(f"{name}: operand {i}: location must be a DataLocation")
        for i, op in enumerate(operations):
            if not isinstance(op, Operation):
                raise invalid(f"{name}: operation {i} must be an Operation, got {type(op).__name__}")
        _int_list(sg.input_indexes, f"{name}: input_indexes")
        _int_list(sg.output_indexes, f"{name}: output_indexes")

    def _check_references(self, graphs: list[Subgraph], names: list[str]) -> None:
        """SUBGRAPH operands point into `referenced`; no cycles; every referenced subgraph is used."""
        n = len(self.referenced)
        edges: list[list[int]] = []
        for name, sg in zip(names, graphs):
            out = []
            for i, o in enumerate(sg.operands):
                is_type = _is_int(o.type) and int(o.type) == OperandType.SUBGRAPH
                is_life = _is_int(o.lifetime) and int(o.lifetime) == OperandLifeTime.SUBGRAPH
                if is_type != is_life:
                    raise invalid(f"{name}: operand {i}: type SUBGRAPH and lifetime SUBGRAPH must go together")
                if is_life:
                    off = _int(o.location.offset, f"{name}: operand {i}: location.offset")
                    if off >= n:
                        raise invalid(f"{name}: operand {i}: SUBGRAPH reference {off} out of range "
                                      f"({n} referenced subgraphs)")
                    out.append(off)
            edges.append(out)
        # cycles among referenced subgraphs (graph index k+1 = referenced k)
        state = [0] * n  # 0 new, 1 on path, 2 done
        for start in range(n):
            if state[start]:
                continue
            stack = [(start, iter(edges[start + 1]))]
            state[start] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[node] = 2
                    stack.pop()
                elif state[nxt] == 1:
                    raise invalid(f"referenced subgraph {nxt}: circular subgraph reference")
                elif state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(edges[nxt + 1])))
        reached, todo = set(), list(edges[0])
        while todo:
            k = todo.pop()
            if k not in reached:
                reached.add(k)
                todo.extend(edges[k + 1])
        unused = sorted(set(range(n)) - reached)
        if unused:
            raise invalid(f"referenced subgraph {unused[0]} is not used by the model")

    # -- operands ------------------------------------------------------------------------------------
    def _check_operand(self, o: Operand, what: str) -> None:
        t = _enum(OperandType, o.type, f"{what}: type")
        if t is None:
            if _is_int(o.type) and int(o.type) >= 65536:
                raise invalid(f"{what}: extension operand type {int(o.type)} is not supported (no extensions)")
            raise invalid(f"{what}: unknown operand type {o.type!r}")
        info = OPERAND_TYPE_INFO[t]
        self.need(info.feature_level, f"{what}: type {t.name}")
        life = _enum(OperandLifeTime, o.lifetime, f"{what}: lifetime")
        if life is None or life == OperandLifeTime.POINTER:
            raise invalid(f"{what}: invalid lifetime {o.lifetime!r}")
        dims = _int_list(o.dimensions, f"{what}: dimensions")
        if not info.is_tensor:
            if dims:
                raise invalid(f"{what}: scalar type {t.name} must have no dimensions, got {dims}")
        else:
            if not dims and t not in _OEM_TYPES:
                self.need(3, f"{what}: unknown rank")
            size = info.byte_size
            for d in dims:
                if d:
                    size *= d
                    if size > UINT32_MAX:
                        raise invalid(f"{what}: byte size of dimensions {dims} overflows uint32")
            if life in _CONSTANT_LIFETIMES and (not dims or 0 in dims):
                raise invalid(f"{what}: constant tensor must be fully specified, got dimensions {dims}")
        self._check_quant(o, t, dims, what)
        self._check_location(o, t, life, dims, what)

    def _check_quant(self, o: Operand, t: OperandType, dims: list[int], what: str) -> None:
        scale = _float32(o.scale, f"{what}: scale")
        zp = _int(o.zero_point, f"{what}: zeroPoint", INT32_MIN, INT32_MAX)
        if t in _OEM_TYPES:
            return  # not validated (operands.md §1)
        if t == OperandType.TENSOR_INT32:
            if scale < 0:
                raise invalid(f"{what}: TENSOR_INT32 scale must be >= 0, got {scale}")
        elif OPERAND_TYPE_INFO[t].quant_range is not None and t != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            if not scale > 0:
                raise invalid(f"{what}: {t.name} scale must be > 0, got {scale}")
        elif scale != 0:
            raise invalid(f"{what}: {t.name} scale must be 0, got {scale}")
        zp_range = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
                    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535)}.get(t, (0, 0))
        if not zp_range[0] <= zp <= zp_range[1]:
            raise invalid(f"{what}: {t.name} zeroPoint {zp} is outside [{zp_range[0]}, {zp_range[1]}]")
        extra = o.extra_params
        if t == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            if not isinstance(extra, SymmPerChannelQuantParams):
                raise invalid(f"{what}: TENSOR_QUANT8_SYMM_PER_CHANNEL needs SymmPerChannelQuantParams")
            cd = _int(extra.channel_dim, f"{what}: channelDim")
            if cd >= len(dims):
                raise invalid(f"{what}: per-channel channelDim {cd} must be < rank {len(dims)}")
            if dims[cd] == 0:
                raise invalid(f"{what}: per-channel dimension {cd} must be known (not 0)")
            scales = _list(extra.scales, f"{what}: per-channel scales")
            if len(scales) != dims[cd]:
                raise invalid(f"{what}: {len(scales)} per-channel scales for channel dimension of size {dims[cd]}")
            for i, s in enumerate(scales):
                if not _float32(s, f"{what}: per-channel scales[{i}]") > 0:
                    raise invalid(f"{what}: per-channel scales[{i}] = {s} must be > 0")
        elif extra is not None:
            raise invalid(f"{what}: type {t.name} must not carry extraParams")

    def _check_location(self, o: Operand, t: OperandType, life: OperandLifeTime, dims: list[int], what: str):
        loc = o.location
        pool = _int(loc.pool_index, f"{what}: location.pool_index")
        off = _int(loc.offset, f"{what}: location.offset")
        length = _int(loc.length, f"{what}: location.length")
        padding = _int(loc.padding, f"{what}: location.padding")
        if padding != 0:
            raise invalid(f"{what}: location.padding must be 0 in a model, got {padding}")
        if life == OperandLifeTime.CONSTANT_COPY:
            if pool != 0:
                raise invalid(f"{what}: CONSTANT_COPY with non-zero pool_index {pool}")
            if off + length > self.values_size:
                raise invalid(f"{what}: CONSTANT_COPY location [{off}, {off + length}) is outside "
                              f"operand_values ({self.values_size} bytes)")
        elif life == OperandLifeTime.CONSTANT_REFERENCE:
            if pool >= len(self.pool_sizes):
                raise invalid(f"{what}: CONSTANT_REFERENCE pool_index {pool} out of range "
                              f"({len(self.pool_sizes)} pools)")
            if off + length > self.pool_sizes[pool]:
                raise invalid(f"{what}: CONSTANT_REFERENCE location [{off}, {off + length}) is outside "
                              f"pool {pool} ({self.pool_sizes[pool]} bytes)")
        elif life == OperandLifeTime.SUBGRAPH:
            if pool != 0 or length != 0:
                raise invalid(f"{what}: SUBGRAPH location must have pool_index 0 and length 0")
            return
        elif pool or off or length:
            raise invalid(f"{what}: {life.name} operand must have an all-zero location, got "
                          f"(pool_index={pool}, offset={off}, length={length})")
        if life in _CONSTANT_LIFETIMES and t not in _OEM_TYPES:
            expected = byte_size(t, dims)
            if length != expected:
                raise invalid(f"{what}: constant location.length {length} != byte size {expected} "
                              f"of {t.name} {dims}")

    # -- subgraph ------------------------------------------------------------------------------------
    def _check_subgraph(self, sg: Subgraph, name: str) -> None:
        operands = list(sg.operands)
        n = len(operands)
        for k, op in enumerate(sg.operations):
            self._check_operation(sg, k, op, name)
        # inputs / outputs lists
        listed = {}
        for attr, life in (("input_indexes", OperandLifeTime.SUBGRAPH_INPUT),
                           ("output_indexes", OperandLifeTime.SUBGRAPH_OUTPUT)):
            idx = list(getattr(sg, attr))
            for i in idx:
                if i >= n:
                    raise invalid(f"{name}: {attr} entry {i} out of range ({n} operands)")
                if operands[i].lifetime != life:
                    raise invalid(f"{name}: operand {i} is listed in {attr} but has lifetime "
                                  f"{OperandLifeTime(operands[i].lifetime).name}")
            if len(set(idx)) != len(idx):
                raise invalid(f"{name}: {attr} lists an operand more than once: {idx}")
            listed[life] = set(idx)
        for i, o in enumerate(operands):
            if o.lifetime in listed and i not in listed[o.lifetime]:
                raise invalid(f"{name}: operand {i} has lifetime {OperandLifeTime(o.lifetime).name} "
                              "but is not listed in the subgraph's input/output indexes")
        self._check_order(sg, name)

    def _check_order(self, sg: Subgraph, name: str) -> None:
        known = [o.lifetime not in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT)
                 for o in sg.operands]
        for k, op in enumerate(sg.operations):
            for j, i in enumerate(op.inputs):
                if not known[i]:
                    raise invalid(f"{name}: operation {k} input {j} (operand {i}) is read before it is written "
                                  "(operations must be in execution order, no cycles)")
            for j, i in enumerate(op.outputs):
                if known[i]:
                    life = OperandLifeTime(sg.operands[i].lifetime)
                    if life in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT):
                        raise invalid(f"{name}: operation {k} output {j} (operand {i}) is written twice")
                    raise invalid(f"{name}: operation {k} output {j} (operand {i}) has lifetime {life.name}; "
                                  "only TEMPORARY_VARIABLE / SUBGRAPH_OUTPUT operands may be written")
                known[i] = True
        for i, k in enumerate(known):
            if not k:
                raise invalid(f"{name}: operand {i} is never written by any operation")

    # -- operations ----------------------------------------------------------------------------------
    def _check_operation(self, sg: Subgraph, k: int, op: Operation, name: str) -> None:
        what = f"{name}: operation {k}"
        t = _enum(OperationType, op.type, f"{what}: type")
        if t is None:
            if _is_int(op.type) and int(op.type) >= 65536:
                raise invalid(f"{what}: extension operation type {int(op.type)} is not supported (no extensions)")
            raise invalid(f"{what}: unknown operation type {op.type!r}")
        n = len(sg.operands)
        for attr in ("inputs", "outputs"):
            for j, i in enumerate(_int_list(getattr(op, attr), f"{what}: {attr}")):
                if i >= n:
                    raise invalid(f"{what} ({t.name}): {attr[:-1]} {j} = operand {i} out of range ({n} operands)")
        fl = operation_feature_level(t)
        if t == OperationType.OEM_OPERATION:
            self.need(1, what)
            return
        if fl == FEATURE_LEVEL_EXPERIMENTAL:
            if not experimental_enabled():
                raise invalid(f"{what}: {t.name} (code {int(t)}) is an experimental operation; set "
                              f"{EXPERIMENTAL_ENV}=1 to enable experimental operations")
        else:
            self.need(fl, f"{what} ({t.name})")
        entry = lookup(t)
        if entry is not None:
            ctx = OpContext(k, op, sg.operands)
            try:
                version = check_signature(entry.signature, ctx)
            except DriverError as err:
                raise invalid(f"{name}: {err.message}") from None
            self.need(version, f"{what} ({t.name}) as configured")
        elif t in _CONTROL_FLOW:
            self._check_control_flow(sg, k, op, t, name)

    def _check_control_flow(self, sg: Subgraph, k: int, op: Operation, t: OperationType, name: str) -> None:
        what = f"{name}: operation {k} ({t.name})"
        ins = [sg.operands[i] for i in op.inputs]
        outs = [sg.operands[i] for i in op.outputs]
        if len(ins) < 3 or len(outs) < 1:
            raise invalid(f"{what}: needs at least 3 inputs and 1 output, got {len(ins)} and {len(outs)}")
        for j, o in enumerate(ins):
            if o.lifetime == OperandLifeTime.NO_VALUE:
                raise invalid(f"{what}: input {j} (operand {op.inputs[j]}) is NO_VALUE but this input cannot be omitted")

        def subgraph_of(j: int) -> Subgraph:
            o = ins[j]
            if o.type != OperandType.SUBGRAPH:
                raise invalid(f"{what}: input {j} (operand {op.inputs[j]}) must be a SUBGRAPH reference, "
                              f"got {OperandType(o.type).name}")
            return self.referenced[o.location.offset]

        def io(s: Subgraph, attr: str) -> list[Operand]:
            return [s.operands[i] for i in getattr(s, attr) if i < len(s.operands)]

        if t == OperationType.IF:
            self._check_condition(ins[0], f"{what}: condition input 0")
            for j, label in ((1, "then"), (2, "else")):
                branch = subgraph_of(j)
                b_in, b_out = io(branch, "input_indexes"), io(branch, "output_indexes")
                if len(b_in) != len(ins) - 3 or len(b_out) != len(outs):
                    raise invalid(f"{what}: {label} branch has {len(b_in)} inputs / {len(b_out)} outputs, "
                                  f"the operation passes {len(ins) - 3} / expects {len(outs)}")
                for i, (a, b) in enumerate(zip(b_in, ins[3:])):
                    _compatible(a, b, f"{what}: {label} branch input {i} vs operation input {i + 3}")
                for i, (a, b) in enumerate(zip(b_out, outs)):
                    _compatible(a, b, f"{what}: {label} branch output {i} vs operation output {i}")
            return
        cond, body = subgraph_of(0), subgraph_of(1)
        values = ins[2:]
        c_in, c_out = io(cond, "input_indexes"), io(cond, "output_indexes")
        b_in, b_out = io(body, "input_indexes"), io(body, "output_indexes")
        m = len(outs)
        if len(c_in) != len(values) or len(c_out) != 1:
            raise invalid(f"{what}: condition subgraph has {len(c_in)} inputs / {len(c_out)} outputs, "
                          f"expected {len(values)} / 1")
        self._check_condition(c_out[0], f"{what}: condition subgraph output")
        if len(b_in) != len(values) or len(b_out) < m or len(b_in) < len(b_out):
            raise invalid(f"{what}: body subgraph has {len(b_in)} inputs / {len(b_out)} outputs; needs "
                          f"{len(values)} inputs and between {m} and {len(values)} outputs")
        for i, v in enumerate(values):
            _compatible(c_in[i], v, f"{what}: condition input {i} vs operation input {i + 2}")
            _compatible(b_in[i], v, f"{what}: body input {i} vs operation input {i + 2}")
        for i in range(m):
            _compatible(b_out[i], outs[i], f"{what}: body output {i} vs operation output {i}")
        for i in range(len(b_out)):
            _compatible(b_in[i], b_out[i], f"{what}: body input {i} vs body output {i}")

    @staticmethod
    def _check_condition(o: Operand, what: str) -> None:
        if o.type != OperandType.TENSOR_BOOL8 or list(o.dimensions) != [1]:
            raise invalid(f"{what} must be TENSOR_BOOL8 of dimensions [1], got "
                          f"{OperandType(o.type).name} {list(o.dimensions)}")


def _compatible(a: Operand, b: Operand, what: str) -> None:
    """IF/WHILE operand compatibility: type, scale, zp, extraParams, rank and known dims."""
    if a.type != b.type:
        raise invalid(f"{what}: types differ ({OperandType(a.type).name} vs {OperandType(b.type).name})")
    if a.dimensions and b.dimensions:
        if len(a.dimensions) != len(b.dimensions):
            raise invalid(f"{what}: ranks differ ({list(a.dimensions)} vs {list(b.dimensions)})")
        for x, y in zip(a.dimensions, b.dimensions):
            if x and y and x != y:
                raise invalid(f"{what}: dimensions differ ({list(a.dimensions)} vs {list(b.dimensions)})")
    if float(a.scale) != float(b.scale) or a.zero_point != b.zero_point:
        raise invalid(f"{what}: scale/zeroPoint differ (({a.scale}, {a.zero_point}) vs ({b.scale}, {b.zero_point}))")
    if a.extra_params != b.extra_params:
        raise invalid(f"{what}: extraParams differ")


def _run_definitions(model: Model, subgraph: Subgraph, name: str) -> None:
    try:
        build_graph(model, subgraph)
    except DriverError as err:
        raise DriverError(err.status, f"{name}: {err.message}", err.output_shapes) from None


def validate_model(model: Model, feature_level: int | None = None) -> None:
    """Apply interface.md §9.1 to ``model`` for ``feature_level`` (default: the driver's,
    ops.catalog.implemented_feature_level); raise DriverError(INVALID_ARGUMENT) on any violation."""
    if feature_level is None:
        feature_level = implemented_feature_level()
    if not isinstance(model, Model):
        raise invalid("model must be a gpu_driver.hal.Model")
    try:
        _ModelValidator(model, feature_level).run()
    except DriverError:
        raise
    except (TypeError, ValueError, AttributeError, IndexError, KeyError, OverflowError) as exc:
        # a value of an unexpected Python type that slipped past the explicit checks
        raise invalid(f"malformed model: {type(exc).__name__}: {exc}") from None
    for name, sg in [("main", model.main)] + [(f"referenced subgraph {i}", s) for i, s in enumerate(model.referenced)]:
        _run_definitions(model, sg, name)


# ---- request -------------------------------------------------------------------------------------------

def _input_omittable(model: Model, operand_index: int) -> bool:
    """A main input may be omitted when every operation reading it allows that slot to be NO_VALUE."""
    for op in model.main.operations:
        for slot, i in enumerate(op.inputs):
            if i != operand_index:
                continue
            entry = lookup(op.type)
            if op.type in _CONTROL_FLOW or (entry is not None and slot not in entry.signature.omittable):
                return False
    return True


def validate_request(request: Request, model: Model, *, resolve_token=None,
                     allow_unspecified_outputs: bool = True) -> RequestShapes:
    """Apply interface.md §9.2 to ``request`` against the (validated) ``model``; return its shapes."""
    if not isinstance(request, Request):
        raise invalid("request must be a gpu_driver.hal.Request")
    try:
        return _validate_request(request, model, resolve_token, allow_unspecified_outputs)
    except DriverError:
        raise
    except (TypeError, ValueError, AttributeError, IndexError, KeyError, OverflowError) as exc:
        raise invalid(f"malformed request: {type(exc).__name__}: {exc}") from None


def _validate_request(request: Request, model: Model, resolve_token, allow_unspecified_outputs: bool):
    main = model.main
    pools = _list(request.pools, "request pools")
    sizes: list[int | None] = []  # None = unknown size (memory-domain token)
    for i, p in enumerate(pools):
        if _is_int(p):
            if int(p) <= 0:
                raise invalid(f"request pool {i}: memory-domain token must be > 0, got {p}")
            if resolve_token is None:
                raise invalid(f"request pool {i}: memory-domain tokens are not accepted here")
            resolve_token(int(p))  # raises DriverError for an unknown token
            sizes.append(None)
        elif isinstance(p, Memory):
            sizes.append(_memory_size(p, f"request pool {i}"))
        else:
            raise invalid(f"request pool {i} must be a Memory or a token > 0, got {type(p).__name__}")
    inputs = _list(request.inputs, "request inputs")
    outputs = _list(request.outputs, "request outputs")
    if len(inputs) != len(main.input_indexes):
        raise invalid(f"request has {len(inputs)} inputs, the model has {len(main.input_indexes)}")
    if len(outputs) != len(main.output_indexes):
        raise invalid(f"request has {len(outputs)} outputs, the model has {len(main.output_indexes)}")
    in_shapes: list[tuple[int, ...] | None] = []
    out_shapes: list[tuple[int, ...] | None] = []
    regions: list[tuple[int, int, int, str]] = []  # (pool, start, end, what) of Memory-pool arguments
    for is_output, args, indexes, shapes in ((False, inputs, main.input_indexes, in_shapes),
                                            (True, outputs, main.output_indexes, out_shapes)):
        kind = "output" if is_output else "input"
        for n, (arg, idx) in enumerate(zip(args, indexes)):
            what = f"request {kind} {n}"
            if not isinstance(arg, RequestArgument):
                raise invalid(f"{what} must be a RequestArgument, got {type(arg).__name__}")
            if not isinstance(arg.location, DataLocation):
                raise invalid(f"{what}: location must be a DataLocation")
            if not isinstance(arg.has_no_value, (bool, np.bool_)):
                raise invalid(f"{what}: has_no_value must be a bool")
            loc = arg.location
            pool = _int(loc.pool_index, f"{what}: pool_index")
            off = _int(loc.offset, f"{what}: offset")
            length = _int(loc.length, f"{what}: length")
            padding = _int(loc.padding, f"{what}: padding")
            dims = _int_list(arg.dimensions, f"{what}: dimensions")
            operand = main.operands[idx]
            info = OPERAND_TYPE_INFO[operand.type]
            if arg.has_no_value:
                if is_output:
                    raise invalid(f"{what}: an output cannot be NO_VALUE")
                if pool or off or length or padding or dims:
                    raise invalid(f"{what}: a NO_VALUE argument must have an all-zero location and no dimensions")
                if not _input_omittable(model, idx):
                    raise invalid(f"{what}: model input operand {idx} feeds an operation input that cannot be omitted")
                shapes.append(None)
                continue
            # dimensions first (as AOSP does): a zero-sized input is reported as such, not as length 0
            if not info.is_tensor:
                if dims:
                    raise invalid(f"{what}: scalar operand {idx} ({operand.type.name}) takes no dimensions, got {dims}")
                combined: list[int] | None = []
            else:
                combined = combine_dims(list(operand.dimensions), dims, what)
            known = info.is_tensor and bool(combined) and 0 not in combined or not info.is_tensor
            if not is_output and not known:
                raise invalid(f"{what}: input shape {combined} of operand {idx} is not fully specified "
                              "(inputs must give every dimension, none 0)")
            if is_output and not known and not allow_unspecified_outputs:
                raise invalid(f"{what}: output shape {combined} of operand {idx} must be fully specified "
                              "for this execution")
            if pool >= len(sizes):
                raise invalid(f"{what}: pool_index {pool} out of range ({len(sizes)} pools)")
            size = sizes[pool]
            if size is not None:
                if off + length + padding > size:
                    raise invalid(f"{what}: [offset {off}, + length {length} + padding {padding}) exceeds "
                                  f"pool {pool} of {size} bytes")
                if length == 0:
                    raise invalid(f"{what}: length must be > 0 for a pool of known size")
            if known and length != 0 and operand.type not in _OEM_TYPES:
                expected = byte_size(operand.type, combined)
                if length != expected:
                    raise invalid(f"{what}: length {length} != byte size {expected} of "
                                  f"{operand.type.name} {combined}")
            if info.is_tensor and not combined:
                shapes.append(None)
            else:
                shapes.append(tuple(combined))
            if size is not None:
                regions.append((("memory", id(pools[pool])), off, off + length, f"{what} (pool {pool})", is_output))
            else:  # a memory-domain buffer is used whole
                regions.append((("token", int(pools[pool])), 0, 1, f"{what} (pool {pool})", is_output))
    regions.extend(_constant_regions(model))
    _check_overlaps(regions)
    return RequestShapes(in_shapes, out_shapes)


def _constant_regions(model: Model) -> list:
    """CONSTANT_REFERENCE data of the model, which request outputs must not overwrite."""
    out = []
    for sg in [model.main, *model.referenced]:
        for i, o in enumerate(sg.operands):
            if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
                loc = o.location
                out.append((("memory", id(model.pools[loc.pool_index])), loc.offset, loc.offset + loc.length,
                            f"constant operand {i} of the model", False))
    return out


def _check_overlaps(regions: list) -> None:
    """Outputs must not overlap each other, any input, or model constant data in the same pool
    (interface.md §7.1).  ``regions`` holds (pool key, start, end, what, is_output)."""
    for i, (key, start, end, what, is_output) in enumerate(regions):
        if not is_output:
            continue
        for j, (key2, start2, end2, what2, is_output2) in enumerate(regions):
            if j == i or key2 != key or (is_output2 and j < i):
                continue
            if start < end2 and start2 < end:
                raise invalid(f"{what} overlaps {what2}")
