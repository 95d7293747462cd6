"""Operation signatures: which operand types, counts, ranks and quantization an operation accepts.

Each operation module (gpu_driver/ops/<family>.py) declares one :class:`OpSignature` per operation:
the operand type configurations (with the feature level each needs), its legal input/output
layouts as :class:`Variant` s with optional trailing input groups (operations.md App. C), omittable
inputs, rank limits, output quantization rules ("=in" and fixed) and a ``check`` for further rules.
:func:`check_signature` applies one to an operation of a structurally valid subgraph (interface.md
§9.1 rule 10) and returns the feature level the operation needs.

Type specs (resolved against the *primary* type ``T``, the type of input ``OpSignature.primary``):

``"T"``     the primary type
``"F"``     the float scalar matching T: FLOAT16 for TENSOR_FLOAT16, FLOAT32 otherwise
``"B"``     bias: TENSOR_INT32 for quantized T, T otherwise
``"W"``     filter: T, or TENSOR_QUANT8_SYMM_PER_CHANNEL when T is Q8A / Q8AS
``"FLT"``   any float tensor (TENSOR_FLOAT32 / TENSOR_FLOAT16)
an ``OperandType``: exactly that type; a frozenset of them: any of those types
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import invalid
from ..hal.abbreviations import B8, BOOL, F16, F32, I32, PC8, Q8A, Q8AS, Q8S, f16, f32, i32  # noqa: F401
from ..hal.model import Operand, Operation
from ..hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType, OperationType

_QUANT8 = (Q8A, Q8AS)


def allowed_types(spec, t: OperandType) -> frozenset[OperandType]:
    """The operand types a type spec admits for primary type ``t``."""
    if isinstance(spec, OperandType):
        return frozenset((spec,))
    if isinstance(spec, frozenset):
        return spec
    if spec == "T":
        return frozenset((t,))
    if spec == "F":
        return frozenset((f16 if t == F16 else f32,))
    if spec == "B":
        return frozenset((I32 if t in _QUANT8 else t,))
    if spec == "W":
        return frozenset((t, PC8) if t in _QUANT8 else (t,))
    if spec == "FLT":
        return frozenset((F32, F16))
    raise ValueError(f"unknown type spec {spec!r}")  # pragma: no cover - table bug


@dataclass(frozen=True)
class Variant:
    """One input/output layout of an operation.

    ``optional`` holds trailing input groups, each with the feature level it needs; a legal input
    count is ``len(inputs)`` plus the sizes of the first j groups (so a dilation *pair* is one group).
    With ``variadic`` the first input spec repeats one or more times (CONCATENATION), with
    ``variadic_last`` the last one (PACK: the axis, then the tensors); with ``variadic_outputs`` the
    one output spec repeats one or more times (SPLIT).
    """

    name: str
    inputs: tuple
    outputs: tuple
    optional: tuple = ()
    variadic: bool = False
    #: feature level this layout needs, whatever its optional groups
    feature_level: int = 1
    variadic_last: bool = False
    variadic_outputs: bool = False

    @property
    def repeats_input(self) -> bool:
        return self.variadic or self.variadic_last

    def input_counts(self) -> list[int]:
        if self.repeats_input:
            return []
        counts, n = [len(self.inputs)], len(self.inputs)
        for group, _fl in self.optional:
            n += len(group)
            counts.append(n)
        return counts

    def accepts_count(self, n_in: int, n_out: int) -> bool:
        if n_out != len(self.outputs) and not (self.variadic_outputs and n_out >= 1):
            return False
        if self.repeats_input:
            return n_in >= len(self.inputs)
        return n_in in self.input_counts()

    def output_specs(self, n_out: int) -> list:
        return [self.outputs[0]] * n_out if self.variadic_outputs else list(self.outputs)

    def input_specs(self, n_in: int) -> tuple[list, int]:
        """The spec of each of ``n_in`` inputs and the feature level the optional groups need."""
        extra = n_in - len(self.inputs) + 1
        if self.variadic:
            return [self.inputs[0]] * extra + list(self.inputs[1:]), 1
        if self.variadic_last:
            return list(self.inputs[:-1]) + [self.inputs[-1]] * extra, 1
        specs, fl = list(self.inputs), 1
        for group, group_fl in self.optional:
            if len(specs) >= n_in:
                break
            specs.extend(group)
            fl = max(fl, group_fl)
        return specs, fl


@dataclass
class OpContext:
    """What a signature check sees: the operation and its subgraph's operands."""

    index: int
    op: Operation
    operands: list[Operand]

    @property
    def name(self) -> str:
        return f"operation {self.index} ({OperationType(self.op.type).name})"

    def fail(self, message: str):
        raise invalid(f"{self.name}: {message}")

    def inp(self, i: int) -> Operand:
        return self.operands[self.op.inputs[i]]

    def out(self, i: int) -> Operand:
        return self.operands[self.op.outputs[i]]

    def present(self, i: int) -> bool:
        return self.inp(i).lifetime != OperandLifeTime.NO_VALUE

    def rank(self, operand: Operand) -> int | None:
        """Known rank of a tensor operand (None when unknown)."""
        return len(operand.dimensions) if operand.dimensions else None


Check = Callable[[OpContext, OperandType], int]


@dataclass
class OpSignature:
    types: dict                      # primary operand type -> feature level
    variants: tuple
    primary: int = 0                 # input whose type selects the type configuration
    omittable: frozenset = frozenset()   # inputs that may be NO_VALUE
    ranks: dict = field(default_factory=dict)      # input index -> (min rank, max rank)
    out_ranks: dict = field(default_factory=dict)  # output index -> (min rank, max rank)
    same_quant: tuple = ()           # (output index, input index): "=in" quantization
    fixed_quant: dict = field(default_factory=dict)  # primary type -> (scale, zero point) of output 0
    check: Check | None = None       # further rules; returns a feature level
    variadic_ranks: tuple | None = None  # (min rank, max rank) of every repeated input of a variadic layout



