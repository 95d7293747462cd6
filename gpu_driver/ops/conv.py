"""CONV_2D and DEPTHWISE_CONV_2D (HAL 1.0, with the FL3 layout / dilation / per-channel extensions),
GROUPED_CONV_2D and TRANSPOSE_CONV_2D (FL3).

Definition: the params carry everything a kernel needs, NHWC-normalised (``nchw`` only says how
input 0 and output 0 are laid out in memory): shapes, resolved explicit padding, strides, dilations,
fused activation (float range and quantized clamp range), and for quantized types the requantisation
constants of operands.md §8.5 (one (multiplier, shift) pair per output channel, shift > 0 = left
shift, applied with MultiplyByQuantizedMultiplier to the int32 accumulator).

- GROUPED_CONV_2D: G groups, each a CONV_2D over input channels [g·Cin/G, (g+1)·Cin/G) producing
  output channels [g·Cout/G, (g+1)·Cout/G); filter [Cout, KH, KW, Cin/G]; explicit padding < k.
- TRANSPOSE_CONV_2D: the scatter form — input pixel (y, x) adds in·filter[o, i, j, :] to output
  (y·sh − pad_top + i, x·sw − pad_left + j); outH = H·sh + KH − sh − pad_top − pad_bottom.  The
  implicit form derives the padding from the requested output size (input 3, in the op's layout)
  with the transpose rule of operands.md §5 (the tail may be negative).
- Both: float accumulation then bias, clamped to the activation range, where NONE clamps to
  ±FLT_MAX (AOSP's CalculateActivationRangeFloat); only TRANSPOSE_CONV_2D accepts batch 0.

Reference: float (F32, F16 computed in fp32) and exact quantized arithmetic on (q − zp) products;
for CONV_2D and GROUPED_CONV_2D through a float64 matrix product, which is exact here (every
partial sum is an integer far below 2^53).

Lowering of CONV_2D / DEPTHWISE_CONV_2D: the tiled kernels take NHWC with constant filter and
bias, float32 or quant8 (asymm or signed, per-tensor or per-channel filter).  A 1×1 CONV_2D with
stride 1 and no padding is a GEMM over the N·H·W pixels (gpu_driver.ops.gemm, its tile tuned per
shape at preparation).  They repack the
filter at preparation (conv: [COB][KH][KW][CI][CB], blocks of CB output channels, zero-padded, so a
work item's weights are one unit-stride stream; depthwise: [KH][KW][CO]; depthwise with
multiplier 1 and channels a multiple of 4 takes conv_depthwise_vector.cl, 16, 8 or 4 channels per
work item as one FLOATV, quant8 through its centred input and conv_requantize.cl), fold the filter zero
point into int32 weights, and bake every size/stride/pad and the activation bounds in as literals.
Every other variant (NCHW, float16, filter or bias given as model inputs) and GROUPED_CONV_2D /
TRANSPOSE_CONV_2D take ``conv_general.cl``: one work item per output element, either layout, filter
and bias read from their tensors as stored, dilation in the gather index.  Quantized results are
the reference's integer arithmetic exactly (int32 accumulation, MBQM with the params' per-channel
multipliers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler import autotune
from ..compiler.lowering_helpers import (act_defines, ceil_div, ctype, float_act, float_io, known, numel, params_ok,
                                         trailing_scalars_constant, Work)
from ..hal.types import OperandType, OperationType
from .definition import TensorInfo, require, require_nonempty
from .fused_activation import (Requantization, activation_fields, centred, finish_float, requantization,
                               requantization_feature_level, requantize)
from .gemm import (VECTOR_LANES_MOST, DepthwiseInput, centred_input, depthwise_row_block, emit_with_requantization,
                   lower_gemm, mac_type, quant_table)
from .layout import from_nhwc, image_strides, nhwc_dims, to_nhwc
from .padding import emit_pad
from .registry import operation
from .signature import BOOL, DILATION, F16, F32, I32, LAYOUT, PC8, Q8A, Q8AS, RANK4, STD_TYPES, OpContext, \
    OpSignature, Variant, i32
from .window import PADDING_VALID, ResolvedWindow, Window2DParams, decode_window_args, fuse_code_input, \
    pad_spatial, resolve_window, tile_columns, window_fields, window_taps

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class Conv2DParams(Window2DParams):
    """CONV_2D: filter [out_c, kernel_h, kernel_w, in_c], bias [out_c].

    out[n,y,x,o] = act(bias[o] + Σ_{i,j,c} in[n, y·sh − pt + i·dh, x·sw − pl + j·dw, c]·filter[o,i,j,c]).
    ``quant`` is None for float types.  ``residual``: a float ADD fused into this operation
    (compiler/fusion.py): the node's last input, of the output's shape, is added to the sum before
    the fused activation (the ADD's).  ``input_scale``: a float MUL of the input by a vector along its
    channels fused into it: that vector is the node's last input (before the residual), and each
    input channel is scaled by it.  ``depthwise``: a float DEPTHWISE_CONV_2D fused in front of this
    1×1 convolution (compiler/fusion.py): input 0 is the depthwise's input, and the node's last two
    inputs are its filter and bias; the GEMM computes its rows' depthwise outputs itself.
    """

    quant: Requantization | None = None
    residual: bool = False
    input_scale: bool = False
    depthwise: "DepthwiseConv2DParams | None" = None


@dataclass
class DepthwiseConv2DParams(Conv2DParams):
    """DEPTHWISE_CONV_2D: filter [1, kernel_h, kernel_w, out_c], out_c = in_c·depth_multiplier.

    out[n,y,x,c·M+m] = act(bias[c·M+m] + Σ_{i,j} in[n, y·sh − pt + i·dh, x·sw − pl + j·dw, c]
                                                     ·filter[0,i,j,c·M+m]).
    """

    depth_multiplier: int = 1


@dataclass
class GroupedConv2DParams(Conv2DParams):
    """GROUPED_CONV_2D: filter [out_c, kernel_h, kernel_w, in_c/groups], bias [out_c].

    With ci = in_c/groups, co = out_c/groups and g = o // co:
    out[n,y,x,o] = act(bias[o] + Σ_{i,j,c<ci} in[n, y·sh − pt + i, x·sw − pl + j, g·ci + c]·filter[o,i,j,c]).
    """

    groups: int = 1


@dataclass
class TransposeConv2DParams(Conv2DParams):
    """TRANSPOSE_CONV_2D: filter [out_c, kernel_h, kernel_w, in_c], bias [out_c]; pad_bottom and
    pad_right may be negative.

    out[n,Y,X,o] = act(bias[o] + Σ in[n,y,x,c]·filter[o,i,j,c] over y·sh − pt + i = Y, x·sw − pl + j = X).
    """


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

_FL3_TYPES = {F32: 3, F16: 3, Q8A: 3, Q8AS: 4}

# the layout flag is mandatory; no dilation
GROUPED_CONV_2D_SIGNATURE = OpSignature(
    _FL3_TYPES,
    (Variant("implicit", ("T", "W", "B", i32, i32, i32, i32, i32, BOOL), ("T",)),
     Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32, i32, BOOL), ("T",))),
    ranks={0: RANK4, 1: RANK4, 2: (1, 1)}, out_ranks={0: RANK4}, check=_check_conv2d)

# implicit: input 3 is the requested output shape (TENSOR_INT32 [4])
TRANSPOSE_CONV_2D_SIGNATURE = OpSignature(
    _FL3_TYPES,
    (Variant("implicit", ("T", "W", "B", I32, i32, i32, i32, i32, BOOL), ("T",)),
     Variant("explicit", ("T", "W", "B", i32, i32, i32, i32, i32, i32, i32, BOOL), ("T",))),
    ranks={0: RANK4, 1: RANK4, 2: (1, 1), 3: (1, 1)}, out_ranks={0: RANK4}, check=_check_conv2d)


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


def _conv_params(cls, name: str, inputs: list[TensorInfo], outputs: list[TensorInfo], args, win: ResolvedWindow,
                 nhwc: tuple[int, int, int, int], out_c: int, kh: int, kw: int, channel_dim: int, **extra):
    """Check the bias length against ``out_c``; assemble the params (window, activation, requantisation)."""
    bdims = inputs[2].dims()
    require(len(bdims) == 1 and bdims[0] == out_c, name, f"bias shape {list(bdims)} must be [{out_c}]")
    n, h, w, c = nhwc
    return cls(**window_fields(args, win, n, h, w, c, out_c, kh, kw),
               **activation_fields(inputs[args.activation_index], outputs[0], name),
               quant=requantization(inputs[0], inputs[1], inputs[2], outputs[0], out_c, channel_dim, name), **extra)


def _filter_dims(filt: TensorInfo, name: str) -> tuple[int, int, int, int]:
    fdims = filt.dims()
    require(len(fdims) == 4, name, f"filter must be rank 4, got {list(fdims)}")
    require(min(fdims) > 0, name, f"filter dimensions must be > 0, got {list(fdims)}")
    return fdims


def _conv(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo], depthwise: bool) -> Conv2DParams:
    inp, filt = inputs[0], inputs[1]
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
    win = resolve_window(args, h, w, kh, kw, name)
    cls = DepthwiseConv2DParams if depthwise else Conv2DParams
    return _conv_params(cls, name, inputs, outputs, args, win, (n, h, w, c), out_c, kh, kw,
                        3 if depthwise else 0, **extra)


def _grouped_conv(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GroupedConv2DParams:
    name = "GROUPED_CONV_2D"
    args = decode_window_args(inputs, 3, 1, len(inputs) == 12, name)
    n, h, w, c = nhwc_dims(inputs[0], args.nchw, name)
    require_nonempty((n,), name)
    (groups,) = args.extras
    out_c, kh, kw, fc = _filter_dims(inputs[1], name)
    require(groups >= 1, name, f"number of groups {groups} must be >= 1")
    require(fc * groups == c, name, f"filter depth {fc} × groups {groups} must equal the input depth {c}")
    require(out_c % groups == 0, name, f"output depth {out_c} is not a multiple of the {groups} groups")
    win = resolve_window(args, h, w, kh, kw, name, pad_limit_uses_dilation=False)
    return _conv_params(GroupedConv2DParams, name, inputs, outputs, args, win, (n, h, w, c), out_c, kh, kw, 0,
                        groups=groups)


def _c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def transpose_padding(code: int, out_size: int, stride: int, k: int) -> tuple[int, int]:
    """(head, tail) padding of one axis of an implicit TRANSPOSE_CONV_2D from the requested output
    size (operands.md §5): the SAME total with in_size := out_size; the tail may be negative."""
    if code == PADDING_VALID:
        return 0, 0
    total = (_c_div(out_size + stride - 1, stride) - 1) * stride + k - out_size
    head = total // 2 if total > 0 else 0
    return head, total - head


def _transpose_conv(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> TransposeConv2DParams:
    name = "TRANSPOSE_CONV_2D"
    explicit = len(inputs) == 11
    args = decode_window_args(inputs, 3 if explicit else 4, 0, explicit, name)
    n, h, w, c = nhwc_dims(inputs[0], args.nchw, name)
    out_c, kh, kw, fc = _filter_dims(inputs[1], name)
    require(fc == c, name, f"filter depth {fc} must equal the input depth {c}")
    if explicit:
        left, right, top, bottom = args.pads
    else:
        shape = inputs[3].array().reshape(-1)
        require(shape.size == 4, name, f"output shape must have 4 entries, got {shape.size}")
        req_h, req_w = (int(shape[2]), int(shape[3])) if args.nchw else (int(shape[1]), int(shape[2]))
        top, bottom = transpose_padding(args.padding_code, req_h, args.stride_h, kh)
        left, right = transpose_padding(args.padding_code, req_w, args.stride_w, kw)
    require(left >= 0 and top >= 0, name, f"padding left {left} and top {top} must be >= 0")
    out_h = h * args.stride_h + kh - args.stride_h - top - bottom
    out_w = w * args.stride_w + kw - args.stride_w - left - right
    require(out_h > 0 and out_w > 0, name, f"output size {out_h}×{out_w} must be > 0")
    win = ResolvedWindow(left, right, top, bottom, out_h, out_w)
    return _conv_params(TransposeConv2DParams, name, inputs, outputs, args, win, (n, h, w, c), out_c, kh, kw, 0)


# ---- reference kernels ------------------------------------------------------------------------------

def _accumulator_dtype(p: Conv2DParams):
    """int64 for quantized operands (exact integer sums), float64 otherwise."""
    return np.int64 if p.quant is not None else np.float64


def _reference_operands(p: Conv2DParams, inputs: list[TensorInfo], acc_dtype, pad: bool = True):
    """The NHWC input (padded with ``p``'s padding when ``pad``) and the filter, both minus their zero
    points, as ``acc_dtype``."""
    q = p.quant
    x = to_nhwc(centred(inputs[0], q.input_zero_point if q else 0, acc_dtype), p.nchw)
    w = centred(inputs[1], q.filter_zero_point if q else 0, acc_dtype)
    return pad_spatial(x, p) if pad else x, w


FLT_MAX = float(np.finfo(np.float32).max)


def _reference_finish(acc: np.ndarray, p: Conv2DParams, inputs: list[TensorInfo],
                      out: TensorInfo, finite: bool = False) -> list[np.ndarray]:
    """Add the bias, then requantize or apply the float activation; back to the stored layout.
    ``finite``: the float result is first clamped to ±FLT_MAX (AOSP's range of activation NONE)."""
    bias = inputs[2].array()
    if p.quant is not None:
        acc = (acc if acc.dtype.kind == "i" else np.rint(acc)).astype(np.int64) + bias.astype(np.int64)
        r = requantize(acc, p.quant, p, out.dtype)
    else:
        acc = acc + bias.astype(np.float64)
        r = finish_float(np.clip(acc, -FLT_MAX, FLT_MAX) if finite else acc, p, out.dtype)
    return [from_nhwc(r, p.nchw)]


def _reference_empty(p: Conv2DParams, out: TensorInfo) -> list[np.ndarray]:
    return [np.zeros(p.output_shapes[0], dtype=out.dtype)]


def _conv_products(xp: np.ndarray, w: np.ndarray, p: Conv2DParams) -> np.ndarray:
    """Σ over taps and channels for padded NHWC ``xp`` [N, Hp, Wp, C] and filter ``w`` [O, KH, KW, C]:
    [N, OH, OW, O] float64, as im2col and one matrix product."""
    c, taps = xp.shape[-1], p.kernel_h * p.kernel_w
    # im2col: cols[n, y, x, (i·KW + j)·C + c] = tap (i, j) of channel c
    cols = np.empty((p.batch, p.out_h, p.out_w, taps * c), dtype=np.float64)
    for i, j, view in window_taps(xp, p):
        t = i * p.kernel_w + j
        cols[..., t * c:(t + 1) * c] = view
    acc = cols.reshape(-1, taps * c) @ w.reshape(w.shape[0], -1).T
    return acc.reshape(p.batch, p.out_h, p.out_w, w.shape[0])


def reference_conv_2d(p: Conv2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _reference_empty(p, outputs[0])
    xp, w = _reference_operands(p, inputs, np.float64)
    return _reference_finish(_conv_products(xp, w, p), p, inputs, outputs[0])


def reference_grouped_conv_2d(p: GroupedConv2DParams, inputs: list[TensorInfo],
                              outputs: list[TensorInfo]) -> list[np.ndarray]:
    xp, w = _reference_operands(p, inputs, np.float64)
    ci, co = p.in_c // p.groups, p.out_c // p.groups
    acc = np.concatenate([_conv_products(xp[..., g * ci:(g + 1) * ci], w[g * co:(g + 1) * co], p)
                          for g in range(p.groups)], axis=-1)
    return _reference_finish(acc, p, inputs, outputs[0], finite=True)


def reference_transpose_conv_2d(p: TransposeConv2DParams, inputs: list[TensorInfo],
                                outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _reference_empty(p, outputs[0])
    x, w = _reference_operands(p, inputs, _accumulator_dtype(p), pad=False)
    # scatter every tap into a canvas covering the whole (unpadded) result, then crop the padding
    h_span, w_span = (p.in_h - 1) * p.stride_h + 1, (p.in_w - 1) * p.stride_w + 1
    canvas = np.zeros((p.batch, max(h_span + p.kernel_h - 1, p.pad_top + p.out_h),
                       max(w_span + p.kernel_w - 1, p.pad_left + p.out_w), p.out_c), dtype=x.dtype)
    for i in range(p.kernel_h):
        for j in range(p.kernel_w):
            canvas[:, i:i + h_span:p.stride_h, j:j + w_span:p.stride_w] += x @ w[:, i, j, :].T
    acc = canvas[:, p.pad_top:p.pad_top + p.out_h, p.pad_left:p.pad_left + p.out_w]
    return _reference_finish(acc, p, inputs, outputs[0], finite=True)


def reference_depthwise_conv_2d(p: DepthwiseConv2DParams, inputs: list[TensorInfo],
                                outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _reference_empty(p, outputs[0])
    acc_dtype = _accumulator_dtype(p)
    xp, w = _reference_operands(p, inputs, acc_dtype)
    m = p.depth_multiplier
    w = w.reshape(p.kernel_h, p.kernel_w, p.in_c, m)
    acc = np.zeros((p.batch, p.out_h, p.out_w, p.in_c, m), dtype=acc_dtype)
    for i, j, view in window_taps(xp, p):
        acc += view[..., None] * w[i, j]
    return _reference_finish(acc.reshape(p.batch, p.out_h, p.out_w, p.out_c), p, inputs, outputs[0])


# ---- lowerings --------------------------------------------------------------------------------------

def _supports_tiled(ctx: LoweringContext) -> bool:
    """The tiled kernels (conv.cl, conv_depthwise.cl, conv_depthwise_vector.cl): NHWC, constant filter
    and bias; float32, or quant8 (asymm or signed) with a per-tensor or per-channel filter."""
    p = ctx.params
    x, f, b = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    out = ctx.outputs[0]
    if p.nchw or not (ctx.is_constant(1) and ctx.is_constant(2)):
        return False
    if x.type == F32:
        return f.type == F32 and b.type == F32 and out.type == F32
    if x.type in (Q8A, Q8AS):
        return f.type in (x.type, PC8) and b.type == I32 and out.type == x.type and p.quant is not None
    return False


def supports_conv(ctx: LoweringContext) -> bool:
    """CONV_2D / DEPTHWISE_CONV_2D: the tiled kernels where they apply, conv_general.cl otherwise
    (every type and layout, filter and bias constants or model inputs)."""
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 3) or not known(*ctx.inputs[:3], ctx.outputs[0]):
        return False
    return _supports_tiled(ctx) or ctx.inputs[0].type in (F32, F16, Q8A, Q8AS)


def _common_defines(ctx: LoweringContext, p: Conv2DParams) -> dict:
    """The kernel defines shared by conv.cl and conv_depthwise.cl."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    quant = p.quant is not None
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
    if p.quant is not None:
        return f.astype(np.int32) - np.int32(p.quant.filter_zero_point)
    return f.astype(np.float32)


def _bias(ctx: LoweringContext) -> np.ndarray:
    b = ctx.inputs[2].array()
    return b.astype(np.int32) if ctx.params.quant is not None else b.astype(np.float32)


def _pixel_tile(width: int, most: int) -> int:
    """Pixels per work item along x: the largest tile <= ``most`` dividing ``width`` (no partial
    block), unless that is under half of ``most`` (then ``most``, with a bounds-checked last block)."""
    for t in range(min(most, width), 0, -1):
        if width % t == 0 and (2 * t >= most or t == width):
            return t
    return min(most, width)


def _is_pointwise(p: Conv2DParams) -> bool:
    """1×1, stride 1, no padding: a GEMM over the pixels (ops/gemm.py)."""
    return (p.kernel_h == p.kernel_w == 1 and p.stride_h == p.stride_w == 1
            and p.pad_top == p.pad_left == p.pad_bottom == p.pad_right == 0)


def conv_2d_takes_prelu(ctx: LoweringContext) -> bool:
    """A float32 convolution with a register-tiled kernel (gemm.cl or conv.cl) can apply a PRELU by a
    channel vector after its activation (compiler/fusion.py)."""
    p = ctx.params
    return p.batch > 0 and p.quant is None and _supports_tiled(ctx)


def conv_takes_zero_pad(ctx: LoweringContext) -> bool:
    """An NHWC convolution that is not a GEMM (1×1, stride 1, no padding) takes a zero PAD of its
    input's rows and columns into its explicit padding (compiler/fusion.py); a GEMM stays one over the
    padded image."""
    return not ctx.params.nchw and not (ctx.node.type == OperationType.CONV_2D and _is_pointwise(ctx.params))


def conv_2d_is_float_gemm(ctx: LoweringContext) -> bool:
    """A float32 1×1 convolution lowered as a GEMM: it can add a residual tensor in its epilogue,
    scale its input channels and compute a depthwise convolution in front of it (compiler/fusion.py)."""
    p = ctx.params
    return p.batch > 0 and p.quant is None and _supports_tiled(ctx) and _is_pointwise(p)


#: the most channels of a depthwise convolution a GEMM computes in front of itself (a work item holds
#: its tile's depthwise outputs, at most 8 pixels × this many floats, in private memory: 32 KiB)
DEPTHWISE_GEMM_MOST_CHANNELS = 1024


def depthwise_fuses_into_gemm(ctx: LoweringContext) -> bool:
    """A float32 NHWC depthwise convolution of multiplier 1, constant filter and bias, channels a
    multiple of 4 (at most DEPTHWISE_GEMM_MOST_CHANNELS), an output width that whole tiles divide
    (gemm.depthwise_row_block), can be computed by the GEMM of a 1×1 convolution reading its output
    (compiler/fusion.py), on a device of register-tiled GEMMs (a CPU).  PoCL, AMD Zen 5 (OpenCL
    profiling): BlazeFace's blocks 0.8-0.99x the time of the two kernels, MobileNet v2's 0.86-1.05x."""
    p = ctx.params
    return (p.batch > 0 and p.quant is None and _supports_tiled(ctx) and p.depth_multiplier == 1
            and p.out_c % 4 == 0 and p.out_c <= DEPTHWISE_GEMM_MOST_CHANNELS
            and depthwise_row_block(p.out_w) is not None and not autotune.target_tuning().group_gemm)


def depthwise_gemm_input(ctx: LoweringContext) -> DepthwiseInput | None:
    """The fused depthwise convolution in front of this 1×1 convolution (``depthwise`` params), or None."""
    dw = ctx.params.depthwise
    if dw is None:
        return None
    weights = ctx.inputs[-2].array().astype(np.float32)[0]            # [KH, KW, C]
    bias = ctx.inputs[-1].array().astype(np.float32)
    return DepthwiseInput(dw, np.ascontiguousarray(weights), bias)


#: input channels up to which conv.cl unrolls the channel loop of its interior taps
UNROLL_CHANNELS = 8
#: conv.cl's float vector tiles read a zero-padded copy of the input (every tile then takes the
#: unmasked interior path) when at least this share of the tiles touch the padding: on PoCL, AMD
#: Zen 5, copy and convolution 0.6-0.8x the convolution's time at shares of 0.25-1 (3×3 and 5×5
#: SAME layers of 3-96 channels), 1.08x at 0.07 (a 3-channel first layer padded on one side only)
PREPAD_BORDER_SHARE = 0.15
#: vector registers of an AVX-512 CPU (LaunchTuning.one_register_vectors): conv.cl's ROW_CACHE budget
VECTOR_REGISTERS = 32
#: rows of at most this many output pixels take depthwise tiles of up to 8 pixels on AVX-512 (else 4)
DEPTHWISE_WIDE_TILE_ROWS = 16
#: the largest padded copy made (elements)
PREPAD_MAX_ELEMENTS = 1 << 23


def _border_share(p: Conv2DParams, px: int) -> float:
    """The share of conv.cl's tiles (an output row's block of ``px`` pixels) whose receptive field
    leaves the image."""
    rows = sum(1 for oy in range(p.out_h)
               if 0 <= oy * p.stride_h - p.pad_top and oy * p.stride_h - p.pad_top + (p.kernel_h - 1) * p.dilation_h < p.in_h)
    blocks = ceil_div(p.out_w, px)
    cols = sum(1 for b in range(blocks)
               if 0 <= b * px * p.stride_w - p.pad_left
               and b * px * p.stride_w - p.pad_left + tile_columns(p, px) <= p.in_w)
    return 1.0 - rows * cols / (p.out_h * blocks)


def _zero_padded(ctx: LoweringContext, p: Conv2DParams, x, width_pixels: int, defines: dict):
    """``x`` (float, NHWC) copied into a zero-padded scratch tensor that holds every tile's receptive
    field (output columns up to ``width_pixels``, whole pixel blocks); ``defines`` then describe that
    tensor (no padding left).  ``x`` itself when the copy would be too large."""
    need_h = (p.out_h - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1
    need_w = tile_columns(p, width_pixels)
    h = max(p.pad_top + p.in_h, need_h)
    w = max(p.pad_left + p.in_w, need_w)
    if p.batch * h * w * p.in_c > PREPAD_MAX_ELEMENTS:
        return x
    padded = ctx.scratch(np.float32, p.batch * h * w * p.in_c)
    emit_pad(ctx, x, padded, (p.batch, p.in_h, p.in_w, p.in_c), np.float32,
             ((0, 0), (p.pad_top, h - p.pad_top - p.in_h), (p.pad_left, w - p.pad_left - p.in_w), (0, 0)))
    defines.update({"H": h, "W": w, "PT": 0, "PL": 0})
    return padded


def lower_conv_2d(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    if not _supports_tiled(ctx):
        lower_conv_general(ctx)
        return
    w = _weights(ctx, p)                                 # [CO, KH, KW, CI]
    if _is_pointwise(p):
        lower_gemm(ctx, ctx.input(0), p.batch * p.out_h * p.out_w, w.reshape(p.out_c, p.in_c),
                   _bias(ctx), p.quant, ctype(ctx.inputs[0]), act_defines(p, ctx.outputs[0]),
                   depthwise_gemm_input(ctx))
        return
    co = p.out_c
    mac = mac_type(p.quant, ctype(ctx.inputs[0]), p.kernel_h * p.kernel_w * p.in_c, w)
    # register tile: PX pixels x CB channels, CB the block of 16, 8 or 4 that pads the channels least
    # (float: one FLOATV of weights); int32 products stay at 4 x 8 (larger tiles spill: measured slower).
    # Where a 16-lane FLOATV is one vector register (AVX-512), a block costs the same at any width, so
    # more than 8 float channels take the fewest blocks: 16 lanes for 24 or 40 channels measured
    # 0.63-0.75x the time of 8 lanes (3x3 and 5x5 layers of 3-32 input channels, PoCL on AMD Zen 5)
    blocks = (8, 4) if mac == "int" else (16, 8, 4)
    target = autotune.target_tuning()
    if mac == "float" and co > 8 and target.one_register_vectors:
        cb = min(blocks, key=lambda b: (ceil_div(co, b), b))
    else:
        cb = min((b for b in blocks if b <= co), key=lambda b: (ceil_div(co, b) * b, -b), default=co)
    pixels_most = (4,)
    if mac == "float" and 16 < co <= 24 and p.in_c > UNROLL_CHANNELS:
        # one scalar block of 24 channels x 2 pixels: 1.2-1.4x faster than 16- or 8-channel vectors
        # past the first layer (PoCL, 32²×32→24 and 64²×16→24 3×3); a 3-channel first layer takes three
        # blocks of 8 (0.7-0.8x the 24-wide block's time)
        cb, pixels_most = 24, (2,)
    vector = mac == "float" and cb in (16, 8, 4)
    if vector and target.one_register_vectors:
        # 8 pixels where a block's accumulators are one register each (AVX-512): on PoCL, AMD Zen 5,
        # 0.5-0.87x the time of 4 (3×3 layers of 16-96 channels, 3-channel first layers), up to 1.08x
        # on a few; 4 stays the tuned alternative
        pixels_most = (8, 4)
    io_type = ctype(ctx.inputs[0])
    x, in_type, zx = centred_input(ctx, ctx.input(0), p.batch * p.in_h * p.in_w * p.in_c, io_type, p.quant, mac)
    base = _common_defines(ctx, p)
    pixel_tiles = [_pixel_tile(p.out_w, most) for most in pixels_most]   # the default first
    # (pixels, channel vectors) per work item, the default first.  Where a vector is one register and
    # there are more than 16 channels, two vectors per pixel come first (each input value loaded feeds
    # two products): PoCL, AMD Zen 5, 0.85-0.88x the time of one with 8 pixels on 3×3 layers of 16 and
    # 32 input channels; with few input channels 4 pixels (their input rows then stay in registers):
    # MobileNet's 224²×3→32 first layer 0.85x, a 5×5 stride-2 3→24 one 0.99x
    tiles = [(px, 1) for px in pixel_tiles]
    if vector and target.one_register_vectors and cb == VECTOR_LANES_MOST and co > cb:
        two = [(px, 2) for px in pixel_tiles]
        tiles = (two[::-1] if p.in_c <= UNROLL_CHANNELS else two) + tiles
    if vector and _border_share(p, pixel_tiles[0]) >= PREPAD_BORDER_SHARE:
        x = _zero_padded(ctx, p, x, max(ceil_div(p.out_w, px) * px for px in pixel_tiles), base)
    prelu = [ctx.input(len(ctx.node.inputs) - 1)] if p.prelu else []   # a fused PRELU's alpha [CO]
    base.update({"T": in_type, "ZX": zx, "MAC_T": mac, "VW": cb, "VECTOR": int(vector), "PRELU": int(p.prelu),
                 "UNROLL_CHANNELS": int(p.in_c <= UNROLL_CHANNELS),
                 "UNROLL_TAPS": int(not vector and cb <= 16 and p.in_c * p.kernel_h * p.kernel_w <= 32)})
    bias_of = _bias(ctx)

    def packing(block: int) -> tuple[np.ndarray, np.ndarray]:
        """Filter [COB][KH*KW*CI][block] and bias [COB*block], output channels zero-padded."""
        cob = ceil_div(co, block)
        packed = np.zeros((cob * block, p.kernel_h, p.kernel_w, p.in_c),
                          dtype=np.float32 if mac == "float" else w.dtype)
        packed[:co] = w
        bias = np.zeros(cob * block, dtype=w.dtype)
        bias[:co] = bias_of
        return packed.reshape(cob, block, -1).transpose(0, 2, 1), bias

    def specialise(tile: tuple[int, int]) -> dict:
        # few input channels on AVX-512: an interior tile's input rows broadcast once into registers,
        # where they fit beside its accumulators and weight vectors; PoCL, BlazeFace's 5×5 stride-2
        # first layer 0.78x the time, 3×3 ones as fast
        px, cv = tile
        rw = tile_columns(p, px)
        row_cache = (vector and target.one_register_vectors and bool(base["UNROLL_CHANNELS"])
                     and rw + (px + 1) * cv <= VECTOR_REGISTERS)
        return dict(base, CB=cb * cv, CV=cv, COB=ceil_div(co, cb * cv), PX=px, PBLOCKS=ceil_div(p.out_w, px),
                    EXACT=int(p.out_w % px == 0), RW=rw, ROW_CACHE=int(row_cache))

    def trial(i: int) -> autotune.Trial:  # only vector tiles have alternatives: their input is float
        d = dict(specialise(tiles[i]), OUT_T="int" if p.quant is not None else io_type)
        return autotune.Trial("conv.cl", d, [np.zeros(p.batch * d["H"] * d["W"] * p.in_c, np.float32),
                                             *packing(d["CB"]), *(np.ones(co, np.float32) for _ in prelu)],
                              p.batch * p.out_h * p.out_w * co * 4, (d["COB"], d["PBLOCKS"], d["ROWS"]),
                              Work.REGISTER_TILES)

    flops = 2 * p.batch * p.out_h * p.out_w * co * p.kernel_h * p.kernel_w * p.in_c
    key = ("conv.cl", *sorted(base.items()))
    d = specialise(tiles[autotune.choose(key, len(tiles), flops, trial)])
    packed, bias = packing(d["CB"])
    emit_with_requantization(ctx, "conv.cl", d, [x, ctx.constant(packed), ctx.constant(bias), *prelu],
                             (d["COB"], d["PBLOCKS"], d["ROWS"]), Work.REGISTER_TILES, p.quant,
                             p.batch * p.out_h * p.out_w, co, act_defines(p, ctx.outputs[0]), io_type)


def lower_depthwise_conv_2d(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    if not _supports_tiled(ctx):
        lower_conv_general(ctx)
        return
    w = _weights(ctx, p)[0]                             # [KH, KW, CO]
    # 4 pixels per work item; on AVX-512 up to 8 on rows of at most 16 (7 or 14 wide: one tile of 7
    # instead of 4 + 3 or of 2): PoCL, 7²×672 and 14²×384 5×5 layers 0.78x the time, 14²×288 3×3 0.92x,
    # wider rows no faster with 8 (a GPU keeps its thinner work items)
    wide = autotune.target_tuning().one_register_vectors and p.out_w <= DEPTHWISE_WIDE_TILE_ROWS
    px = _pixel_tile(p.out_w, 8 if wide else 4)
    pblocks = ceil_div(p.out_w, px)
    d = _common_defines(ctx, p)
    d.update({"PX": px, "PBLOCKS": pblocks, "EXACT": int(p.out_w % px == 0),
              "RW": tile_columns(p, px)})
    # multiplier 1: VW channels per work item as one FLOATV (the target's depthwise_lanes, or fewer of
    # 8 or 4 lanes for the other channel counts: 3-7x over conv_depthwise.cl's channel per work item on
    # PoCL); quant8 too when its sums are exact in float (the input centred once, the int32 sums
    # requantized after)
    widest = autotune.target_tuning().depthwise_lanes
    vw = next((v for v in (16, 8, 4) if v <= widest and p.out_c % v == 0), 0)
    io_type = ctype(ctx.inputs[0])
    mac = mac_type(p.quant, io_type, p.kernel_h * p.kernel_w, w)
    if p.depth_multiplier == 1 and vw and mac == "float":
        d.update({"VW": vw, "CB": p.out_c // vw})
        x, _, _ = centred_input(ctx, ctx.input(0), p.batch * p.in_h * p.in_w * p.in_c, io_type, p.quant, mac)
        inputs = [x, ctx.constant(np.ascontiguousarray(w, dtype=np.float32)), ctx.constant(_bias(ctx))]
        emit_with_requantization(ctx, "conv_depthwise_vector.cl", d, inputs, (d["CB"], pblocks, d["ROWS"]),
                                 Work.REGISTER_TILES, p.quant, p.batch * p.out_h * p.out_w, p.out_c,
                                 act_defines(p, ctx.outputs[0]), io_type)
        return
    w = w.astype(np.float32) if mac == "float" else w
    d.update({"MAC_T": mac, "M": p.depth_multiplier})
    inputs = [ctx.input(0), ctx.constant(np.ascontiguousarray(w)), ctx.constant(_bias(ctx))]
    if d["QUANT"]:
        inputs.append(ctx.constant(quant_table(p.quant, p.out_c, p.out_c)))
    ctx.emit("conv_depthwise.cl", d, inputs, [ctx.output(0)], (p.out_c, pblocks, d["ROWS"]), Work.CHANNEL_LANES)


def supports_conv_general(ctx: LoweringContext) -> bool:
    """GROUPED_CONV_2D / TRANSPOSE_CONV_2D: shapes known and scalar arguments constant; every type and
    layout, filter and bias constants or model inputs."""
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 3):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(*ctx.inputs[:3], out) and x.type == out.type and x.type in (F32, F16, Q8A, Q8AS)


def _supports_transpose_vector(ctx: LoweringContext, p: TransposeConv2DParams) -> bool:
    """conv_transpose.cl: float32 NHWC with a constant filter and bias."""
    x, f, b, out = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    return (not p.nchw and ctx.is_constant(1) and ctx.is_constant(2)
            and x.type == f.type == b.type == out.type == F32)


#: output channels up to which an upsampling TRANSPOSE_CONV_2D takes conv_transpose_upsample.cl
#: rather than conv_transpose.cl, whose 4-channel vectors are then mostly padding (PoCL, one layer
#: alternating: 0.77x its time for 1 channel, 0.88x for 2, 1.6x for 3, 3.7-6x for 16-64)
UPSAMPLING_MAX_CHANNELS = 2


def _is_upsampling(p: TransposeConv2DParams) -> bool:
    """Stride = kernel size, no padding: every output pixel takes exactly one input pixel."""
    return (p.stride_h == p.kernel_h and p.stride_w == p.kernel_w and p.pad_top == p.pad_left == 0
            and p.out_h == p.in_h * p.stride_h and p.out_w == p.in_w * p.stride_w)


def _transpose_defines(p: TransposeConv2DParams) -> dict:
    """The literals conv_transpose.cl and conv_transpose_upsample.cl share: sizes, strides, NHWC
    element strides of input and output, and the activation (clamped to the finite range even
    without one)."""
    lo, hi = max(p.float_min, -FLT_MAX), min(p.float_max, FLT_MAX)
    d = {"CI": p.in_c, "H": p.in_h, "W": p.in_w, "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h,
         "SW": p.stride_w, **float_act(lo, hi, p.nan_to_low, p.hard_swish)}
    d.update(zip(("XN", "XY", "XX"), image_strides(p.batch, p.in_h, p.in_w, p.in_c, False)[:3]))
    d.update(zip(("ON", "OY", "OX"), image_strides(p.batch, p.out_h, p.out_w, p.out_c, False)[:3]))
    return d


def _lower_transpose_upsampling(ctx: LoweringContext, p: TransposeConv2DParams) -> None:
    """One conv_transpose_upsample.cl launch over (input column, output channel, batch·input row);
    the filter [CO][KH][KW][CI] repacked to [KH][KW][CO][CI]."""
    w = np.ascontiguousarray(np.transpose(ctx.inputs[1].array().astype(np.float32), (1, 2, 0, 3)))
    d = dict(_transpose_defines(p), CO=p.out_c, ROWS=p.batch * p.in_h)
    bias = ctx.inputs[2].array().astype(np.float32)
    ctx.emit("conv_transpose_upsample.cl", d, [ctx.input(0), ctx.constant(w), ctx.constant(bias)], [ctx.output(0)],
             (p.in_w, p.out_c, p.batch * p.in_h))


def _lower_transpose_vector(ctx: LoweringContext, p: TransposeConv2DParams) -> None:
    """One conv_transpose.cl launch over (block of CB output channels, block of 8 output columns,
    batch·output row);
    the filter [CO][KH][KW][CI] repacked to [KH][KW][CI][COP]."""
    co = p.out_c
    cb = 16 if co >= 16 else 8 if co >= 8 else 4
    cop = ceil_div(co, cb) * cb
    w = np.zeros((p.kernel_h, p.kernel_w, p.in_c, cop), np.float32)
    w[..., :co] = np.transpose(ctx.inputs[1].array().astype(np.float32), (1, 2, 3, 0))
    bias = np.zeros(cop, np.float32)
    bias[:co] = ctx.inputs[2].array().astype(np.float32)
    px = min(8, p.out_w)
    d = dict(_transpose_defines(p), CB=cb, CBLOCKS=cop // cb, PX=px, PBLOCKS=ceil_div(p.out_w, px), CO=co, COP=cop,
             OH=p.out_h, OW=p.out_w, ROWS=p.batch * p.out_h, PT=p.pad_top, PL=p.pad_left)
    ctx.emit("conv_transpose.cl", d, [ctx.input(0), ctx.constant(w), ctx.constant(bias)], [ctx.output(0)],
             (cop // cb, ceil_div(p.out_w, px), p.batch * p.out_h))


def lower_conv_general(ctx: LoweringContext, p: Conv2DParams | None = None) -> None:
    """One conv_general.cl launch over (output channel, output x, batch·output row).  ``p``: the
    convolution the node computes when its own params are not convolution params (FULLY_CONNECTED is
    a 1×1 convolution over a 1×1 image)."""
    p = p or ctx.params
    if p.batch == 0:
        return
    x, f, b = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if isinstance(p, TransposeConv2DParams) and _supports_transpose_vector(ctx, p):
        if _is_upsampling(p) and p.out_c <= UPSAMPLING_MAX_CHANNELS:
            _lower_transpose_upsampling(ctx, p)
        else:
            _lower_transpose_vector(ctx, p)
        return
    q = p.quant
    depthwise = isinstance(p, DepthwiseConv2DParams)
    if depthwise:   # filter [1, KH, KW, CO]; output channel co reads input channel co / M
        cig, cog, wso, wsk, wsc = 1, p.depth_multiplier, 1, p.out_c, 0
    else:
        groups = getattr(p, "groups", 1)
        cig, cog = p.in_c // groups, p.out_c // groups
        wso, wsk, wsc = p.kernel_h * p.kernel_w * cig, cig, 1
    # GROUPED_CONV_2D and TRANSPOSE_CONV_2D clamp to the finite range even without an activation
    finite = isinstance(p, (GroupedConv2DParams, TransposeConv2DParams))
    lo, hi = (max(p.float_min, -FLT_MAX), min(p.float_max, FLT_MAX)) if finite else (p.float_min, p.float_max)
    d = {"T": ctype(x), "WT": ctype(f), "BT": ctype(b), "QUANT": int(q is not None),
         "TRANSPOSE": int(isinstance(p, TransposeConv2DParams)), "H": p.in_h, "W": p.in_w, "OH": p.out_h,
         "OW": p.out_w, "CO": p.out_c, "ROWS": p.batch * p.out_h, "CIG": cig, "COG": cog,
         "WSO": wso, "WSK": wsk, "WSC": wsc, "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h,
         "SW": p.stride_w, "DH": p.dilation_h, "DW": p.dilation_w, "PT": p.pad_top, "PL": p.pad_left,
         "ZX": q.input_zero_point if q else 0, "ZW": q.filter_zero_point if q else 0,
         "ZO": q.output_zero_point if q else 0, "ACT_MIN": p.act_min, "ACT_MAX": p.act_max,
         **float_act(lo, hi, p.nan_to_low, p.hard_swish)}
    for prefix, c in (("X", p.in_c), ("O", p.out_c)):
        h, w = (p.in_h, p.in_w) if prefix == "X" else (p.out_h, p.out_w)
        d.update(zip((prefix + "N", prefix + "Y", prefix + "X", prefix + "C"),
                     image_strides(p.batch, h, w, c, p.nchw)))
    d.update(float_io(x))
    d.update(float_io(f, "W_"))
    d.update(float_io(b, "B_"))
    inputs = [ctx.input(0), ctx.input(1), ctx.input(2)]
    if q is not None:
        inputs.append(ctx.constant(quant_table(p.quant, p.out_c, p.out_c)))
    ctx.emit("conv_general.cl", d, inputs, [ctx.output(0)], (p.out_c, p.out_w, p.batch * p.out_h),
             Work.CHANNEL_LANES)


# ---- the operations ---------------------------------------------------------------------------------

def conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return _fused_activation_input(inputs, depthwise=False)


def depthwise_conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return _fused_activation_input(inputs, depthwise=True)


def filter_rows_multiply_adds(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> int:
    """Filter [out, …, in]: each output element takes filter elements ÷ out multiply-adds."""
    f = inputs[1].shape
    return numel(outputs[0].shape) * (numel(f) // max(1, f[0]))


def depthwise_multiply_adds(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> int:
    """Filter [1, h, w, out]: each output element takes h·w multiply-adds."""
    f = inputs[1].shape
    return numel(outputs[0].shape) * (numel(f) // max(1, f[-1]))


def transpose_multiply_adds(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> int:
    """Filter [out, h, w, in]: each input element takes out·h·w multiply-adds."""
    f = inputs[1].shape
    return numel(inputs[0].shape) * (numel(f) // max(1, f[-1]))


@operation(OperationType.CONV_2D, signature=CONV_2D_SIGNATURE, reference=reference_conv_2d, lower=lower_conv_2d,
           supports=supports_conv, fused_activation_input=conv_2d_fused_activation_input,
           multiply_adds=filter_rows_multiply_adds, accepts_residual=conv_2d_is_float_gemm,
           accepts_input_scale=conv_2d_is_float_gemm, accepts_prelu=conv_2d_takes_prelu,
           accepts_zero_pad=conv_takes_zero_pad, accepts_depthwise_input=conv_2d_is_float_gemm)
def conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Conv2DParams:
    return _conv("CONV_2D", inputs, outputs, depthwise=False)


@operation(OperationType.DEPTHWISE_CONV_2D, signature=DEPTHWISE_CONV_2D_SIGNATURE,
           reference=reference_depthwise_conv_2d, lower=lower_depthwise_conv_2d, supports=supports_conv,
           fused_activation_input=depthwise_conv_2d_fused_activation_input, multiply_adds=depthwise_multiply_adds,
           accepts_zero_pad=conv_takes_zero_pad, fuses_into_gemm=depthwise_fuses_into_gemm)
def depthwise_conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthwiseConv2DParams:
    return _conv("DEPTHWISE_CONV_2D", inputs, outputs, depthwise=True)


def grouped_conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return fuse_code_input(3, 1, len(inputs) == 12)


def transpose_conv_2d_fused_activation_input(inputs: list[TensorInfo]) -> int | None:
    return 9 if len(inputs) == 11 else 7


@operation(OperationType.GROUPED_CONV_2D, signature=GROUPED_CONV_2D_SIGNATURE, reference=reference_grouped_conv_2d,
           lower=lower_conv_general, supports=supports_conv_general,
           fused_activation_input=grouped_conv_2d_fused_activation_input, multiply_adds=filter_rows_multiply_adds)
def grouped_conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GroupedConv2DParams:
    return _grouped_conv(inputs, outputs)


@operation(OperationType.TRANSPOSE_CONV_2D, signature=TRANSPOSE_CONV_2D_SIGNATURE,
           reference=reference_transpose_conv_2d, lower=lower_conv_general, supports=supports_conv_general,
           fused_activation_input=transpose_conv_2d_fused_activation_input, value_inputs=(3,),
           multiply_adds=transpose_multiply_adds)
def transpose_conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> TransposeConv2DParams:
    return _transpose_conv(inputs, outputs)
