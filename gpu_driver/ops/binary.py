"""Broadcasting binary element-wise operations: ADD, SUB, MUL, DIV (with a fused activation, input 2),
MAXIMUM, MINIMUM, POW and PRELU.

- Shapes broadcast numpy-style (operations.md §0.3); ADD/SUB/MUL/DIV take rank ≤ 4 and zero-sized
  inputs (FL3), the others any rank ≥ 1 and fail (GENERAL_FAILURE) on a zero-sized input.
- Float types compute in fp32 (fp16 is rounded once at the end).  ADD/SUB/MUL/DIV clamp the result
  with ``min(max(v, lo), hi)`` (a NaN goes through) to the fused activation's bounds intersected with
  [−FLT_MAX, FLT_MAX], as AOSP's kernels do (an infinite result becomes ±FLT_MAX in fp32).
  MAXIMUM/MINIMUM are C++ ``std::max(a, b)`` = ``a < b ? b : a`` and ``std::min(a, b)`` =
  ``b < a ? b : a``: with a NaN operand they return the first operand.  POW is fp32 ``pow``;
  PRELU is ``x >= 0 ? x : alpha·x``.
- TENSOR_INT32 (FL4; MAXIMUM/MINIMUM FL3) allows only activation NONE: ADD/SUB/MUL wrap around
  (two's complement), DIV is floor division (rounds toward −∞) with x / 0 = 0 and
  INT32_MIN / −1 wrapping to INT32_MIN.
- Quantized types follow the TFLite integer arithmetic (operands.md §8.5): ADD rescales both sides
  to 2·max(s1, s2) with a left shift of 20, SUB is ADD with the second side's multiplier negated; MUL
  uses one multiplier s1·s2/s_out (fp32 product), so a quantized MUL needs s_out > s1·s2;
  MAXIMUM/MINIMUM requantize each operand to the output (operands.md §8.2) and compare the stored
  values; PRELU uses s_in/s_out for x ≥ 0 and s_in·s_alpha/s_out for x·alpha, saturated.
- The accelerator kernel (``binary.cl``) runs every operation and type above; its integer paths are
  the reference's arithmetic bit for bit (the same multipliers; quantized MAXIMUM/MINIMUM read the
  reference's requantization of every stored value from a table).  Broadcast axes are merged so
  that any rank whose broadcast pattern has at most four runs is indexed as rank 4.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import ctype, float_act, float_io, known, numel, params_ok, scalars_constant, Work
from ..errors import failure
from ..hal.types import OperandType, OperationType
from .definition import (OpParams, TensorInfo, as_float32, broadcast_shapes, fuse_code, require,
                         require_nonempty)
from .fused_activation import float_activation_range
from .registry import operation
from .signature import ARITH_TYPES, F16, F32, I32, Q8A, Q8AS, RANK_UP_TO_4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_QUANT8 = (Q8A, Q8AS)
#: quantized ADD/SUB's left shift of both rescaled inputs (TFLite)
ADD_LEFT_SHIFT = 20
#: the operations with a fused activation (input 2)
_ARITHMETIC = (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV)
#: the OP literal of binary.cl for each operation
_OP_CODES = {OperationType.ADD: 0, OperationType.SUB: 1, OperationType.MUL: 2, OperationType.DIV: 3,
             OperationType.MAXIMUM: 4, OperationType.MINIMUM: 5, OperationType.POW: 6, OperationType.PRELU: 7}


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class BroadcastParams(OpParams):
    """A broadcasting binary operation without a fused activation (MAXIMUM, MINIMUM, POW, PRELU):
    ``output_shapes[0]`` is the broadcast shape of inputs 0 and 1."""


@dataclass
class BinaryParams(BroadcastParams):
    """ADD / SUB / MUL / DIV: the broadcast shape and the fuse code (0 NONE, 1 RELU, 2 RELU1, 3 RELU6);
    ``nan_to_low`` and ``hard_swish`` as in ActivationParams."""

    activation: int = 0
    nan_to_low: bool = False
    hard_swish: bool = False


# ---- signatures --------------------------------------------------------------------------------------

def _check_mul(ctx: OpContext, t: OperandType) -> int:
    if t in _QUANT8:
        a, b, out = ctx.inp(0), ctx.inp(1), ctx.out(0)
        if not float(out.scale) > float(a.scale) * float(b.scale):
            ctx.fail(f"quantized output scale {out.scale} must exceed the input scale product "
                     f"{float(a.scale) * float(b.scale)}")
    return 1


_ARITH_VARIANTS = (Variant("binary", ("T", "T", i32), ("T",)),)
_PAIR_VARIANTS = (Variant("pair", ("T", "T"), ("T",)),)
_RANKS = dict(ranks={0: RANK_UP_TO_4, 1: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4})
ADD_SIGNATURE = OpSignature(ARITH_TYPES, _ARITH_VARIANTS, **_RANKS)
MUL_SIGNATURE = OpSignature(ARITH_TYPES, _ARITH_VARIANTS, **_RANKS, check=_check_mul)
SUB_SIGNATURE = OpSignature({F32: 2, F16: 3, Q8A: 3, Q8AS: 4, I32: 4}, _ARITH_VARIANTS, **_RANKS)
DIV_SIGNATURE = OpSignature({F32: 2, F16: 3, I32: 4}, _ARITH_VARIANTS, **_RANKS)
MAXIMUM_SIGNATURE = OpSignature({F32: 3, F16: 3, I32: 3, Q8A: 3, Q8AS: 4}, _PAIR_VARIANTS)
POW_SIGNATURE = OpSignature({F32: 3, F16: 3}, _PAIR_VARIANTS)
PRELU_SIGNATURE = OpSignature({F32: 3, F16: 3, Q8A: 3, Q8AS: 4}, _PAIR_VARIANTS)
#: each operation's signature (the kernel runs every type it allows)
_SIGNATURES = {OperationType.ADD: ADD_SIGNATURE, OperationType.SUB: SUB_SIGNATURE,
               OperationType.MUL: MUL_SIGNATURE, OperationType.DIV: DIV_SIGNATURE,
               OperationType.MAXIMUM: MAXIMUM_SIGNATURE, OperationType.MINIMUM: MAXIMUM_SIGNATURE,
               OperationType.POW: POW_SIGNATURE, OperationType.PRELU: PRELU_SIGNATURE}


# ---- definition helpers ------------------------------------------------------------------------------

def _define_arithmetic(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    a, b, act = inputs
    activation = fuse_code(act, name)
    if a.type == I32:
        require(activation == 0, name, "TENSOR_INT32 arithmetic allows only fused activation NONE")
    shape = broadcast_shapes(a.dims(), b.dims(), name)
    return BinaryParams(output_shapes=[shape], activation=activation)


def _define_pair(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BroadcastParams:
    a, b = inputs[0], inputs[1]
    require(a.type == b.type, name, f"input types {a.type.name} and {b.type.name} differ")
    require(len(a.dims()) >= 1 and len(b.dims()) >= 1, name, "inputs must have rank ≥ 1")
    shape = broadcast_shapes(a.dims(), b.dims(), name)
    require_nonempty(shape, name)
    return BroadcastParams(output_shapes=[shape])


def fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    """The fuse code is input 2."""
    return 2 if len(inputs) >= 3 else None


# ---- quantization constants (shared by the reference and the lowering) -------------------------------

def _multiplier_lt1(real: float, name: str) -> tuple[int, int]:
    if not 0.0 < real < 1.0:
        raise failure(f"{name}: quantized multiplier {real} is outside (0, 1)")
    return quant.quantize_multiplier_smaller_than_one(real)


def _add_multipliers(op: OperationType, a: TensorInfo, b: TensorInfo,
                     out: TensorInfo) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """TFLite quantized ADD's (multiplier, shift) of each side (rescaled to 2·max(s1, s2), then shifted
    left by ADD_LEFT_SHIFT) and of the sum (back to the output scale); SUB negates the second side's."""
    s1, s2, so = as_float32(a.scale), as_float32(b.scale), as_float32(out.scale)
    twice_max = 2.0 * max(s1, s2)
    m1 = _multiplier_lt1(s1 / twice_max, op.name)
    m2, h2 = _multiplier_lt1(s2 / twice_max, op.name)
    mo = _multiplier_lt1(twice_max / ((1 << ADD_LEFT_SHIFT) * so), op.name)
    return m1, (-m2 if op == OperationType.SUB else m2, h2), mo