# ---- building blocks shared by the operation modules ----------------------------------------------

ARITH_TYPES = {F32: 1, Q8A: 1, F16: 3, Q8AS: 4, I32: 4}
STD_TYPES = {F32: 1, Q8A: 1, F16: 3, Q8AS: 4}
FLOAT_TYPES = {F32: 1, F16: 3}
LAYOUT = ((BOOL,), 3)          # optional NCHW flag (FL3)
DILATION = ((i32, i32), 3)     # optional dilation pair (FL3)
RANK4 = (4, 4)
RANK_UP_TO_4 = (1, 4)
UNARY = (Variant("unary", ("T",), ("T",)),)


def float_eq(a: float, b: float) -> bool:
    return float(a) == float(b)


def _spec_names(types) -> str:
    return "/".join(sorted(OperandType(t).name for t in types))


def _match_variant(ctx: OpContext, variant: Variant, t: OperandType) -> tuple[str | None, int]:
    """(None, feature level) if every operand type fits ``variant``, else (first mismatch, 0)."""
    specs, fl = variant.input_specs(len(ctx.op.inputs))
    for i, spec in enumerate(specs):
        ok = allowed_types(spec, t)
        if ctx.inp(i).type not in ok:
            return (f"input {i} (operand {ctx.op.inputs[i]}) has type {OperandType(ctx.inp(i).type).name}, "
                    f"expected {_spec_names(ok)}"), 0
    for i, spec in enumerate(variant.output_specs(len(ctx.op.outputs))):
        ok = allowed_types(spec, t)
        if ctx.out(i).type not in ok:
            return (f"output {i} (operand {ctx.op.outputs[i]}) has type {OperandType(ctx.out(i).type).name}, "
                    f"expected {_spec_names(ok)}"), 0
    return None, fl


def _check_rank(ctx: OpContext, operand: Operand, what: str, limits: tuple[int, int]) -> None:
    r = ctx.rank(operand)
    lo, hi = limits
    if r is not None and not lo <= r <= hi:
        want = f"rank {lo}" if lo == hi else f"rank {lo}..{hi}"
        ctx.fail(f"{what} has rank {r}, expected {want}")


def check_signature(sig: OpSignature, ctx: OpContext) -> int:
    """Apply ``sig`` to the operation ``ctx.op``; return the feature level it needs.

    Assumes the operands were validated individually and every index is in range.
    """
    n_in, n_out = len(ctx.op.inputs), len(ctx.op.outputs)
    candidates = [v for v in sig.variants if v.accepts_count(n_in, n_out)]
    if not candidates:
        legal = sorted({c for v in sig.variants for c in v.input_counts()})
        first = sig.variants[0]
        ins = f"≥ {len(first.inputs)}" if first.repeats_input else "/".join(map(str, legal))
        outs = "≥ 1" if first.variadic_outputs else str(len(first.outputs))
        ctx.fail(f"illegal operand count: {n_in} inputs and {n_out} outputs (legal: {ins} inputs, {outs} outputs)")
    if n_in <= sig.primary:
        ctx.fail(f"needs at least {sig.primary + 1} inputs")
    t = ctx.inp(sig.primary).type
    if t not in sig.types:
        ctx.fail(f"input {sig.primary} type {OperandType(t).name} is not supported "
                 f"(supported: {_spec_names(sig.types)})")
    version = sig.types[t]
    first_error = None
    for variant in candidates:
        error, fl = _match_variant(ctx, variant, t)
        if error is None:
            version = max(version, fl, variant.feature_level)
            break
        first_error = first_error or error
    else:
        ctx.fail(first_error)
    # omitted inputs
    for i in range(n_in):
        if not ctx.present(i) and i not in sig.omittable:
            ctx.fail(f"input {i} (operand {ctx.op.inputs[i]}) is NO_VALUE but this input cannot be omitted")
    # ranks
    for i, limits in sig.ranks.items():
        if i < n_in and ctx.present(i):
            _check_rank(ctx, ctx.inp(i), f"input {i} (operand {ctx.op.inputs[i]})", limits)
    if sig.variadic_ranks is not None:
        first = sig.variants[0]
        repeated = n_in - len(first.inputs) + 1
        for i in (range(n_in - repeated, n_in) if first.variadic_last else range(repeated)):
            _check_rank(ctx, ctx.inp(i), f"input {i} (operand {ctx.op.inputs[i]})", sig.variadic_ranks)
    for i, limits in sig.out_ranks.items():
        _check_rank(ctx, ctx.out(i), f"output {i} (operand {ctx.op.outputs[i]})", limits)
    # output quantization
    for out_i, in_i in sig.same_quant:
        o, a = ctx.out(out_i), ctx.inp(in_i)
        if OPERAND_TYPE_INFO[o.type].quant_range is not None and (
                not float_eq(o.scale, a.scale) or o.zero_point != a.zero_point):
            ctx.fail(f"output {out_i} scale/zeroPoint ({o.scale}, {o.zero_point}) must equal input {in_i}'s "
                     f"({a.scale}, {a.zero_point})")
    fixed = sig.fixed_quant.get(t)
    if fixed is not None:
        o = ctx.out(0)
        if not float_eq(o.scale, fixed[0]) or o.zero_point != fixed[1]:
            ctx.fail(f"{OperandType(t).name} output must have scale {fixed[0]} and zeroPoint {fixed[1]}, "
                     f"got ({o.scale}, {o.zero_point})")
    if sig.check is not None:
        version = max(version, sig.check(ctx, t))
    return version
