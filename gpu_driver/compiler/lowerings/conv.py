"""CONV_2D and DEPTHWISE_CONV_2D (HAL 1.0 + dilation), NHWC, float32 and quant8_asymm.

Filters and biases must be constants: lowering repacks them (conv: [COB][KH][KW][CI][CB], blocks of CB
output channels, zero-padded, so a work item's weights are one unit-stride stream; depthwise:
[KH][KW][CO]), folds the filter zero point into int32 weights,
and bakes every size/stride/pad and the activation bounds in as literals.  Quantized results are the
reference's integer arithmetic exactly (int32 accumulation, MBQM with the params' per-channel
multipliers).  NCHW layout and per-channel (PC8) filters are refused.
"""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, I32, Q8A, act_defines, ceil_div, ctype, known, params_ok, \
    trailing_scalars_constant


def _supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 3):
        return False
    p = ctx.params
    x, f, b = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    out = ctx.outputs[0]
    if p.nchw or not known(x, out) or not (ctx.is_constant(1) and ctx.is_constant(2)):
        return False
    if x.type == F32:
        return f.type == F32 and b.type == F32 and out.type == F32
    if x.type == Q8A:
        return f.type == Q8A and b.type == I32 and out.type == Q8A and p.quant is not None
    return False


def _quant_table(p, count: int, padded: int) -> np.ndarray:
    m = np.zeros(padded, np.int32)
    s = np.zeros(padded, np.int32)
    m[:count] = p.quant.output_multiplier[:count]
    s[:count] = p.quant.output_shift[:count]
    return np.concatenate([m, s])


def _common(ctx, p) -> dict:
    x, out = ctx.inputs[0], ctx.outputs[0]
    quant = x.type == Q8A
    d = {"T": ctype(x), "ACC_T": "int" if quant else "float", "QUANT": int(quant),
         "H": p.in_h, "W": p.in_w, "CI": p.in_c, "OH": p.out_h, "OW": p.out_w, "CO": p.out_c,
         "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h, "SW": p.stride_w, "DH": p.dilation_h,
         "DW": p.dilation_w, "PT": p.pad_top, "PL": p.pad_left, "ROWS": p.batch * p.out_h,
         "ZX": p.quant.input_zero_point if quant else 0, "ZO": p.quant.output_zero_point if quant else 0}
    d.update(act_defines(p, out))
    return d


def _weights(ctx, p) -> np.ndarray:
    f = ctx.inputs[1].array()
    if ctx.inputs[0].type == Q8A:
        return f.astype(np.int32) - np.int32(p.quant.filter_zero_point)
    return f.astype(np.float32)


def _bias(ctx) -> np.ndarray:
    b = ctx.inputs[2].array()
    return b.astype(np.int32) if ctx.inputs[0].type == Q8A else b.astype(np.float32)


@lowering(OperationType.CONV_2D, supports=_supports)
def lower_conv2d(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    co = p.out_c
    gemm = (p.kernel_h == p.kernel_w == 1 and p.stride_h == p.stride_w == 1 and
            p.pad_top == p.pad_left == p.pad_bottom == p.pad_right == 0)
    npix = p.batch * p.out_h * p.out_w
    quant = ctx.inputs[0].type == Q8A
    # register tile: PX pixels x CB channels (16 channels = one AVX-512 / two AVX vectors of weights);
    # int32 quant8 tiles stay at 4 x 8 (larger ones spill: measured slower)
    most = 8 if quant else 16
    cb = most if co >= most else 8 if co >= 8 else 4 if co >= 4 else co
    cob = ceil_div(co, cb)
    cop = cob * cb
    w = _weights(ctx, p)                                 # [CO, KH, KW, CI]
    packed = np.zeros((cop, p.kernel_h, p.kernel_w, p.in_c), dtype=w.dtype)
    packed[:co] = w
    packed = packed.reshape(cob, cb, -1).transpose(0, 2, 1)    # [COB][KH*KW*CI][CB]
    bias = np.zeros(cop, dtype=w.dtype)
    bias[:co] = _bias(ctx)
    px = (4 if quant else 8) if gemm else _pixel_tile(p.out_w, 4)
    pblocks = ceil_div(npix if gemm else p.out_w, px)
    d = _common(ctx, p)
    d.update({"CB": cb, "COB": cob, "COP": cop, "PX": px, "PBLOCKS": pblocks, "GEMM": int(gemm),
              "NPIX": npix, "EXACT": int((npix if gemm else p.out_w) % px == 0),
              "UNROLL_TAPS": int(p.in_c * p.kernel_h * p.kernel_w <= 32)})
    if gemm:
        d["ROWS"] = 1
    inputs = [ctx.input(0), ctx.constant(packed), ctx.constant(bias)]
    if d["QUANT"]:
        inputs.append(ctx.constant(_quant_table(p, co, cop)))
    # explicit small work groups: PoCL's generic work-group function keeps per-work-item context
    # arrays on the worker's stack, sized by the work-group size (the int tile of quant8 spills
    # there; a PoCL-picked group of thousands of work items overflowed it).  Measured as fast as
    # PoCL's pick for float32.
    local = (min(cob, 16), min(pblocks, 4), 1)
    ctx.emit("conv2d.cl", d, inputs, [ctx.output(0)], (cob, pblocks, d["ROWS"]), local)


def _pixel_tile(width: int, most: int) -> int:
    """Pixels per work item along x: the largest tile <= ``most`` dividing ``width`` (no partial
    block), unless that is under half of ``most`` (then ``most``, with a bounds-checked last block)."""
    for t in range(min(most, width), 0, -1):
        if width % t == 0 and (2 * t >= most or t == width):
            return t
    return min(most, width)


def _dw_supports(ctx: LoweringContext) -> bool:
    return _supports(ctx)


@lowering(OperationType.DEPTHWISE_CONV_2D, supports=_dw_supports)
def lower_depthwise(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    w = _weights(ctx, p)[0]                             # [KH, KW, CO]
    px = _pixel_tile(p.out_w, 4)
    pblocks = ceil_div(p.out_w, px)
    d = _common(ctx, p)
    d.update({"M": p.depth_multiplier, "PX": px, "PBLOCKS": pblocks, "EXACT": int(p.out_w % px == 0)})
    inputs = [ctx.input(0), ctx.constant(np.ascontiguousarray(w)), ctx.constant(_bias(ctx))]
    if d["QUANT"]:
        inputs.append(ctx.constant(_quant_table(p, p.out_c, p.out_c)))
    # work groups of up to 64 consecutive channels (one row of one pixel block): PoCL's generic
    # work-group function vectorises its work-item loop across them; measured ~1.5x over PoCL's pick
    lane = next((c for c in range(64, 7, -8) if p.out_c % c == 0), None)
    ls = (lane, 1, 1) if lane else None
    ctx.emit("depthwise_conv2d.cl", d, inputs, [ctx.output(0)], (p.out_c, pblocks, d["ROWS"]), ls)