def _product_scale(a: TensorInfo, b: TensorInfo) -> float:
    """s_a·s_b as the C++ reference computes it (a float product)."""
    return as_float32(np.float32(a.scale) * np.float32(b.scale))


def _mul_multiplier(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> tuple[int, int]:
    """TFLite quantized MUL's one (multiplier, shift): s1·s2/s_out."""
    return _multiplier_lt1(_product_scale(a, b) / as_float32(out.scale), "MUL")


def _prelu_multipliers(x: TensorInfo, alpha: TensorInfo, out: TensorInfo) -> tuple[tuple[int, int], tuple[int, int]]:
    """(multiplier, shift) of x ≥ 0 (s_x/s_out, a float quotient) and of x·alpha (s_x·s_alpha/s_out)."""
    pos = as_float32(np.float32(x.scale) / np.float32(out.scale))
    return quant.quantize_multiplier(pos), quant.quantize_multiplier(_product_scale(x, alpha) / as_float32(out.scale))


def requantize(q: np.ndarray, src: TensorInfo, dst: TensorInfo) -> np.ndarray:
    """Stored values of ``src``'s quantization re-expressed in ``dst``'s (operands.md §8.2):
    (q − zp)·s in fp32, then / s_out + zp_out in double, clamped, rounded half away from zero."""
    qmin, qmax = dst.qrange
    real = ((np.asarray(q, dtype=np.int64) - src.zero_point).astype(np.float32) * np.float32(src.scale))
    r = real.astype(np.float64) / as_float32(dst.scale) + dst.zero_point
    return quant.round_half_away(np.clip(r, qmin, qmax)).astype(np.int64)


def _quant_bounds(activation: int, out: TensorInfo) -> tuple[int, int]:
    qmin, qmax = out.qrange
    return quant.activation_range_quantized(activation, as_float32(out.scale), out.zero_point, qmin, qmax)


# ---- reference kernels -------------------------------------------------------------------------------

def _std_max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x < y, y, x)


