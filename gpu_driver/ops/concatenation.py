"""CONCATENATION and PACK: join tensors along an existing axis, or stack them along a new one.

- CONCATENATION: n ≥ 1 tensors of one rank (1..4), equal off the axis, then ``axis`` ∈ [0, rank)
  (no negative axis); zero-sized inputs contribute nothing.  Inputs whose quantization equals the
  output's are byte copies.  Quantized inputs with other (scale, zero point) are requantised into the
  output's with TFLite's fp32 arithmetic (operands.md §8.2); a Q8A model doing that needs feature
  level 3.
- PACK (feature level 6): ``axis`` ∈ [0, R] first, then N ≥ 1 tensors of one shape (rank R ≥ 1, not
  zero-sized), every quantized input with the output's quantization; ``np.stack(inputs, axis)``.

Both lower to one copy kernel launch for up to 32 non-empty inputs, each work item a block of one
row of one input (PACK is a concatenation of the inputs each viewed with an axis of size 1); float16
is copied as its bits.  A requantised input has a launch of its own and reads its 256 possible
outputs from a table made by the reference's own requantization, so it is exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler import autotune
from ..compiler.lowering_helpers import bits_ctype, known, params_ok, scalars_constant, Work
from ..hal.types import OperandType, OperationType
from ..sizes import element_count
from .definition import OpParams, TensorInfo, require, require_nonempty, same_quant_as_input
from .registry import operation
from .signature import (F16, F32, I32, Q8A, Q8AS, RANK_UP_TO_4, STD_TYPES, OpContext, OpSignature, Variant, float_eq,
                        i32)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class ConcatenationParams(OpParams):
    """The output viewed as [outer, Σ axis_sizes, inner]: tensor input i (model input ``first + i``)
    fills the slab of ``axis_sizes[i]`` after the previous ones (PACK: every size is 1).

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
    first: int = 0
    requantize: tuple[bool, ...] = ()
    requant_scale: tuple[float, ...] = ()
    requant_bias: tuple[float, ...] = ()
    output_zero_point: int = 0
    qmin: int = 0
    qmax: int = 0


# ---- signatures -----------------------------------------------------------------------------------------

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


def check_pack(ctx: OpContext, t: OperandType) -> int:
    """Tensors of one rank R ≥ 1, output rank R + 1, quantized tensors with the output's quantization."""
    tensors = [ctx.inp(i) for i in range(1, len(ctx.op.inputs))]
    ranks = {ctx.rank(a) for a in tensors} - {None}
    if len(ranks) > 1:
        ctx.fail(f"inputs have different ranks {sorted(ranks)}")
    out_rank = ctx.rank(ctx.out(0))
    if ranks and out_rank is not None and out_rank != min(ranks) + 1:
        ctx.fail(f"output rank {out_rank} is not the input rank {min(ranks)} + 1")
    if out_rank is not None and out_rank < 2:
        ctx.fail(f"output rank {out_rank} is below 2")
    if t in (Q8A, Q8AS):
        out = ctx.out(0)
        for i, a in enumerate(tensors, 1):
            if not float_eq(a.scale, out.scale) or a.zero_point != out.zero_point:
                ctx.fail(f"input {i} scale/zeroPoint ({a.scale}, {a.zero_point}) must equal the output's "
                         f"({out.scale}, {out.zero_point})")
    return 6


#: the axis, then N ≥ 1 tensors
PACK_SIGNATURE = OpSignature(
    {F32: 6, F16: 6, I32: 6, Q8A: 6, Q8AS: 6}, (Variant("pack", (i32, "T"), ("T",), variadic_last=True),),
    primary=1, check=check_pack)


# ---- reference kernels ----------------------------------------------------------------------------------

def requantized(q: np.ndarray, p: ConcatenationParams, i: int, dtype) -> np.ndarray:
    """Quantized values ``q`` of tensor input i in the output's quantization (a copy when it has it)."""
    if not p.requantize[i]:
        return np.asarray(q).astype(dtype, copy=False)
    v = np.asarray(q).astype(np.float32) * np.float32(p.requant_scale[i]) + np.float32(p.requant_bias[i])
    return np.clip(quant.round_half_away(v).astype(np.int64) + p.output_zero_point, p.qmin, p.qmax).astype(dtype)


def concatenation_reference(p: ConcatenationParams, inputs: list[TensorInfo],
                            outputs: list[TensorInfo]) -> list[np.ndarray]:
    out = outputs[0]
    parts = [requantized(t.array(), p, i, out.dtype) for i, t in enumerate(inputs[:-1])]
    return [np.concatenate(parts, axis=p.axis).reshape(p.output_shapes[0])]


