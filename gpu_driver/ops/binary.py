"""Broadcasting binary arithmetic: ADD and MUL, with a fused activation (input 2).

- Shapes broadcast numpy-style (operations.md §0.3); rank ≤ 4.
- Float types clamp to the fused activation's bounds; TENSOR_INT32 (FL4) is wrapping two's-complement
  arithmetic and allows only activation NONE.
- Quantized types follow the TFLite integer arithmetic (operands.md §8.5): ADD rescales both sides to
  2·max(s1, s2) with a left shift of 20; MUL uses one multiplier s1·s2/s_out, so a quantized MUL
  needs s_out > s1·s2.
- The accelerator kernel (``binary.cl``) runs float32, int32 and quant8_asymm; its quantized path is
  the reference's integer arithmetic bit for bit (the same multipliers, from gpu_driver.quant).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import (broadcast_strides, ctype, float_act, known, numel, pad_dims,
                                         params_ok, scalars_constant, Work)
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, broadcast_shapes, fuse_code, require
from .registry import operation
from .signature import ARITH_TYPES, F32, I32, Q8A, Q8AS, RANK_UP_TO_4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_QUANT8 = (Q8A, Q8AS)
#: quantized ADD's left shift of both rescaled inputs (TFLite)
ADD_LEFT_SHIFT = 20


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class BinaryParams(OpParams):
    activation: int = 0


# ---- signatures --------------------------------------------------------------------------------------

def _check_mul(ctx: OpContext, t: OperandType) -> int:
    if t in _QUANT8:
        a, b, out = ctx.inp(0), ctx.inp(1), ctx.out(0)
        if not float(out.scale) > float(a.scale) * float(b.scale):
            ctx.fail(f"quantized output scale {out.scale} must exceed the input scale product "
                     f"{float(a.scale) * float(b.scale)}")
    return 1


_BINARY_VARIANTS = (Variant("binary", ("T", "T", i32), ("T",)),)
ADD_SIGNATURE = OpSignature(ARITH_TYPES, _BINARY_VARIANTS, ranks={0: RANK_UP_TO_4, 1: RANK_UP_TO_4},
                            out_ranks={0: RANK_UP_TO_4})
MUL_SIGNATURE = OpSignature(ARITH_TYPES, _BINARY_VARIANTS, ranks={0: RANK_UP_TO_4, 1: RANK_UP_TO_4},
                            out_ranks={0: RANK_UP_TO_4}, check=_check_mul)


# ---- definition helpers ------------------------------------------------------------------------------

def _define_binary(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    a, b, act = inputs
    activation = fuse_code(act, name)
    if a.type == OperandType.TENSOR_INT32:
        require(activation == 0, name, "TENSOR_INT32 arithmetic allows only fused activation NONE")
    shape = broadcast_shapes(a.dims(), b.dims(), name)
    return BinaryParams(output_shapes=[shape], activation=activation)


def fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    """The fuse code is input 2."""
    return 2 if len(inputs) >= 3 else None


# ---- reference kernels -------------------------------------------------------------------------------

def apply_float_activation(x: np.ndarray, activation: int) -> np.ndarray:
    lo, hi = quant.activation_range_float(activation)
    return np.clip(x, lo, hi).astype(x.dtype) if activation else x


def _add_multipliers(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> list[tuple[int, int]]:
    """TFLite quantized ADD's (multiplier, shift) of each side (rescaled to 2·max(s1, s2), then shifted
    left by ADD_LEFT_SHIFT) and of the sum (back to the output scale)."""
    twice_max = 2.0 * max(a.scale, b.scale)
    return [quant.quantize_multiplier_smaller_than_one(a.scale / twice_max),
            quant.quantize_multiplier_smaller_than_one(b.scale / twice_max),
            quant.quantize_multiplier_smaller_than_one(twice_max / ((1 << ADD_LEFT_SHIFT) * out.scale))]


def _mul_multiplier(a: TensorInfo, b: TensorInfo, out: TensorInfo) -> tuple[int, int]:
    """TFLite quantized MUL's one (multiplier, shift): s1·s2/s_out."""
    return quant.quantize_multiplier_smaller_than_one(a.scale * b.scale / out.scale)


