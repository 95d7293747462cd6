"""CONV_2D and DEPTHWISE_CONV_2D (HAL 1.0, with the FL3 layout / dilation / per-channel extensions).

Definition: the params carry everything a kernel needs, NHWC-normalised (``nchw`` only says how
input 0 and output 0 are laid out in memory): shapes, resolved explicit padding, strides, dilations,
fused activation (float range and quantized clamp range), and for quantized types the requantisation
constants of operands.md §8.5 (one (multiplier, shift) pair per output channel, shift > 0 = left
shift, applied with MultiplyByQuantizedMultiplier to the int32 accumulator).

Reference: float (F32, F16 computed in fp32) and exact quantized arithmetic on (q − zp) products;
for CONV_2D through a float64 matrix product, which is exact here (every partial sum is an integer
far below 2^53).

Lowering (NHWC, float32 and quant8_asymm; NCHW layout and per-channel (PC8) filters are refused):
filters and biases must be constants.  The lowering repacks them (conv: [COB][KH][KW][CI][CB],
blocks of CB output channels, zero-padded, so a work item's weights are one unit-stride stream;
depthwise: [KH][KW][CO]), folds the filter zero point into int32 weights, and bakes every
size/stride/pad and the activation bounds in as literals.  Quantized results are the reference's
integer arithmetic exactly (int32 accumulation, MBQM with the params' per-channel multipliers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import (act_defines, ceil_div, ctype, known, params_ok, trailing_scalars_constant,
                                         Work)
from ..hal.types import OperandType, OperationType
from .definition import TensorInfo, require
from .fused_activation import (Requantization, activation_fields, centred, finish_float, requantization,
                               requantization_feature_level, requantize)
from .layout import from_nhwc, nhwc_dims, to_nhwc
from .registry import operation
from .signature import DILATION, F32, I32, LAYOUT, PC8, Q8A, RANK4, STD_TYPES, OpContext, OpSignature, \
    Variant, i32
from .window import Window2DParams, decode_window_args, fuse_code_input, pad_spatial, resolve_window, \
    window_fields, window_taps

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class Conv2DParams(Window2DParams):
    """CONV_2D: filter [out_c, kernel_h, kernel_w, in_c], bias [out_c].

    out[n,y,x,o] = act(bias[o] + Σ_{i,j,c} in[n, y·sh − pt + i·dh, x·sw − pl + j·dw, c]·filter[o,i,j,c]).
    ``quant`` is None for float types.
    """

    quant: Requantization | None = None


@dataclass
class DepthwiseConv2DParams(Conv2DParams):
    """DEPTHWISE_CONV_2D: filter [1, kernel_h, kernel_w, out_c], out_c = in_c·depth_multiplier.

    out[n,y,x,c·M+m] = act(bias[c·M+m] + Σ_{i,j} in[n, y·sh − pt + i·dh, x·sw − pl + j·dw, c]
                                                     ·filter[0,i,j,c·M+m]).
    """

    depth_multiplier: int = 1


# ---- signatures -------------------------------------------------------------------------------------

def _check_conv(ctx: OpContext, t: OperandType, channel_dim: int) -> int:
    filt = ctx.inp(1)
    if filt.type == PC8:
        cq = filt.extra_params
        if cq.channel_dim != channel_dim:
            ctx.fail(f"per-channel filter must have channelDim {channel_dim}, got {cq.channel_dim}")
        if float(ctx.inp(2).scale) != 0.0:
            ctx.fail("the bias of a per-channel quantized filter must have scale 0")
    return requantization_feature_level(ctx, t, filt)


def _check_conv2d(ctx: OpContext, t: OperandType) -> int:
    return _check_conv(ctx, t, 0)


def _check_depthwise(ctx: OpContext, t: OperandType) -> int:
    return _check_conv(ctx, t, 3)


CONV_2D_SIGNATURE = OpSignature(
    STD_TYPES,
    (Variant("implicit", ("T", "W", "B", i32, i32, i32, i32), ("T",), (LAYOUT, DILATION)),
     Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32), ("T",), (LAYOUT, DILATION))),
    ranks={0: RANK4, 1: RANK4, 2: (1, 1)}, out_ranks={0: RANK4}, check=_check_conv2d)

DEPTHWISE_CONV_2D_SIGNATURE = OpSignature(
    STD_TYPES,
    (Variant("implicit", ("T", "W", "B", i32, i32, i32, i32, i32), ("T",), (LAYOUT, DILATION)),
     Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32, i32), ("T",), (LAYOUT, DILATION))),
    ranks={0: RANK4, 1: RANK4, 2: (1, 1)}, out_ranks={0: RANK4}, check=_check_depthwise)


# ---- definition helpers -----------------------------------------------------------------------------

def _n_extras(depthwise: bool) -> int:
    """Scalars between the strides and the fuse code: the depth multiplier of DEPTHWISE_CONV_2D."""
    return 1 if depthwise else 0


def _explicit_padding(inputs: list[TensorInfo], n_extras: int) -> bool:
    """Explicit padding: enough inputs, and an INT32 (not the implicit layout's BOOL) at index 7 + extras."""
    return len(inputs) >= 10 + n_extras and inputs[7 + n_extras].type == OperandType.INT32


def _fused_activation_input(inputs: list[TensorInfo], depthwise: bool) -> int | None:
    n_extras = _n_extras(depthwise)
    explicit = _explicit_padding(inputs, n_extras)
    index = fuse_code_input(3, n_extras, explicit)
    return index if len(inputs) > index else None


def _conv(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo], depthwise: bool) -> Conv2DParams:
    inp, filt, bias = inputs[0], inputs[1], inputs[2]
    n_extras = _n_extras(depthwise)
    args = decode_window_args(inputs, 3, n_extras, _explicit_padding(inputs, n_extras), name)
    n, h, w, c = nhwc_dims(inp, args.nchw, name)
    fdims = filt.dims()
    require(len(fdims) == 4, name, f"filter must be rank 4, got {list(fdims)}")
    extra = {}
    if depthwise:
        (multiplier,) = args.extras
        require(multiplier >= 1, name, f"depth multiplier {multiplier} must be >= 1")
        require(fdims[0] == 1, name, f"filter must be [1, KH, KW, Cout], got {list(fdims)}")
        _, kh, kw, out_c = fdims
        require(out_c == c * multiplier, name,
                f"filter depth {out_c} must equal input depth {c} × depth multiplier {multiplier}")
        extra["depth_multiplier"] = multiplier
    else:
        out_c, kh, kw, fc = fdims
        require(fc == c, name, f"filter depth {fc} must equal the input depth {c}")
        require(out_c > 0, name, "filter output depth must be > 0")
    bdims = bias.dims()
    require(len(bdims) == 1 and bdims[0] == out_c, name, f"bias shape {list(bdims)} must be [{out_c}]")
    win = resolve_window(args, h, w, kh, kw, name)
    cls = DepthwiseConv2DParams if depthwise else Conv2DParams
    return cls(**window_fields(args, win, n, h, w, c, out_c, kh, kw),
               **activation_fields(inputs[args.activation_index], outputs[0], name),
               quant=requantization(inp, filt, bias, outputs[0], out_c, 3 if depthwise else 0, name), **extra)