def pack_reference(p: ConcatenationParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [np.stack([t.array() for t in inputs[1:]], axis=p.axis).astype(outputs[0].dtype, copy=False)]


# ---- lowering (concatenation_rows.cl, concatenation.cl) -----------------------------------------------

def concatenation_supported(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    p = ctx.params
    axis_input = 0 if p.first else len(ctx.node.inputs) - 1
    if not scalars_constant(ctx, [axis_input]):
        return False
    tensors, out = ctx.inputs[p.first:p.first + len(p.axis_sizes)], ctx.outputs[0]
    return known(*tensors, out) and out.type in (F32, F16, I32, Q8A, Q8AS) and all(t.type == out.type for t in tensors)


#: inputs one concatenation_rows.cl launch copies at most
ROWS_MAX_INPUTS = 32


def lower_concatenation(ctx: LoweringContext) -> None:
    """The plain copies in one ``concatenation_rows.cl`` launch per ROWS_MAX_INPUTS inputs; a
    requantised input in a ``concatenation.cl`` launch of its own."""
    p = ctx.params
    out = ctx.outputs[0]
    out_row = sum(p.axis_sizes) * p.inner
    plain: list[tuple[int, int, int]] = []   # (input position, row length, offset in an output row)
    offset = 0
    for i, size in enumerate(p.axis_sizes):
        in_row = size * p.inner
        if p.outer * in_row:
            if p.requantize and p.requantize[i]:
                d = {"T": bits_ctype(out), "COUNT": p.outer * in_row, "IN_ROW": in_row, "OUT_ROW": out_row,
                     "OFFSET": offset, "QMIN": p.qmin}
                table = ctx.constant(requantized(np.arange(p.qmin, p.qmax + 1), p, i, out.dtype))
                ctx.emit("concatenation.cl", d, [ctx.input(p.first + i), table], [ctx.output(0)],
                         (p.outer * in_row,), Work.ELEMENTS)
            else:
                plain.append((p.first + i, in_row, offset))
        offset += in_row
    block = max(1, min(autotune.target_tuning().element_run, 256))
    for start in range(0, len(plain), ROWS_MAX_INPUTS):
        part = plain[start:start + ROWS_MAX_INPUTS]
        select, items = [], 0
        for k, (_, row, off) in enumerate(part):
            blocks = -(-row // block)
            first, items = items, items + p.outer * blocks
            test = f"if (g < {items}) " if k < len(part) - 1 else ""
            select.append(f"{'else ' if k else ''}{test}{{ src = in{k}; item = g - {first}; row = {row}; "
                          f"off = {off}; blocks = {blocks}; }}")
        t = bits_ctype(out)
        params = [f"GLOBAL const {t}* RESTRICT in{k}" for k in range(len(part))] + [f"GLOBAL {t}* RESTRICT out"]
        d = {"T": t, "PARAMS": ", ".join(params), "SELECT": "\n    ".join(select), "ITEMS": items,
             "BLOCK": block, "OUT_ROW": out_row}
        ctx.emit("concatenation_rows.cl", d, [ctx.input(i) for i, _, _ in part], [ctx.output(0)], (items,),
                 Work.ELEMENTS)


# ---- the operations -------------------------------------------------------------------------------------

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


@operation(OperationType.PACK, signature=PACK_SIGNATURE, reference=pack_reference, lower=lower_concatenation,
           supports=concatenation_supported)
def pack(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ConcatenationParams:
    name = "PACK"
    axis, tensors = inputs[0].scalar(), inputs[1:]
    require(len(tensors) >= 1, name, "needs at least one input tensor")
    shape = tensors[0].dims()
    rank = len(shape)
    require(rank >= 1, name, "input rank must be at least 1")
    require(0 <= axis <= rank, name, f"axis {axis} out of range [0, {rank}]")
    for i, t in enumerate(tensors[1:], 1):
        require(t.dims() == shape, name, f"input tensor {i} shape {list(t.dims())} differs from {list(shape)}")
        same_quant_as_input(t, outputs[0], name)
    same_quant_as_input(tensors[0], outputs[0], name)
    require_nonempty(shape, name)
    out_shape = (*shape[:axis], len(tensors), *shape[axis:])
    return ConcatenationParams(output_shapes=[out_shape], axis=axis, axis_sizes=(1,) * len(tensors),
                               outer=element_count(shape[:axis]), inner=element_count(shape[axis:]), first=1,
                               requantize=(False,) * len(tensors))
