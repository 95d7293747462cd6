"""Per-operation signature tables for model validation (interface.md §9.1 rule 10).

One :class:`OpSignature` per HAL 1.0 operation (codes 0–28): the operand type configurations it
accepts (including the later-feature-level types: F16 at FL3, Q8AS at FL4, PC8 filters), its
legal input/output counts as *variants* with optional trailing input groups (operations.md App. C),
which inputs may be NO_VALUE, rank limits, output quantization rules ("=in" and fixed params), and
the feature level each choice needs.  :func:`check_operation` applies a signature to one operation of
a structurally valid subgraph and returns the feature level the operation needs.

Type specs used in the tables (resolved against the operation's *primary* type ``T``, the type of
input ``OpSignature.primary``):

``"T"``     the primary type
``"F"``     the float scalar matching T: FLOAT16 for TENSOR_FLOAT16, FLOAT32 otherwise
``"B"``     bias: TENSOR_INT32 for quantized T, T otherwise
``"W"``     filter: T, or TENSOR_QUANT8_SYMM_PER_CHANNEL when T is Q8A / Q8AS
``"FLT"``   any float tensor (TENSOR_FLOAT32 / TENSOR_FLOAT16)
``"LSHIN"`` the LSH_PROJECTION input: F32, F16, I32 or Q8A
an ``OperandType``: exactly that type
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import invalid
from .abbreviations import BOOL, F16, F32, I32, PC8, Q8A, Q8AS, Q8S, f16, f32, i32  # noqa: F401
from .model import Operand, Operation
from .types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType, OperationType

_QUANT8 = (Q8A, Q8AS)


def allowed_types(spec, t: OperandType) -> frozenset[OperandType]:
    """The operand types a type spec admits for primary type ``t``."""
    if isinstance(spec, OperandType):
        return frozenset((spec,))
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
    if spec == "LSHIN":
        return frozenset((F32, F16, I32, Q8A))
    raise ValueError(f"unknown type spec {spec!r}")  # pragma: no cover - table bug


@dataclass(frozen=True)
class Variant:
    """One input/output layout of an operation.

    ``optional`` holds trailing input groups, each with the feature level it needs; a legal input
    count is ``len(inputs)`` plus the sizes of the first j groups (so a dilation *pair* is one group).
    With ``variadic`` the first input spec repeats one or more times (CONCATENATION).
    """

    name: str
    inputs: tuple
    outputs: tuple
    optional: tuple = ()
    variadic: bool = False

    def input_counts(self) -> list[int]:
        if self.variadic:
            return []
        counts, n = [len(self.inputs)], len(self.inputs)
        for group, _fl in self.optional:
            n += len(group)
            counts.append(n)
        return counts

    def accepts_count(self, n_in: int, n_out: int) -> bool:
        if n_out != len(self.outputs):
            return False
        if self.variadic:
            return n_in >= len(self.inputs)
        return n_in in self.input_counts()

    def input_specs(self, n_in: int) -> tuple[list, int]:
        """The spec of each of ``n_in`` inputs and the feature level the optional groups need."""
        if self.variadic:
            return [self.inputs[0]] * (n_in - len(self.inputs) + 1) + list(self.inputs[1:]), 1
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


# ---- per-operation extra rules -------------------------------------------------------------------

def _float_eq(a: float, b: float) -> bool:
    return float(a) == float(b)


def _conv_scale_version(ctx: OpContext, t: OperandType, filt: Operand) -> int:
    """Before FL3, Q8A conv/FC needed s_out > s_in·s_filter; a model violating it needs FL3."""
    if t == Q8A and filt.type == Q8A:
        if not float(ctx.out(0).scale) > float(ctx.inp(0).scale) * float(filt.scale):
            return 3
    return 1


def _check_conv(ctx: OpContext, t: OperandType, channel_dim: int) -> int:
    filt = ctx.inp(1)
    if filt.type == PC8:
        cq = filt.extra_params
        if cq.channel_dim != channel_dim:
            ctx.fail(f"per-channel filter must have channelDim {channel_dim}, got {cq.channel_dim}")
        if float(ctx.inp(2).scale) != 0.0:
            ctx.fail("the bias of a per-channel quantized filter must have scale 0")
    return _conv_scale_version(ctx, t, filt)


def _check_conv2d(ctx: OpContext, t: OperandType) -> int:
    return _check_conv(ctx, t, 0)


def _check_depthwise(ctx: OpContext, t: OperandType) -> int:
    return _check_conv(ctx, t, 3)


def _check_fc(ctx: OpContext, t: OperandType) -> int:
    return _conv_scale_version(ctx, t, ctx.inp(1))


def _check_mul(ctx: OpContext, t: OperandType) -> int:
    if t in _QUANT8:
        a, b, out = ctx.inp(0), ctx.inp(1), ctx.out(0)
        if not float(out.scale) > float(a.scale) * float(b.scale):
            ctx.fail(f"quantized output scale {out.scale} must exceed the input scale product "
                     f"{float(a.scale) * float(b.scale)}")
    return 1


def _check_concat(ctx: OpContext, t: OperandType) -> int:
    n = len(ctx.op.inputs) - 1
    ranks = {ctx.rank(ctx.inp(i)) for i in range(n)} - {None}
    if len(ranks) > 1:
        ctx.fail(f"inputs have different ranks {sorted(ranks)}")
    out_rank = ctx.rank(ctx.out(0))
    if ranks and out_rank is not None and out_rank not in ranks:
        ctx.fail(f"output rank {out_rank} differs from the input rank {ranks.pop()}")
    if t == Q8A:
        out = ctx.out(0)
        for i in range(n):
            a = ctx.inp(i)
            if not _float_eq(a.scale, out.scale) or a.zero_point != out.zero_point:
                return 3  # inputs requantized into the output params: FL3
    return 1


def _check_rank4_from_fl3(ctx: OpContext, t: OperandType) -> int:
    """L2_NORMALIZATION / LOCAL_RESPONSE_NORMALIZATION: a rank other than 4 needs FL3."""
    r = ctx.rank(ctx.inp(0))
    return 3 if r is None or r != 4 else 1


def _check_softmax(ctx: OpContext, t: OperandType) -> int:
    r = ctx.rank(ctx.inp(0))
    return 3 if r is None or r not in (2, 4) else 1


def _check_dequantize(ctx: OpContext, t: OperandType) -> int:
    out_t = ctx.out(0).type
    if t == Q8A and out_t == F32:
        return 1
    return 3  # Q8A→f16, Q8S/PC8→f16/f32 (FL3); Q8AS→… (FL4 through the type table)


def _check_lstm(ctx: OpContext, t: OperandType) -> int:
    p = ctx.present
    if p(1) != p(5):
        ctx.fail("CIFG: input-to-input (1) and recurrent-to-input (5) weights must be both present or both omitted")
    cifg = not p(1)
    if cifg and p(12):
        ctx.fail("CIFG: the input gate bias (12) must be omitted")
    if not cifg and not p(12):
        ctx.fail("the input gate bias (12) is required without CIFG")
    if not (((p(9) or cifg) and p(10) and p(11)) or (not p(9) and not p(10) and not p(11))):
        ctx.fail("peephole weights (9, 10, 11) must be all present or all omitted")
    if p(17) and not p(16):
        ctx.fail("projection bias (17) given without projection weights (16)")
    if len(ctx.op.inputs) == 27:
        ln = [p(i) for i in (23, 24, 25, 26)]
        if cifg:
            if ln[0]:
                ctx.fail("CIFG: the input layer-norm weights (23) must be omitted")
            if len(set(ln[1:])) != 1:
                ctx.fail("layer-norm weights (24, 25, 26) must be all present or all omitted")
        elif len(set(ln)) != 1:
            ctx.fail("layer-norm weights (23–26) must be all present or all omitted")
    return 1


# ---- the table -----------------------------------------------------------------------------------

_ARITH_TYPES = {F32: 1, Q8A: 1, F16: 3, Q8AS: 4, I32: 4}
_STD_TYPES = {F32: 1, Q8A: 1, F16: 3, Q8AS: 4}
_FLOAT_TYPES = {F32: 1, F16: 3}
_LAYOUT = ((BOOL,), 3)
_DILATION = ((i32, i32), 3)
_R4 = (4, 4)
_LE4 = (1, 4)

_POOL_VARIANTS = (
    Variant("implicit", ("T", i32, i32, i32, i32, i32, i32), ("T",), (_LAYOUT,)),
    Variant("explicit", ("T", i32, i32, i32, i32, i32, i32, i32, i32, i32), ("T",), (_LAYOUT,)),
)
_ELEMENTWISE = (Variant("unary", ("T",), ("T",)),)

SIGNATURES: dict[OperationType, OpSignature] = {
    OperationType.ADD: OpSignature(
        _ARITH_TYPES, (Variant("binary", ("T", "T", i32), ("T",)),), ranks={0: _LE4, 1: _LE4},
        out_ranks={0: _LE4}),
    OperationType.MUL: OpSignature(
        _ARITH_TYPES, (Variant("binary", ("T", "T", i32), ("T",)),), ranks={0: _LE4, 1: _LE4},
        out_ranks={0: _LE4}, check=_check_mul),
    OperationType.AVERAGE_POOL_2D: OpSignature(
        _STD_TYPES, _POOL_VARIANTS, ranks={0: _R4}, out_ranks={0: _R4}, same_quant=((0, 0),)),
    OperationType.MAX_POOL_2D: OpSignature(
        _STD_TYPES, _POOL_VARIANTS, ranks={0: _R4}, out_ranks={0: _R4}, same_quant=((0, 0),)),
    OperationType.L2_POOL_2D: OpSignature(
        _FLOAT_TYPES, _POOL_VARIANTS, ranks={0: _R4}, out_ranks={0: _R4}),
    OperationType.CONCATENATION: OpSignature(
        _STD_TYPES, (Variant("concat", ("T", i32), ("T",), variadic=True),), out_ranks={0: _LE4},
        check=_check_concat),
    OperationType.CONV_2D: OpSignature(
        _STD_TYPES,
        (Variant("implicit", ("T", "W", "B", i32, i32, i32, i32), ("T",), (_LAYOUT, _DILATION)),
         Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32), ("T",), (_LAYOUT, _DILATION))),
        ranks={0: _R4, 1: _R4, 2: (1, 1)}, out_ranks={0: _R4}, check=_check_conv2d),
    OperationType.DEPTHWISE_CONV_2D: OpSignature(
        _STD_TYPES,
        (Variant("implicit", ("T", "W", "B", i32, i32, i32, i32, i32), ("T",), (_LAYOUT, _DILATION)),
         Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32, i32), ("T",),
                 (_LAYOUT, _DILATION))),
        ranks={0: _R4, 1: _R4, 2: (1, 1)}, out_ranks={0: _R4}, check=_check_depthwise),
    OperationType.DEPTH_TO_SPACE: OpSignature(
        _STD_TYPES, (Variant("block", ("T", i32), ("T",), (_LAYOUT,)),), ranks={0: _R4},
        out_ranks={0: _R4}, same_quant=((0, 0),)),
    OperationType.SPACE_TO_DEPTH: OpSignature(
        _STD_TYPES, (Variant("block", ("T", i32), ("T",), (_LAYOUT,)),), ranks={0: _R4},
        out_ranks={0: _R4}, same_quant=((0, 0),)),
    OperationType.DEQUANTIZE: OpSignature(
        {Q8A: 1, Q8S: 3, PC8: 3, Q8AS: 4}, (Variant("dequantize", ("T",), ("FLT",)),),
        ranks={0: _LE4}, out_ranks={0: _LE4}, check=_check_dequantize),
    OperationType.EMBEDDING_LOOKUP: OpSignature(
        {F32: 1, I32: 3, Q8A: 3, F16: 4, Q8AS: 4}, (Variant("lookup", (I32, "T"), ("T",)),),
        primary=1, ranks={0: (1, 1), 1: (2, 99)}, out_ranks={0: (2, 99)}, same_quant=((0, 1),)),
    OperationType.FLOOR: OpSignature(_FLOAT_TYPES, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4}),
    OperationType.FULLY_CONNECTED: OpSignature(
        _STD_TYPES, (Variant("fc", ("T", "T", "B", i32), ("T",)),),
        ranks={0: (2, 4), 1: (2, 2), 2: (1, 1)}, out_ranks={0: (2, 2)}, check=_check_fc),
    OperationType.HASHTABLE_LOOKUP: OpSignature(
        {F32: 1, I32: 1, Q8A: 1}, (Variant("lookup", (I32, I32, "T"), ("T", Q8A)),),
        primary=2, ranks={0: (1, 1), 1: (1, 1), 2: (1, 99)}, out_ranks={1: (1, 1)}, same_quant=((0, 2),)),
    OperationType.L2_NORMALIZATION: OpSignature(
        {F32: 1, F16: 3, Q8A: 3, Q8AS: 4}, (Variant("l2norm", ("T",), ("T",), (((i32,), 3),)),),
        ranks={0: _LE4}, out_ranks={0: _LE4}, fixed_quant={Q8A: (1 / 128, 128), Q8AS: (1 / 128, 0)},
        check=_check_rank4_from_fl3),
    OperationType.LOCAL_RESPONSE_NORMALIZATION: OpSignature(
        _FLOAT_TYPES, (Variant("lrn", ("T", i32, "F", "F", "F"), ("T",), (((i32,), 3),)),),
        ranks={0: _LE4}, out_ranks={0: _LE4}, check=_check_rank4_from_fl3),
    OperationType.LOGISTIC: OpSignature(
        _STD_TYPES, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4},
        fixed_quant={Q8A: (1 / 256, 0), Q8AS: (1 / 256, -128)}),
    OperationType.LSH_PROJECTION: OpSignature(
        _FLOAT_TYPES, (Variant("lsh", ("T", "LSHIN", "T", i32), (I32,)),), omittable=frozenset({2}),
        ranks={0: (2, 2), 1: (1, 99), 2: (1, 1)}, out_ranks={0: (1, 1)}),
    OperationType.LSTM: OpSignature(
        _FLOAT_TYPES,
        (Variant("lstm", ("T",) * 20 + (i32, "F", "F"), ("T",) * 4, (((("T",) * 4), 3),)),),
        omittable=frozenset({1, 5, 9, 10, 11, 12, 16, 17, 23, 24, 25, 26}),
        ranks={0: (2, 2), 18: (2, 2), 19: (2, 2)}, check=_check_lstm),
    OperationType.RELU: OpSignature(_STD_TYPES, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4},
                                    same_quant=((0, 0),)),
    OperationType.RELU1: OpSignature(_STD_TYPES, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4},
                                     same_quant=((0, 0),)),
    OperationType.RELU6: OpSignature(_STD_TYPES, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4},
                                     same_quant=((0, 0),)),
    OperationType.RESHAPE: OpSignature(
        {**_STD_TYPES, I32: 6}, (Variant("reshape", ("T", I32), ("T",)),),
        ranks={0: _LE4, 1: (1, 1)}, same_quant=((0, 0),)),
    OperationType.RESIZE_BILINEAR: OpSignature(
        {F32: 1, F16: 3, Q8A: 3, Q8AS: 4},
        (Variant("size", ("T", i32, i32), ("T",), (_LAYOUT, ((BOOL,), 4), ((BOOL,), 4))),
         Variant("scale", ("T", "F", "F"), ("T",), (_LAYOUT, ((BOOL,), 4), ((BOOL,), 4)))),
        ranks={0: _R4}, out_ranks={0: _R4}, same_quant=((0, 0),)),
    OperationType.RNN: OpSignature(
        _FLOAT_TYPES, (Variant("rnn", ("T", "T", "T", "T", "T", i32), ("T", "T")),),
        ranks={0: (2, 2), 1: (2, 2), 2: (2, 2), 3: (1, 1), 4: (2, 2)}),
    OperationType.SOFTMAX: OpSignature(
        _STD_TYPES, (Variant("softmax", ("T", "F"), ("T",), (((i32,), 3),)),),
        ranks={0: _LE4}, out_ranks={0: _LE4}, fixed_quant={Q8A: (1 / 256, 0), Q8AS: (1 / 256, -128)},
        check=_check_softmax),
    OperationType.SVDF: OpSignature(
        _FLOAT_TYPES, (Variant("svdf", ("T", "T", "T", "T", "T", i32, i32), ("T", "T")),),
        omittable=frozenset({3}), ranks={0: (2, 2), 1: (2, 2), 2: (2, 2), 3: (1, 1), 4: (2, 2)}),
    OperationType.TANH: OpSignature(
        {F32: 1, F16: 3, Q8A: 3, Q8AS: 4}, _ELEMENTWISE, ranks={0: _LE4}, out_ranks={0: _LE4},
        fixed_quant={Q8A: (1 / 128, 128), Q8AS: (1 / 128, 0)}),
}

# RESIZE_BILINEAR by scale is FL3 regardless of the optional inputs.
_VARIANT_FL = {(OperationType.RESIZE_BILINEAR, "scale"): 3}


def omittable_inputs(op_type) -> frozenset[int] | None:
    """Input slots that may be NO_VALUE, or None when the operation has no signature here."""
    sig = SIGNATURES.get(op_type)
    return None if sig is None else sig.omittable


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
    for i, spec in enumerate(variant.outputs):
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


def check_operation(ctx: OpContext) -> int:
    """Apply the signature of ``ctx.op`` (one of the 29 HAL 1.0 operations); return its feature level.

    Assumes the operands were validated individually and every index is in range.
    """
    op_type = OperationType(ctx.op.type)
    sig = SIGNATURES[op_type]
    n_in, n_out = len(ctx.op.inputs), len(ctx.op.outputs)
    candidates = [v for v in sig.variants if v.accepts_count(n_in, n_out)]
    if not candidates:
        legal = sorted({c for v in sig.variants for c in v.input_counts()})
        ins = f"≥ {len(sig.variants[0].inputs)}" if sig.variants[0].variadic else "/".join(map(str, legal))
        ctx.fail(f"illegal operand count: {n_in} inputs and {n_out} outputs "
                 f"(legal: {ins} inputs, {len(sig.variants[0].outputs)} outputs)")
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
            version = max(version, fl, _VARIANT_FL.get((op_type, variant.name), 1))
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
    if op_type == OperationType.CONCATENATION:
        for i in range(n_in - 1):
            _check_rank(ctx, ctx.inp(i), f"input {i} (operand {ctx.op.inputs[i]})", _LE4)
    for i, limits in sig.out_ranks.items():
        _check_rank(ctx, ctx.out(i), f"output {i} (operand {ctx.op.outputs[i]})", limits)
    # output quantization
    for out_i, in_i in sig.same_quant:
        o, a = ctx.out(out_i), ctx.inp(in_i)
        if OPERAND_TYPE_INFO[o.type].quant_range is not None and (
                not _float_eq(o.scale, a.scale) or o.zero_point != a.zero_point):
            ctx.fail(f"output {out_i} scale/zeroPoint ({o.scale}, {o.zero_point}) must equal input {in_i}'s "
                     f"({a.scale}, {a.zero_point})")
    fixed = sig.fixed_quant.get(t)
    if fixed is not None:
        o = ctx.out(0)
        if not _float_eq(o.scale, fixed[0]) or o.zero_point != fixed[1]:
            ctx.fail(f"{OperandType(t).name} output must have scale {fixed[0]} and zeroPoint {fixed[1]}, "
                     f"got ({o.scale}, {o.zero_point})")
    if sig.check is not None:
        version = max(version, sig.check(ctx, t))
    return version
