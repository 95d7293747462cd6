"""2-D sliding windows: argument decoding, padding math and reference helpers of the convolutions
(plain and depthwise) and the pools.

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

import numpy as np

from .definition import TensorInfo, optional_bool, require
from .fused_activation import ActivationParams
from .layout import ImageSizes, stored_shape

PADDING_SAME = 1
PADDING_VALID = 2


@dataclass
class Window2DParams(ActivationParams, ImageSizes):
    """A 2-D sliding-window operation (sizes: :class:`ImageSizes`; ``output_shapes`` is in the stored
    layout).  Output (y, x) reads input rows ``y·stride_h − pad_top + i·dilation_h`` (i < kernel_h) and columns
    ``x·stride_w − pad_left + j·dilation_w`` (j < kernel_w); out-of-range cells are padding.
    """

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


@dataclass
class ResolvedWindow:
    """Explicit padding and output size of both spatial axes."""

    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    out_h: int
    out_w: int


def tile_columns(p: Window2DParams, px: int) -> int:
    """The input columns a tile of ``px`` consecutive output pixels of a row reads."""
    return (px - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1


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


def fuse_code_input(first: int, n_extras: int, explicit: bool) -> int:
    """Input index of the fuse code: after the padding (4 pads or 1 code), 2 strides and the extras."""
    return first + (4 if explicit else 1) + 2 + n_extras


def decode_window_args(inputs: list[TensorInfo], first: int, n_extras: int, explicit: bool,
                       op_name: str) -> WindowArgs:
    """Decode the scalars that follow the leading tensors (see the module docstring)."""
    act_index = fuse_code_input(first, n_extras, explicit)
    if explicit:
        pads = tuple(inputs[first + k].scalar() for k in range(4))
        code = None
    else:
        code = inputs[first].scalar()
        require(code in (PADDING_SAME, PADDING_VALID), op_name, f"padding code {code} is not SAME (1) or VALID (2)")
        pads = (0, 0, 0, 0)
    strides = act_index - n_extras - 2
    stride_w, stride_h = inputs[strides].scalar(), inputs[strides + 1].scalar()
    extras = tuple(inputs[act_index - n_extras + k].scalar() for k in range(n_extras))
    nchw = optional_bool(inputs, act_index + 1)
    dilation_w = dilation_h = 1
    dilation = act_index + 2
    if len(inputs) > dilation + 1 and not inputs[dilation].omitted and not inputs[dilation + 1].omitted:
        dilation_w, dilation_h = inputs[dilation].scalar(), inputs[dilation + 1].scalar()
    require(stride_w >= 1 and stride_h >= 1, op_name, f"strides ({stride_w}, {stride_h}) must be >= 1")
    require(dilation_w >= 1 and dilation_h >= 1, op_name,
            f"dilation factors ({dilation_w}, {dilation_h}) must be >= 1")
    return WindowArgs(code, pads, stride_w, stride_h, extras, act_index, nchw, dilation_w, dilation_h)


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


def window_fields(args: WindowArgs, win: ResolvedWindow, n: int, h: int, w: int, c: int, out_c: int,
                  kh: int, kw: int) -> dict:
    """The Window2DParams shape/padding fields."""
    return dict(batch=n, in_h=h, in_w=w, in_c=c, out_h=win.out_h, out_w=win.out_w, out_c=out_c,
                kernel_h=kh, kernel_w=kw, stride_h=args.stride_h, stride_w=args.stride_w,
                dilation_h=args.dilation_h, dilation_w=args.dilation_w, pad_top=win.pad_top,
                pad_bottom=win.pad_bottom, pad_left=win.pad_left, pad_right=win.pad_right, nchw=args.nchw,
                output_shapes=[stored_shape(n, win.out_h, win.out_w, out_c, args.nchw)])


# ---- reference helpers ------------------------------------------------------------------------------

def pad_spatial(x: np.ndarray, p: Window2DParams, value=0) -> np.ndarray:
    """Pad an NHWC array with ``p``'s explicit padding (``value`` in the padded cells)."""
    if not (p.pad_top or p.pad_bottom or p.pad_left or p.pad_right):
        return x
    return np.pad(x, ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0)),
                  constant_values=value)


def window_taps(xp: np.ndarray, p: Window2DParams):
    """Yield (i, j, view) for every filter tap: ``view[n, y, x, c]`` is the padded input cell that
    tap (i, j) of output (y, x) reads."""
    h_span = (p.out_h - 1) * p.stride_h + 1
    w_span = (p.out_w - 1) * p.stride_w + 1
    for i in range(p.kernel_h):
        y0 = i * p.dilation_h
        for j in range(p.kernel_w):
            x0 = j * p.dilation_w
            yield i, j, xp[:, y0:y0 + h_span:p.stride_h, x0:x0 + w_span:p.stride_w, :]