# ---- reference kernels ------------------------------------------------------------------------------

def _reference_operands(p: Conv2DParams, inputs: list[TensorInfo], acc_dtype):
    """The padded NHWC input and the filter, both minus their zero points, as ``acc_dtype``."""
    q = p.quant
    x = to_nhwc(centred(inputs[0], q.input_zero_point if q else 0, acc_dtype), p.nchw)
    w = centred(inputs[1], q.filter_zero_point if q else 0, acc_dtype)
    return pad_spatial(x, p), w


def _reference_finish(acc: np.ndarray, p: Conv2DParams, inputs: list[TensorInfo],
                      out: TensorInfo) -> list[np.ndarray]:
    """Add the bias, then requantize or apply the float activation; back to the stored layout."""
    bias = inputs[2].array()
    if p.quant is not None:
        acc = (acc if acc.dtype.kind == "i" else np.rint(acc)).astype(np.int64) + bias.astype(np.int64)
        r = requantize(acc, p.quant, p, out.dtype)
    else:
        r = finish_float(acc + bias.astype(np.float64), p, out.dtype)
    return [from_nhwc(r, p.nchw)]


def _reference_empty(p: Conv2DParams, out: TensorInfo) -> list[np.ndarray]:
    return [np.zeros(p.output_shapes[0], dtype=out.dtype)]


