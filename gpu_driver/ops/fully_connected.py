"""FULLY_CONNECTED (HAL 1.0): out[B, U] = act(X[B, I]·Wᵀ + bias).

Input 0 (rank 2–4) is viewed as [batch, input_size] rows.  Reference: float (F32, F16 computed in
fp32) and exact quantized arithmetic (operands.md §8.5).  Lowering: float32 and quant8 (asymm or
signed) with constant weights and bias are a GEMM (gpu_driver.ops.gemm: weights repacked at
preparation, zero point folded in, tile tuned per shape); every other case (float16, weights or bias
given as model inputs) runs as a 1×1 convolution over a 1×1 image of ``batch`` rows through
``conv_general.cl``.  Quantized results equal the reference's integer arithmetic exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import act_defines, ctype, known, params_ok, scalars_constant
from ..hal.types import OperandType, OperationType
from ..sizes import element_count
from .conv import Conv2DParams, filter_rows_multiply_adds, lower_conv_general
from .definition import TensorInfo, require
from .gemm import lower_gemm
from .fused_activation import (ActivationParams, Requantization, activation_fields, centred, finish_float,
                               requantization, requantization_feature_level, requantize)
from .registry import operation
from .signature import F32, I32, Q8A, Q8AS, STD_TYPES, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class FullyConnectedParams(ActivationParams):
    """Input 0 (rank 2–4) is viewed as [batch, input_size]; weights [num_units, input_size];
    bias [num_units]; output [batch, num_units].  ``quant`` (None for float types) holds the
    requantisation constants (per-tensor: every entry of output_multiplier/output_shift equal).
    ``residual``: a float ADD fused into this operation (compiler/fusion.py): the node's last input,
    [batch, num_units], is added before the fused activation (the ADD's).  ``input_scale``: a float
    MUL of the input by a vector of input_size fused into it: that vector is the node's last input
    (before the residual), and each input element is scaled by it."""

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    quant: Requantization | None = None
    residual: bool = False
    input_scale: bool = False


# ---- signature --------------------------------------------------------------------------------------

def _check_fully_connected(ctx: OpContext, t: OperandType) -> int:
    return requantization_feature_level(ctx, t, ctx.inp(1))


FULLY_CONNECTED_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("fc", ("T", "T", "B", i32), ("T",)),),
    ranks={0: (2, 4), 1: (2, 2), 2: (1, 1)}, out_ranks={0: (2, 2)}, check=_check_fully_connected)


# ---- reference kernel -------------------------------------------------------------------------------

def reference_fully_connected(p: FullyConnectedParams, inputs: list[TensorInfo],
                              outputs: list[TensorInfo]) -> list[np.ndarray]:
    out = outputs[0]
    if p.batch == 0:
        return [np.zeros(p.output_shapes[0], dtype=out.dtype)]
    q = p.quant
    x = centred(inputs[0], q.input_zero_point if q else 0).reshape(p.batch, p.input_size)
    w = centred(inputs[1], q.filter_zero_point if q else 0)
    acc = x @ w.T  # float64: exact for the quantized integer products
    bias = inputs[2].array()
    if q is not None:
        return [requantize(np.rint(acc).astype(np.int64) + bias.astype(np.int64), q, p, out.dtype)]
    return [finish_float(acc + bias.astype(np.float64), p, out.dtype)]


# ---- lowering ---------------------------------------------------------------------------------------

def _supports_tiled(ctx: LoweringContext) -> bool:
    """Constant weights and bias; float32, or quant8 (asymm or signed) throughout."""
    x, w, b, out = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    if not (ctx.is_constant(1) and ctx.is_constant(2)):
        return False
    if x.type == F32:
        return w.type == F32 and b.type == F32 and out.type == F32
    return x.type in (Q8A, Q8AS) and w.type == x.type and b.type == I32 and out.type == x.type \
        and ctx.params.quant is not None


def supports_fully_connected(ctx: LoweringContext) -> bool:
    """Shapes known and a constant fuse code (every type; weights and bias constant or model inputs)."""
    return params_ok(ctx) and scalars_constant(ctx, [3]) and known(ctx.inputs[0], ctx.outputs[0])


def _as_conv(p: FullyConnectedParams) -> Conv2DParams:
    """The same product as a 1×1 convolution over ``batch`` images of 1×1 pixel (filter [U, 1, 1, I])."""
    return Conv2DParams(output_shapes=p.output_shapes, activation=p.activation, float_min=p.float_min,
                        float_max=p.float_max, act_min=p.act_min, act_max=p.act_max, batch=p.batch, in_h=1,
                        in_w=1, in_c=p.input_size, out_h=1, out_w=1, out_c=p.num_units, quant=p.quant)


def lower_fully_connected(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    if not _supports_tiled(ctx):
        lower_conv_general(ctx, _as_conv(p))
        return
    w = ctx.inputs[1].array()                           # [U, I]
    bias = ctx.inputs[2].array()
    if p.quant is not None:
        w, bias = w.astype(np.int32) - np.int32(p.quant.filter_zero_point), bias.astype(np.int32)
    else:
        w, bias = w.astype(np.float32), bias.astype(np.float32)
    lower_gemm(ctx, ctx.input(0), p.batch, w, bias, p.quant, ctype(ctx.inputs[0]),
               act_defines(p, ctx.outputs[0]))


def fully_connected_accepts_residual(ctx: LoweringContext) -> bool:
    """Float32 with constant weights and bias (the GEMM) adds a residual tensor in its epilogue (and
    applies a PRELU by a vector of num_units after its activation)."""
    p = ctx.params
    return p.batch > 0 and p.quant is None and _supports_tiled(ctx)


def fully_connected_accepts_input_scale(ctx: LoweringContext) -> bool:
    """The GEMM scales its input's elements by a vector when each row of input_size is one row of
    the input's last axis."""
    return fully_connected_accepts_residual(ctx) and ctx.inputs[0].shape[-1] == ctx.params.input_size


# ---- the operation ----------------------------------------------------------------------------------

def fully_connected_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return 3 if len(inputs) >= 4 else None


@operation(OperationType.FULLY_CONNECTED, signature=FULLY_CONNECTED_SIGNATURE, reference=reference_fully_connected,
           lower=lower_fully_connected, supports=supports_fully_connected,
           fused_activation_input=fully_connected_fused_activation_input, multiply_adds=filter_rows_multiply_adds,
           accepts_residual=fully_connected_accepts_residual, accepts_input_scale=fully_connected_accepts_input_scale,
           accepts_prelu=fully_connected_accepts_residual)
def fully_connected(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> FullyConnectedParams:
    name = "FULLY_CONNECTED"
    inp, weights, bias, act = inputs[:4]
    dims = inp.dims()
    require(2 <= len(dims) <= 4, name, f"input rank must be 2..4, got shape {list(dims)}")
    wdims = weights.dims()
    require(len(wdims) == 2, name, f"weights must be rank 2 [num_units, input_size], got {list(wdims)}")
    units, size = wdims
    require(units > 0 and size > 0, name, f"weights dimensions {list(wdims)} must be > 0")
    bdims = bias.dims()
    require(len(bdims) == 1 and bdims[0] == units, name, f"bias shape {list(bdims)} must be [{units}]")
    numel = element_count(dims)
    require(numel % size == 0, name, f"input of {numel} elements is not a whole number of rows of {size}")
    batch = numel // size
    return FullyConnectedParams(output_shapes=[(batch, units)], **activation_fields(act, outputs[0], name),
                                batch=batch, input_size=size, num_units=units,
                                quant=requantization(inp, weights, bias, outputs[0], units, 0, name))
