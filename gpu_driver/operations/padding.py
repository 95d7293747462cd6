"""Spatial-window argument decoding and padding math shared by CONV_2D, DEPTHWISE_CONV_2D and the pools.

operands.md §5: implicit padding codes (SAME / VALID) resolve to explicit head/tail padding per axis;
the output size of a window operation with explicit padding is
``out = (in + head + tail − k_eff + stride) // stride`` with ``k_eff = (k − 1)·d + 1``.

The window operations share one argument layout after their leading tensors (``first`` below):

- explicit: pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, <extras>, fuse,
  [layout], [dilation_w, dilation_h]
- implicit: padding_code, stride_w, stride_h, <extras>, fuse, [layout], [dilation_w, dilation_h]

where ``<extras>`` are op-specific INT32 scalars (pools: filter_w, filter_h; depthwise: depth
multiplier; conv: none).
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import TensorInfo, require

PADDING_SAME = 1
PADDING_VALID = 2


def effective_kernel(k: int, dilation: int) -> int:
    """k_eff = (k − 1)·d + 1."""
    return (k - 1) * dilation + 1


def implicit_padding(code: int, in_size: int, stride: int, k: int, dilation: int = 1) -> tuple[int, int]:
    """(head, tail) padding of one spatial axis for a padding code (1 SAME, 2 VALID)."""
    if code == PADDING_VALID:
        return 0, 0
    k_eff = effective_kernel(k, dilation)
    out = (in_size + stride - 1) // stride
    total = max(0, (out - 1) * stride + k_eff - in_size)
    head = total // 2
    return head, total - head


def window_output_size(in_size: int, k: int, stride: int, dilation: int, head: int, tail: int) -> int:
    """Output size of one spatial axis with explicit padding (may be ≤ 0 for a bad configuration)."""
    return (in_size + head + tail - effective_kernel(k, dilation) + stride) // stride


@dataclass
class WindowArgs:
    """The decoded scalar arguments of a window operation, before the padding is resolved."""

    padding_code: int | None  # None for the explicit signature
    pads: tuple[int, int, int, int]  # (left, right, top, bottom); zeros for the implicit signature
    stride_w: int
    stride_h: int
    extras: tuple[int, ...]
    activation_index: int  # input index of the fuse code
    nchw: bool
    dilation_w: int
    dilation_h: int


def decode_window_args(inputs: list[TensorInfo], first: int, n_extras: int, explicit: bool,
                       op_name: str) -> WindowArgs:
    """Decode the scalars that follow the leading tensors (see the module docstring)."""
    i = first
    if explicit:
        pads = tuple(inputs[i + k].scalar() for k in range(4))
        code = None
        i += 4
    else:
        code = inputs[i].scalar()
        require(code in (PADDING_SAME, PADDING_VALID), op_name, f"padding code {code} is not SAME (1) or VALID (2)")
        pads = (0, 0, 0, 0)
        i += 1
    stride_w, stride_h = inputs[i].scalar(), inputs[i + 1].scalar()
    i += 2
    extras = tuple(inputs[i + k].scalar() for k in range(n_extras))
    i += n_extras
    act_index = i
    i += 1
    nchw = False
    if len(inputs) > i and not inputs[i].omitted:
        nchw = bool(inputs[i].scalar())
    i += 1
    dilation_w = dilation_h = 1
    if len(inputs) > i + 1 and not inputs[i].omitted and not inputs[i + 1].omitted:
        dilation_w, dilation_h = inputs[i].scalar(), inputs[i + 1].scalar()
    require(stride_w >= 1 and stride_h >= 1, op_name, f"strides ({stride_w}, {stride_h}) must be >= 1")
    require(dilation_w >= 1 and dilation_h >= 1, op_name,
            f"dilation factors ({dilation_w}, {dilation_h}) must be >= 1")
    return WindowArgs(code, pads, stride_w, stride_h, extras, act_index, nchw, dilation_w, dilation_h)


@dataclass
class ResolvedWindow:
    """Explicit padding and output size of both spatial axes."""

    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    out_h: int
    out_w: int


def resolve_window(args: WindowArgs, in_h: int, in_w: int, kernel_h: int, kernel_w: int,
                   op_name: str, pad_limit_uses_dilation: bool = True) -> ResolvedWindow:
    """Turn decoded arguments into explicit padding and output sizes; check the padding constraints.

    Explicit padding must be ≥ 0 and < k_eff (conv, depthwise) or < k (pools) on its axis.
    """
    require(kernel_h >= 1 and kernel_w >= 1, op_name, f"filter size ({kernel_h}, {kernel_w}) must be >= 1")
    dh, dw = args.dilation_h, args.dilation_w
    if args.padding_code is not None:
        top, bottom = implicit_padding(args.padding_code, in_h, args.stride_h, kernel_h, dh)
        left, right = implicit_padding(args.padding_code, in_w, args.stride_w, kernel_w, dw)
    else:
        left, right, top, bottom = args.pads
        lim_h = effective_kernel(kernel_h, dh) if pad_limit_uses_dilation else kernel_h
        lim_w = effective_kernel(kernel_w, dw) if pad_limit_uses_dilation else kernel_w
        require(min(left, right, top, bottom) >= 0, op_name, f"padding {args.pads} must be >= 0")
        require(top < lim_h and bottom < lim_h and left < lim_w and right < lim_w, op_name,
                f"padding (left, right, top, bottom) = {args.pads} must be smaller than the filter size "
                f"({lim_h}, {lim_w})")
    out_h = window_output_size(in_h, kernel_h, args.stride_h, dh, top, bottom)
    out_w = window_output_size(in_w, kernel_w, args.stride_w, dw, left, right)
    require(out_h >= 1 and out_w >= 1, op_name,
            f"filter ({kernel_h}x{kernel_w}, dilation {dh}x{dw}) does not fit the padded {in_h}x{in_w} input")
    return ResolvedWindow(left, right, top, bottom, out_h, out_w)