def _std_min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(y < x, y, x)


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer floor division with x / 0 = 0 (int64 in, int64 out)."""
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, 0, np.floor_divide(x, safe))


_FLOAT_FUNCTIONS: dict[OperationType, Callable] = {
    OperationType.ADD: np.add, OperationType.SUB: np.subtract, OperationType.MUL: np.multiply,
    OperationType.DIV: np.divide, OperationType.MAXIMUM: _std_max, OperationType.MINIMUM: _std_min,
    OperationType.POW: np.power, OperationType.PRELU: lambda x, a: np.where(x >= 0, x, x * a)}
_INT_FUNCTIONS: dict[OperationType, Callable] = {
    OperationType.ADD: np.add, OperationType.SUB: np.subtract, OperationType.MUL: np.multiply,
    OperationType.DIV: _floor_div, OperationType.MAXIMUM: _std_max, OperationType.MINIMUM: _std_min}


def _quant_add(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray,
               y: np.ndarray) -> np.ndarray:
    (m1, s1), (m2, s2), (mo, so) = _add_multipliers(op, a, b, out)
    xa = quant.multiply_by_quantized_multiplier_smaller_than_one((x - a.zero_point) * (1 << ADD_LEFT_SHIFT), m1, s1)
    yb = quant.multiply_by_quantized_multiplier_smaller_than_one((y - b.zero_point) * (1 << ADD_LEFT_SHIFT), m2, s2)
    return quant.multiply_by_quantized_multiplier_smaller_than_one(xa + yb, mo, so) + out.zero_point


def _quant_mul(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray,
               y: np.ndarray) -> np.ndarray:
    m, s = _mul_multiplier(a, b, out)
    return quant.multiply_by_quantized_multiplier((x - a.zero_point) * (y - b.zero_point), m, s) + out.zero_point


def _quant_extremum(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray,
                    y: np.ndarray) -> np.ndarray:
    f = _std_max if op == OperationType.MAXIMUM else _std_min
    return f(requantize(x, a, out), requantize(y, b, out))


def _quant_prelu(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray,
                 y: np.ndarray) -> np.ndarray:
    (mp, sp), (mn, sn) = _prelu_multipliers(a, b, out)
    xc = x - a.zero_point
    pos = quant.multiply_by_quantized_multiplier(xc, mp, sp)
    neg = quant.multiply_by_quantized_multiplier(xc * (y - b.zero_point), mn, sn)
    return np.where(xc >= 0, pos, neg) + out.zero_point


_QUANT_FUNCTIONS: dict[OperationType, Callable] = {
    OperationType.ADD: _quant_add, OperationType.SUB: _quant_add, OperationType.MUL: _quant_mul,
    OperationType.MAXIMUM: _quant_extremum, OperationType.MINIMUM: _quant_extremum, OperationType.PRELU: _quant_prelu}


def _compute(op: OperationType, params: BroadcastParams, inputs: list[TensorInfo],
             outputs: list[TensorInfo]) -> np.ndarray:
    """The operation on the broadcast operands (no zero-sized output here)."""
    a, b, out = inputs[0], inputs[1], outputs[0]
    activation = getattr(params, "activation", 0)
    x, y = np.broadcast_arrays(a.array(), b.array())
    if a.type == I32:
        return _INT_FUNCTIONS[op](x.astype(np.int64), y.astype(np.int64))
    if a.is_quantized:
        r = _QUANT_FUNCTIONS[op](op, a, b, out, x.astype(np.int64), y.astype(np.int64))
        return np.clip(r, *_quant_bounds(activation, out))
    with np.errstate(all="ignore"):
        r = _FLOAT_FUNCTIONS[op](x.astype(np.float32), y.astype(np.float32)).astype(np.float32)
    if op in _ARITHMETIC:
        r = np.clip(r, *float_activation_range(activation)).astype(np.float32)
    return r


def _reference(op: OperationType):
    def reference(params: BroadcastParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
        shape, dtype = params.output_shapes[0], outputs[0].dtype
        if numel(shape) == 0:
            return [np.zeros(shape, dtype=dtype)]
        with np.errstate(over="ignore"):  # FLT_MAX rounds to fp16 infinity
            return [_compute(op, params, inputs, outputs).astype(dtype).reshape(shape)]
    reference.__name__ = f"reference_{op.name.lower()}"
    return reference


# ---- lowering ----------------------------------------------------------------------------------------

def merged_broadcast(out_shape, a_shape, b_shape, rank: int = 4):
    """The output viewed with adjacent axes merged where A and B both broadcast or both do not, padded
    to ``rank``: (dims, A strides, B strides) in elements (0 on a broadcast axis); None when more than
    ``rank`` axes remain."""
    out = tuple(int(d) for d in out_shape)
    pa = (1,) * (len(out) - len(a_shape)) + tuple(a_shape)
    pb = (1,) * (len(out) - len(b_shape)) + tuple(b_shape)
    runs: list[list] = []  # [size, A reads it, B reads it]
    for o, da, db in zip(out, pa, pb):
        if o == 1:
            continue
        kind = (da == o, db == o)
        if runs and tuple(runs[-1][1:]) == kind:
            runs[-1][0] *= o
        else:
            runs.append([o, *kind])
    if len(runs) > rank:
        return None
    runs = [[1, False, False]] * (rank - len(runs)) + runs
    dims = tuple(r[0] for r in runs)
    strides = []
    for k in (1, 2):
        s, acc = [], 1
        for size, *reads in reversed(runs):
            s.append(acc if reads[k - 1] else 0)
            acc *= size if reads[k - 1] else 1
        strides.append(tuple(reversed(s)))
    return dims, strides[0], strides[1]


def supports_binary(ctx: LoweringContext) -> bool:
    op = ctx.node.type
    if not params_ok(ctx) or not scalars_constant(ctx, [2] if op in _ARITHMETIC else []):
        return False
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    if not known(a, b, out) or not a.type == b.type == out.type or a.type not in _SIGNATURES[op].types:
        return False
    if merged_broadcast(ctx.params.output_shapes[0], a.shape, b.shape) is None:
        return False
    if a.is_quantized:
        try:
            _quant_defines(op, a, b, out, getattr(ctx.params, "activation", 0))
        except Exception:  # a multiplier the integer kernel cannot represent
            return False
    return True


def _quant_defines(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, activation: int) -> dict:
    d = dict(zip(("ACT_MIN", "ACT_MAX"), _quant_bounds(activation, out)))
    d.update(ZA=a.zero_point, ZB=b.zero_point, ZO=out.zero_point)
    if op in (OperationType.ADD, OperationType.SUB):
        (d["M1"], d["S1"]), (d["M2"], d["S2"]), (d["MO"], d["SO"]) = _add_multipliers(op, a, b, out)
    elif op == OperationType.MUL:
        d["MO"], d["SO"] = _mul_multiplier(a, b, out)
    elif op == OperationType.PRELU:
        (d["M1"], d["S1"]), (d["M2"], d["S2"]) = _prelu_multipliers(a, b, out)
    return d


def _requantize_table(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> np.ndarray:
    """Every stored value of A, then of B, requantized to the output (MAXIMUM/MINIMUM), as stored values."""
    qmin, qmax = out.qrange
    stored = np.arange(qmin, qmax + 1)
    return np.concatenate([requantize(stored, a, out), requantize(stored, b, out)]).astype(out.dtype)


def lower_binary(ctx: LoweringContext) -> None:
    op = ctx.node.type
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    out_shape = ctx.params.output_shapes[0]
    count = numel(out_shape)
    if count == 0:
        return
    dims, sa, sb = merged_broadcast(out_shape, a.shape, b.shape)
    same = tuple(a.shape) == tuple(b.shape) == tuple(out_shape)
    kind = 2 if a.is_quantized else 1 if a.type == I32 else 0
    activation = getattr(ctx.params, "activation", 0)
    # a broadcast over rows of a short innermost axis: one work item per row (no division per element)
    rows = int(not same and 4 <= dims[3] <= 512 and count // dims[3] >= 256)
    d = {"T": ctype(a), "COUNT": count, "OP": _OP_CODES[op], "KIND": kind, "BCAST": int(not same), "ROWS": rows,
         "QTABLE": 0, "QOFFSET": 0, "ZA": 0, "ZB": 0, "ZO": 0, "ACT_MIN": 0, "ACT_MAX": 0,
         "LEFT_SHIFT": ADD_LEFT_SHIFT, "M1": 0, "S1": 0, "M2": 0, "S2": 0, "MO": 0, "SO": 0,
         "ACT_FMIN": 0.0, "ACT_FMAX": 0.0, "ACT_NAN_LOW": 0, "ACT_HARD_SWISH": 0,
         **float_io(a)}
    for k in range(4):
        d[f"D{k}"], d[f"SA{k}"], d[f"SB{k}"] = dims[k], sa[k], sb[k]
    inputs = [ctx.input(0), ctx.input(1)]
    if kind == 2:
        d.update(_quant_defines(op, a, b, out, activation))
        if op in (OperationType.MAXIMUM, OperationType.MINIMUM):
            d["QTABLE"], d["QOFFSET"] = 1, -out.qrange[0]
            inputs.append(ctx.constant(_requantize_table(a, b, out)))
    elif kind == 0:
        d.update(float_act(*float_activation_range(activation), getattr(ctx.params, "nan_to_low", False),
                           getattr(ctx.params, "hard_swish", False)))
    if rows:
        ctx.emit("binary.cl", {**d, "RUN": 1}, inputs, [ctx.output(0)], (count // dims[3],), Work.ROWS)
    else:
        ctx.emit_elements("binary.cl", d, inputs, [ctx.output(0)], count)


# ---- the operations ----------------------------------------------------------------------------------

def _definition(op: OperationType):
    """The definition of ``op``: broadcast shape, fuse code for ADD/SUB/MUL/DIV, MUL's scale rule."""
    name = op.name

    def define(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BroadcastParams:
        if op not in _ARITHMETIC:
            return _define_pair(name, inputs, outputs)
        a, b, out = inputs[0], inputs[1], outputs[0]
        if op == OperationType.MUL and a.type in _QUANT8:
            require(out.scale > a.scale * b.scale, name,
                    f"quantized output scale {out.scale} must exceed the input scale product {a.scale * b.scale}")
        return _define_arithmetic(name, inputs, outputs)

    define.__name__ = name.lower()
    return define


for _op, _signature in _SIGNATURES.items():
    operation(_op, signature=_signature, reference=_reference(_op), lower=lower_binary, supports=supports_binary,
              fused_activation_input=fused_activation_input if _op in _ARITHMETIC else None)(_definition(_op))