def _quant_add(a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    (m1, s1), (m2, s2), (mo, so) = _add_multipliers(a, b, out)
    xa = quant.multiply_by_quantized_multiplier_smaller_than_one(
        (x.astype(np.int64) - a.zero_point) * (1 << ADD_LEFT_SHIFT), m1, s1)
    yb = quant.multiply_by_quantized_multiplier_smaller_than_one(
        (y.astype(np.int64) - b.zero_point) * (1 << ADD_LEFT_SHIFT), m2, s2)
    return quant.multiply_by_quantized_multiplier_smaller_than_one(xa + yb, mo, so) + out.zero_point


def _quant_mul(a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    m, s = _mul_multiplier(a, b, out)
    prod = (x.astype(np.int64) - a.zero_point) * (y.astype(np.int64) - b.zero_point)
    return quant.multiply_by_quantized_multiplier(prod, m, s) + out.zero_point


def _run_binary(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo],
                op: Callable[[np.ndarray, np.ndarray], np.ndarray],
                quantized: Callable[..., np.ndarray]) -> list[np.ndarray]:
    a, b = inputs[0], inputs[1]
    out = outputs[0]
    x, y = a.array(), b.array()
    shape = params.output_shapes[0]
    if a.type == OperandType.TENSOR_INT32:  # wrapping int32 arithmetic, no activation
        return [np.broadcast_to(op(x.astype(np.int64), y.astype(np.int64)).astype(np.int32), shape).copy()]
    if not a.is_quantized:
        r = apply_float_activation(op(x, y).astype(x.dtype), params.activation)
        return [np.broadcast_to(r, shape).astype(x.dtype)]
    qmin, qmax = out.qrange
    lo, hi = quant.activation_range_quantized(params.activation, out.scale, out.zero_point, qmin, qmax)
    r = np.clip(quantized(a, b, out, x, y), lo, hi).astype(out.dtype)
    return [np.broadcast_to(r, shape).copy()]


def reference_add(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _run_binary(params, inputs, outputs, np.add, _quant_add)


def reference_mul(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _run_binary(params, inputs, outputs, np.multiply, _quant_mul)


# ---- lowering ----------------------------------------------------------------------------------------

def supports_binary(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [2]):
        return False
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    if not known(a, b, out) or a.type != b.type or out.type != a.type or a.type not in (F32, Q8A, I32):
        return False
    if len(a.shape) > 4 or len(b.shape) > 4:
        return False
    if a.type == Q8A and ctx.node.type == OperationType.MUL and not out.scale > a.scale * b.scale:
        return False
    return True


def _quant_defines(op: OperationType, a: TensorInfo, b: TensorInfo, out: TensorInfo, activation: int) -> dict:
    qmin, qmax = out.qrange
    lo, hi = quant.activation_range_quantized(activation, out.scale, out.zero_point, qmin, qmax)
    d = {"ZA": a.zero_point, "ZB": b.zero_point, "ZO": out.zero_point, "ACT_MIN": lo, "ACT_MAX": hi,
         "LEFT_SHIFT": ADD_LEFT_SHIFT, "M1": 0, "S1": 0, "M2": 0, "S2": 0}
    if op == OperationType.ADD:
        (d["M1"], d["S1"]), (d["M2"], d["S2"]), (d["MO"], d["SO"]) = _add_multipliers(a, b, out)
    else:
        d["MO"], d["SO"] = _mul_multiplier(a, b, out)
    return d


def lower_binary(ctx: LoweringContext) -> None:
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    out_shape = pad_dims(ctx.params.output_shapes[0])
    count = numel(out_shape)
    if count == 0:
        return
    same = tuple(a.shape) == tuple(b.shape) == tuple(ctx.params.output_shapes[0])
    sa, sb = broadcast_strides(a.shape, out_shape), broadcast_strides(b.shape, out_shape)
    defines = {"T": ctype(a), "COUNT": count, "OP": 0 if ctx.node.type == OperationType.ADD else 1,
               "BCAST": int(not same), "QUANT": int(a.type == Q8A), "INT": int(a.type == I32)}
    for k in range(4):
        defines[f"D{k}"] = out_shape[k]
        defines[f"SA{k}"] = sa[k]
        defines[f"SB{k}"] = sb[k]
    if a.type == Q8A:
        defines.update(_quant_defines(ctx.node.type, a, b, out, ctx.params.activation))
        defines.update({"HAS_ACT": 0, "ACT_FMIN": 0.0, "ACT_FMAX": 0.0})
    else:
        defines.update(float_act(*quant.activation_range_float(ctx.params.activation)))
        defines.update({"ZA": 0, "ZB": 0, "ZO": 0, "ACT_MIN": 0, "ACT_MAX": 0, "LEFT_SHIFT": ADD_LEFT_SHIFT,
                        "M1": 0, "S1": 0, "M2": 0, "S2": 0, "MO": 0, "SO": 0})
    ctx.emit("binary.cl", defines, [ctx.input(0), ctx.input(1)], [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.ADD, signature=ADD_SIGNATURE, reference=reference_add, lower=lower_binary,
           supports=supports_binary, fused_activation_input=fused_activation_input)
def add(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    return _define_binary("ADD", inputs, outputs)


@operation(OperationType.MUL, signature=MUL_SIGNATURE, reference=reference_mul, lower=lower_binary,
           supports=supports_binary, fused_activation_input=fused_activation_input)
def mul(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    a, b, _ = inputs
    if a.type in _QUANT8:
        out = outputs[0]
        require(out.scale > a.scale * b.scale, "MUL",
                f"quantized output scale {out.scale} must exceed the input scale product {a.scale * b.scale}")
    return _define_binary("MUL", inputs, outputs)
