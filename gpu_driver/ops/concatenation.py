"""CONCATENATION: join n ≥ 1 tensors of one rank (1..4) along ``axis`` ∈ [0, rank).

Inputs whose quantization equals the output's are byte copies (exact).  Quantized inputs with other
(scale, zero point) are requantised into the output's with TFLite's fp32 arithmetic (operands.md
§8.2), which a Q8A model needs feature level 3 for.  The lowering runs one copy kernel per input,
float32 and quant8_asymm.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import ctype, known, params_ok, scalars_constant, Work
from ..hal.types import OperandType, OperationType
from ..sizes import element_count
from .definition import OpParams, TensorInfo, require
from .registry import operation
from .signature import F32, Q8A, RANK_UP_TO_4, STD_TYPES, OpContext, OpSignature, Variant, float_eq, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class ConcatenationParams(OpParams):
    """``axis`` (non-negative); ``axis_sizes``: each input's extent on the axis (its offset in the
    output is the sum of the previous ones); ``outer``/``inner``: element counts before/after the axis.

    Quantized inputs whose (scale, zero point) differ from the output's are requantised with fp32
    arithmetic (operands.md §8.2, TFLite):
    ``q_out = clamp(int(round_half_away(q·requant_scale[i] + requant_bias[i])) + output_zero_point,
    qmin, qmax)`` where ``requant_scale = s_in · (1 / s_out)`` and ``requant_bias = −zp_in · requant_scale``
    (both float32).  ``requantize[i]`` is False where input i is a plain copy.
    """

    axis: int = 0
    axis_sizes: tuple[int, ...] = ()
    outer: int = 1
    inner: int = 1
    requantize: tuple[bool, ...] = ()
    requant_scale: tuple[float, ...] = ()
    requant_bias: tuple[float, ...] = ()
    output_zero_point: int = 0
    qmin: int = 0
    qmax: int = 0


# ---- signature ------------------------------------------------------------------------------------------

def check_concatenation(ctx: OpContext, t: OperandType) -> int:
    """One rank for every input and the output; Q8A inputs requantised into the output need FL3."""
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
            if not float_eq(a.scale, out.scale) or a.zero_point != out.zero_point:
                return 3
    return 1


#: n ≥ 1 tensors, then the axis
CONCATENATION_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("concat", ("T", i32), ("T",), variadic=True),), out_ranks={0: RANK_UP_TO_4},
    variadic_ranks=RANK_UP_TO_4, check=check_concatenation)


# ---- reference kernel -----------------------------------------------------------------------------------

def concatenation_reference(p: ConcatenationParams, inputs: list[TensorInfo],
                            outputs: list[TensorInfo]) -> list[np.ndarray]:
    out = outputs[0]
    parts = []
    for i, t in enumerate(inputs[:-1]):
        a = t.array()
        if p.requantize[i]:
            v = a.astype(np.float32) * np.float32(p.requant_scale[i]) + np.float32(p.requant_bias[i])
            a = np.clip(quant.round_half_away(v).astype(np.int64) + p.output_zero_point, p.qmin, p.qmax)
        parts.append(a.astype(out.dtype, copy=False))
    return [np.concatenate(parts, axis=p.axis).reshape(p.output_shapes[0])]


# ---- lowering -------------------------------------------------------------------------------------------

def concatenation_supported(ctx: LoweringContext) -> bool:
    n = len(ctx.node.inputs)
    if not params_ok(ctx) or not scalars_constant(ctx, [n - 1]):
        return False
    tensors, out = ctx.inputs[:-1], ctx.outputs[0]
    return (known(*tensors, out) and out.type in (F32, Q8A) and all(t.type == out.type for t in tensors))


def lower_concatenation(ctx: LoweringContext) -> None:
    """One concatenation.cl launch per non-empty input, writing its slab of every output row."""
    p = ctx.params
    out = ctx.outputs[0]
    out_row = sum(p.axis_sizes) * p.inner
    offset = 0
    for i, size in enumerate(p.axis_sizes):
        in_row = size * p.inner
        count = p.outer * in_row
        if count:
            requant = bool(p.requantize[i]) if p.requantize else False
            d = {"T": ctype(out), "COUNT": count, "IN_ROW": in_row, "OUT_ROW": out_row, "OFFSET": offset,
                 "REQUANT": int(requant), "RS": p.requant_scale[i] if requant else 0.0,
                 "RB": p.requant_bias[i] if requant else 0.0, "ZO": p.output_zero_point,
                 "QMIN": p.qmin, "QMAX": p.qmax}
            ctx.emit("concatenation.cl", d, [ctx.input(i)], [ctx.output(0)], (count,), Work.ELEMENTS)
        offset += in_row


# ---- the operation --------------------------------------------------------------------------------------

@operation(OperationType.CONCATENATION, signature=CONCATENATION_SIGNATURE, reference=concatenation_reference,
           lower=lower_concatenation, supports=concatenation_supported)
def concatenation(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ConcatenationParams:
    name = "CONCATENATION"
    tensors, axis_info = inputs[:-1], inputs[-1]
    require(len(tensors) >= 1, name, "needs at least one input tensor")
    axis = axis_info.scalar()
    shapes = [t.dims() for t in tensors]
    rank = len(shapes[0])
    require(1 <= rank <= 4, name, f"input rank must be 1..4, got {rank}")
    require(0 <= axis < rank, name, f"axis {axis} out of range [0, {rank})")
    for i, s in enumerate(shapes):
        require(len(s) == rank, name, f"input {i} has rank {len(s)}, input 0 has rank {rank}")
        for d in range(rank):
            require(d == axis or s[d] == shapes[0][d], name,
                    f"input {i} shape {list(s)} differs from input 0 shape {list(shapes[0])} off the axis")
    sizes = tuple(s[axis] for s in shapes)
    out_shape = list(shapes[0])
    out_shape[axis] = sum(sizes)
    params = ConcatenationParams(output_shapes=[tuple(out_shape)], axis=axis, axis_sizes=sizes,
                                 outer=element_count(out_shape[:axis]), inner=element_count(out_shape[axis + 1:]),
                                 requantize=(False,) * len(tensors))
    out = outputs[0]
    if out.is_quantized:
        inv = np.float32(1.0) / np.float32(out.scale)
        req, scales, biases = [], [], []
        for t in tensors:
            same = np.float32(t.scale) == np.float32(out.scale) and t.zero_point == out.zero_point
            f = np.float32(t.scale) * inv
            req.append(not same)
            scales.append(float(f))
            biases.append(float(np.float32(-t.zero_point) * f))
        params.requantize, params.requant_scale, params.requant_bias = tuple(req), tuple(scales), tuple(biases)
        params.output_zero_point = out.zero_point
        params.qmin, params.qmax = out.qrange
    return params
