"""CONV_2D and DEPTHWISE_CONV_2D (HAL 1.0 ops, with the FL3 layout / dilation / per-channel extensions).

The params carry everything a kernel needs, NHWC-normalised (``nchw`` only says how input 0 and
output 0 are laid out in memory): shapes, resolved explicit padding, strides, dilations, fused
activation (float range and quantized clamp range), and for quantized types the requantisation
constants of operands.md §8.5 (``Requantization``: one (multiplier, shift) pair per output channel,
shift > 0 = left shift, applied with MultiplyByQuantizedMultiplier to the int32 accumulator).

Also home of the fused-activation and requantisation helpers used by FULLY_CONNECTED and the pools.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quant
from ..hal.abbreviations import PC8
from ..hal.types import OperandType, OperationType
from .base import OpParams, TensorInfo, fuse_code, operation, require
from .padding import decode_window_args, resolve_window


def f32(x: float) -> float:
    """A scale as the C++ reference sees it (a ``float``), widened back to a Python float."""
    return float(np.float32(x))


# ---- fused activation --------------------------------------------------------------------------------

@dataclass
class ActivationParams(OpParams):
    """Fused activation (operands.md §4), resolved for the output operand.

    ``activation``: FuseCode 0 NONE, 1 RELU, 2 RELU1, 3 RELU6.
    ``float_min``/``float_max``: clamp bounds for float outputs (±inf when unbounded).
    ``act_min``/``act_max``: integer clamp bounds for quantized outputs, in stored units (already
    including the output zero point and the type's range); (0, 0) for float outputs.
    """

    activation: int = 0
    float_min: float = -float("inf")
    float_max: float = float("inf")
    act_min: int = 0
    act_max: int = 0


def activation_fields(code_info: TensorInfo, out: TensorInfo, op_name: str) -> dict:
    """The ActivationParams fields for fuse-code input ``code_info`` and output ``out``."""
    code = fuse_code(code_info, op_name)
    lo, hi = quant.activation_range_float(code)
    fields = dict(activation=code, float_min=lo, float_max=hi, act_min=0, act_max=0)
    if out.is_quantized:
        qmin, qmax = out.qrange
        fields["act_min"], fields["act_max"] = quant.activation_range_quantized(
            code, f32(out.scale), out.zero_point, qmin, qmax)
    return fields


# ---- requantisation of an int32 accumulator -----------------------------------------------------------

@dataclass
class Requantization:
    """Integer requantisation of a conv-like op (operands.md §8.5).

    acc[c]   = bias[c] + Σ (q_in − input_zero_point)·(q_w − filter_zero_point)     (int32)
    q_out[c] = clamp(output_zero_point + MBQM(acc[c], output_multiplier[c], output_shift[c]),
                     act_min, act_max)
    ``output_multiplier``/``output_shift`` have one entry per output channel (repeated when the
    filter is per-tensor); ``per_channel`` tells whether they actually differ by channel.
    ``real_multiplier`` is s_in·s_w[c]/s_out (documentation / float fallbacks).
    """

    input_zero_point: int = 0
    filter_zero_point: int = 0
    output_zero_point: int = 0
    output_multiplier: tuple[int, ...] = ()
    output_shift: tuple[int, ...] = ()
    real_multiplier: tuple[float, ...] = ()
    per_channel: bool = False


def requantization(inp: TensorInfo, weights: TensorInfo, bias: TensorInfo, out: TensorInfo, n_out: int,
                   channel_dim: int, op_name: str) -> Requantization | None:
    """Requantisation constants for a quantized conv / depthwise / FC; None for float types."""
    if not inp.is_quantized:
        return None
    s_in, s_out = f32(inp.scale), f32(out.scale)
    require(s_out > 0.0, op_name, "quantized output scale must be > 0")
    if weights.type == PC8:
        cq = weights.channel_quant
        require(cq is not None, op_name, "per-channel filter without per-channel quantization parameters")
        require(cq.channel_dim == channel_dim, op_name,
                f"per-channel filter must have channelDim {channel_dim}, got {cq.channel_dim}")
        require(len(cq.scales) == n_out, op_name,
                f"per-channel filter has {len(cq.scales)} scales for {n_out} output channels")
        w_scales = [f32(s) for s in cq.scales]
        w_zp = 0
        per_channel = True
    else:
        w_scales = [f32(weights.scale)] * n_out
        w_zp = weights.zero_point
        per_channel = False
        product = f32(np.float32(s_in) * np.float32(w_scales[0]))
        require(abs(product - f32(bias.scale)) <= 1e-6 * min(product, f32(bias.scale)), op_name,
                f"bias scale {bias.scale} must equal input scale × filter scale = {product}")
    reals, mults, shifts = [], [], []
    for s_w in w_scales:
        real = f32(np.float32(s_in) * np.float32(s_w)) / s_out
        m, e = quant.quantize_multiplier(real)
        reals.append(real)
        mults.append(m)
        shifts.append(e)
    return Requantization(inp.zero_point, w_zp, out.zero_point, tuple(mults), tuple(shifts), tuple(reals),
                          per_channel)


# ---- window ops --------------------------------------------------------------------------------------

@dataclass
class Window2DParams(ActivationParams):
    """A 2-D sliding-window operation, NHWC-normalised.

    Input 0 is logically [batch, in_h, in_w, in_c] and output 0 [batch, out_h, out_w, out_c]; when
    ``nchw`` is true both are stored as [N, C, H, W] (``output_shapes`` is in the stored layout).
    Output (y, x) reads input rows ``y·stride_h − pad_top + i·dilation_h`` (i < kernel_h) and columns
    ``x·stride_w − pad_left + j·dilation_w`` (j < kernel_w); out-of-range cells are padding.
    """

    batch: int = 0
    in_h: int = 0
    in_w: int = 0
    in_c: int = 0
    out_h: int = 0
    out_w: int = 0
    out_c: int = 0
    kernel_h: int = 1
    kernel_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1
    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0
    nchw: bool = False


def nhwc_dims(inp: TensorInfo, nchw: bool, op_name: str) -> tuple[int, int, int, int]:
    """(N, H, W, C) of a rank-4 input in either layout."""
    dims = inp.dims()
    require(len(dims) == 4, op_name, f"input must be rank 4, got shape {list(dims)}")
    n, a, b, c = dims
    n, h, w, c = (n, b, c, a) if nchw else (n, a, b, c)
    require(h > 0 and w > 0 and c > 0, op_name, f"input height, width and depth must be > 0, got {list(dims)}")
    return n, h, w, c


def stored_shape(n: int, h: int, w: int, c: int, nchw: bool) -> tuple[int, int, int, int]:
    return (n, c, h, w) if nchw else (n, h, w, c)


def window_fields(args, win, n, h, w, c, out_c, kh, kw) -> dict:
    """The Window2DParams shape/padding fields."""
    return dict(batch=n, in_h=h, in_w=w, in_c=c, out_h=win.out_h, out_w=win.out_w, out_c=out_c,
                kernel_h=kh, kernel_w=kw, stride_h=args.stride_h, stride_w=args.stride_w,
                dilation_h=args.dilation_h, dilation_w=args.dilation_w, pad_top=win.pad_top,
                pad_bottom=win.pad_bottom, pad_left=win.pad_left, pad_right=win.pad_right, nchw=args.nchw,
                output_shapes=[stored_shape(n, win.out_h, win.out_w, out_c, args.nchw)])


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


def _conv(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo], depthwise: bool) -> Conv2DParams:
    inp, filt, bias = inputs[0], inputs[1], inputs[2]
    n_extras = 1 if depthwise else 0  # the depth multiplier
    explicit = len(inputs) >= 10 + n_extras and inputs[7 + n_extras].type == OperandType.INT32
    args = decode_window_args(inputs, 3, n_extras, explicit, name)
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


@operation(OperationType.CONV_2D)
def conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Conv2DParams:
    return _conv("CONV_2D", inputs, outputs, depthwise=False)


@operation(OperationType.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthwiseConv2DParams:
    return _conv("DEPTHWISE_CONV_2D", inputs, outputs, depthwise=True)
