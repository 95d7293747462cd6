"""FULLY_CONNECTED (HAL 1.0): out[B, U] = act(X[B, I]·Wᵀ + bias).

Input 0 (rank 2–4) is viewed as [batch, input_size] rows.  Reference: float (F32, F16 computed in
fp32) and exact quantized arithmetic (operands.md §8.5).  Lowering: float32 and quant8_asymm with
constant weights and bias, repacked to [U/UB][I][UB] blocks of UB units (zero point folded in for
quant8); quantized results equal the reference's integer arithmetic exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import act_defines, ceil_div, ctype, known, params_ok, scalars_constant
from ..hal.types import OperandType, OperationType
from ..sizes import element_count
from .definition import TensorInfo, require
from .fused_activation import (ActivationParams, Requantization, activation_fields, centred, finish_float,
                               requantization, requantization_feature_level, requantize)
from .registry import operation
from .signature import F32, I32, Q8A, STD_TYPES, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class FullyConnectedParams(ActivationParams):
    """Input 0 (rank 2–4) is viewed as [batch, input_size]; weights [num_units, input_size];
    bias [num_units]; output [batch, num_units].  ``quant`` (None for float types) holds the
    requantisation constants (per-tensor: every entry of output_multiplier/output_shift equal)."""

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    quant: Requantization | None = None


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

def supports_fully_connected(ctx: LoweringContext) -> bool:
    """Shapes known, constant weights/bias/fuse code; float32, or quant8_asymm throughout."""
    if not params_ok(ctx) or not scalars_constant(ctx, [3]):
        return False
    x, w, b = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    out = ctx.outputs[0]
    if not known(x, out) or not (ctx.is_constant(1) and ctx.is_constant(2)):
        return False
    if x.type == F32:
        return w.type == F32 and b.type == F32 and out.type == F32
    if x.type == Q8A:
        return w.type == Q8A and b.type == I32 and out.type == Q8A and ctx.params.quant is not None
    return False


def lower_fully_connected(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    x, out = ctx.inputs[0], ctx.outputs[0]
    quant = x.type == Q8A
    w = ctx.inputs[1].array()                           # [U, I]
    if quant:
        wq = w.astype(np.int32) - np.int32(p.quant.filter_zero_point)
        bias = ctx.inputs[2].array().astype(np.int32)
    else:
        wq = w.astype(np.float32)
        bias = ctx.inputs[2].array().astype(np.float32)
    units, size = p.num_units, p.input_size
    ub = 16 if units >= 16 else 8 if units >= 8 else 4 if units >= 4 else units
    ublocks = ceil_div(units, ub)
    padded = np.zeros((ublocks * ub, size), dtype=wq.dtype)
    padded[:units] = wq
    packed = padded.reshape(ublocks, ub, size).transpose(0, 2, 1)     # [UBLOCKS][I][UB]
    pbias = np.zeros(ublocks * ub, dtype=bias.dtype)
    pbias[:units] = bias
    bb = min(4, p.batch)
    blocks = ceil_div(p.batch, bb)
    d = {"T": ctype(x), "ACC_T": "int" if quant else "float", "QUANT": int(quant), "U": units,
         "I": size, "B": p.batch, "BB": bb, "BBLOCKS": blocks, "UB": ub, "UBLOCKS": ublocks,
         "ZX": p.quant.input_zero_point if quant else 0, "ZO": p.quant.output_zero_point if quant else 0,
         "MULT": p.quant.output_multiplier[0] if quant else 0, "SHIFT": p.quant.output_shift[0] if quant else 0}
    d.update(act_defines(p, out))
    ctx.emit("fully_connected.cl", d, [ctx.input(0), ctx.constant(packed), ctx.constant(pbias)],
             [ctx.output(0)], (ublocks, blocks))


# ---- the operation ----------------------------------------------------------------------------------

def fully_connected_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return 3 if len(inputs) >= 4 else None


@operation(OperationType.FULLY_CONNECTED, signature=FULLY_CONNECTED_SIGNATURE, reference=reference_fully_connected,
           lower=lower_fully_connected, supports=supports_fully_connected,
           fused_activation_input=fully_connected_fused_activation_input)
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
