"""FULLY_CONNECTED (HAL 1.0), float32 and quant8_asymm; weights and bias must be constants.

Weights are repacked to [U/UB][I][UB] blocks of UB units (zero point folded in for quant8); quantized results equal the
reference's integer arithmetic exactly.
"""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, I32, Q8A, act_defines, ceil_div, ctype, known, params_ok, scalars_constant


def _supports(ctx: LoweringContext) -> bool:
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


@lowering(OperationType.FULLY_CONNECTED, supports=_supports)
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