def reference_conv_2d(p: Conv2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _reference_empty(p, outputs[0])
    xp, w = _reference_operands(p, inputs, np.float64)
    taps = p.kernel_h * p.kernel_w
    # im2col: cols[n, y, x, (i·KW + j)·C + c] = tap (i, j) of channel c
    cols = np.empty((p.batch, p.out_h, p.out_w, taps * p.in_c), dtype=np.float64)
    for i, j, view in window_taps(xp, p):
        t = i * p.kernel_w + j
        cols[..., t * p.in_c:(t + 1) * p.in_c] = view
    acc = cols.reshape(-1, taps * p.in_c) @ w.reshape(p.out_c, -1).T
    return _reference_finish(acc.reshape(p.batch, p.out_h, p.out_w, p.out_c), p, inputs, outputs[0])


def reference_depthwise_conv_2d(p: DepthwiseConv2DParams, inputs: list[TensorInfo],
                                outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _reference_empty(p, outputs[0])
    acc_dtype = np.int64 if p.quant is not None else np.float64
    xp, w = _reference_operands(p, inputs, acc_dtype)
    m = p.depth_multiplier
    w = w.reshape(p.kernel_h, p.kernel_w, p.in_c, m)
    acc = np.zeros((p.batch, p.out_h, p.out_w, p.in_c, m), dtype=acc_dtype)
    for i, j, view in window_taps(xp, p):
        acc += view[..., None] * w[i, j]
    return _reference_finish(acc.reshape(p.batch, p.out_h, p.out_w, p.out_c), p, inputs, outputs[0])


# ---- lowerings --------------------------------------------------------------------------------------

def supports_conv(ctx: LoweringContext) -> bool:
    """NHWC, shapes known, constant filter/bias/scalars; float32, or quant8_asymm with a per-tensor filter."""
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


def _quant_table(p: Conv2DParams, count: int, padded: int) -> np.ndarray:
    """Per-channel multipliers then shifts, each zero-padded to ``padded`` entries."""
    m = np.zeros(padded, np.int32)
    s = np.zeros(padded, np.int32)
    m[:count] = p.quant.output_multiplier[:count]
    s[:count] = p.quant.output_shift[:count]
    return np.concatenate([m, s])


def _common_defines(ctx: LoweringContext, p: Conv2DParams) -> dict:
    """The kernel defines shared by conv.cl and conv_depthwise.cl."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    quant = x.type == Q8A
    d = {"T": ctype(x), "ACC_T": "int" if quant else "float", "QUANT": int(quant),
         "H": p.in_h, "W": p.in_w, "CI": p.in_c, "OH": p.out_h, "OW": p.out_w, "CO": p.out_c,
         "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h, "SW": p.stride_w, "DH": p.dilation_h,
         "DW": p.dilation_w, "PT": p.pad_top, "PL": p.pad_left, "ROWS": p.batch * p.out_h,
         "ZX": p.quant.input_zero_point if quant else 0, "ZO": p.quant.output_zero_point if quant else 0}
    d.update(act_defines(p, out))
    return d


def _weights(ctx: LoweringContext, p: Conv2DParams) -> np.ndarray:
    """The filter as the kernels read it: int32 minus the zero point (quant8) or float32."""
    f = ctx.inputs[1].array()
    if ctx.inputs[0].type == Q8A:
        return f.astype(np.int32) - np.int32(p.quant.filter_zero_point)
    return f.astype(np.float32)


def _bias(ctx: LoweringContext) -> np.ndarray:
    b = ctx.inputs[2].array()
    return b.astype(np.int32) if ctx.inputs[0].type == Q8A else b.astype(np.float32)


def _pixel_tile(width: int, most: int) -> int:
    """Pixels per work item along x: the largest tile <= ``most`` dividing ``width`` (no partial
    block), unless that is under half of ``most`` (then ``most``, with a bounds-checked last block)."""
    for t in range(min(most, width), 0, -1):
        if width % t == 0 and (2 * t >= most or t == width):
            return t
    return min(most, width)


def lower_conv_2d(ctx: LoweringContext) -> None:
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
    d = _common_defines(ctx, p)
    d.update({"CB": cb, "COB": cob, "COP": cop, "PX": px, "PBLOCKS": pblocks, "GEMM": int(gemm),
              "NPIX": npix, "EXACT": int((npix if gemm else p.out_w) % px == 0),
              "UNROLL_TAPS": int(p.in_c * p.kernel_h * p.kernel_w <= 32)})
    if gemm:
        d["ROWS"] = 1
    inputs = [ctx.input(0), ctx.constant(packed), ctx.constant(bias)]
    if d["QUANT"]:
        inputs.append(ctx.constant(_quant_table(p, co, cop)))
    ctx.emit("conv.cl", d, inputs, [ctx.output(0)], (cob, pblocks, d["ROWS"]), Work.REGISTER_TILES)


def lower_depthwise_conv_2d(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    w = _weights(ctx, p)[0]                             # [KH, KW, CO]
    px = _pixel_tile(p.out_w, 4)
    pblocks = ceil_div(p.out_w, px)
    d = _common_defines(ctx, p)
    d.update({"M": p.depth_multiplier, "PX": px, "PBLOCKS": pblocks, "EXACT": int(p.out_w % px == 0)})
    inputs = [ctx.input(0), ctx.constant(np.ascontiguousarray(w)), ctx.constant(_bias(ctx))]
    if d["QUANT"]:
        inputs.append(ctx.constant(_quant_table(p, p.out_c, p.out_c)))
    ctx.emit("conv_depthwise.cl", d, inputs, [ctx.output(0)], (p.out_c, pblocks, d["ROWS"]), Work.CHANNEL_LANES)


# ---- the operations ---------------------------------------------------------------------------------

def conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return _fused_activation_input(inputs, depthwise=False)


def depthwise_conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return _fused_activation_input(inputs, depthwise=True)


@operation(OperationType.CONV_2D, signature=CONV_2D_SIGNATURE, reference=reference_conv_2d, lower=lower_conv_2d,
           supports=supports_conv, fused_activation_input=conv_2d_fused_activation_input)
def conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Conv2DParams:
    return _conv("CONV_2D", inputs, outputs, depthwise=False)


@operation(OperationType.DEPTHWISE_CONV_2D, signature=DEPTHWISE_CONV_2D_SIGNATURE,
           reference=reference_depthwise_conv_2d, lower=lower_depthwise_conv_2d, supports=supports_conv,
           fused_activation_input=depthwise_conv_2d_fused_activation_input)
def depthwise_conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthwiseConv2DParams:
    return _conv("DEPTHWISE_CONV_2D", inputs, outputs, depthwise=True)
