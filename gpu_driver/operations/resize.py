"""RESIZE_BILINEAR (by size, FL1; by scale, layout FL3; align_corners / half_pixel_centers FL4)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hal.types import OperandType, OperationType
from .base import OpParams, TensorInfo, operation, require, same_quant_as_input
from .conv import nhwc_dims, stored_shape
from .shape_ops import optional_bool


@dataclass
class ResizeParams(OpParams):
    """An image resize, NHWC-normalised (``nchw``: input 0 / output 0 are stored [N,C,H,W]).

    Per output row y (and likewise column x), all in fp32 exactly as the reference:
    ``src = half_pixel_centers ? (y + 0.5)·height_scale − 0.5 : y·height_scale``,
    ``y0 = max(floor(src), 0)``, ``y1 = min(ceil(src), in_h − 1)``, ``ty = src − y0``;
    out = in[y0,x0]·(1−ty)·(1−tx) + in[y1,x0]·ty·(1−tx) + in[y0,x1]·(1−ty)·tx + in[y1,x1]·ty·tx
    (left to right).  Quantized types interpolate the raw stored values and truncate toward zero.
    ``height_scale``/``width_scale`` are fp32 values: (in−1)/(out−1) when align_corners and out > 1,
    else in/out.
    """

    nchw: bool = False
    batch: int = 0
    channels: int = 0
    in_h: int = 0
    in_w: int = 0
    out_h: int = 0
    out_w: int = 0
    align_corners: bool = False
    half_pixel_centers: bool = False
    height_scale: float = 1.0
    width_scale: float = 1.0


def axis_scale(in_size: int, out_size: int, align_corners: bool) -> float:
    """The fp32 source-per-destination step of one axis (TFLite's height_scale / width_scale)."""
    if align_corners and out_size > 1:
        return float(np.float32(in_size - 1) / np.float32(out_size - 1))
    return float(np.float32(in_size) / np.float32(out_size))


def decode_resize(inputs: list[TensorInfo], outputs: list[TensorInfo], name: str,
                  layout_index: int = 3) -> ResizeParams:
    """Decode input, new width/height (sizes or scales), layout, align_corners, half_pixel_centers."""
    inp, out = inputs[0], outputs[0]
    nchw = optional_bool(inputs, layout_index)
    align = optional_bool(inputs, layout_index + 1)
    half = optional_bool(inputs, layout_index + 2)
    require(not (align and half), name, "align_corners and half_pixel_centers cannot both be true")
    same_quant_as_input(inp, out, name)
    n, h, w, c = nhwc_dims(inp, nchw, name)
    if inputs[1].type == OperandType.INT32:
        new_w, new_h = inputs[1].scalar(), inputs[2].scalar()
    else:
        ws, hs = inputs[1].scalar(), inputs[2].scalar()
        require(math.isfinite(ws) and math.isfinite(hs), name, f"scales must be finite, got {ws}, {hs}")
        new_w = int(math.floor(np.float32(w) * np.float32(ws)))
        new_h = int(math.floor(np.float32(h) * np.float32(hs)))
    require(new_w > 0 and new_h > 0, name, f"output height and width must be > 0, got {new_h}×{new_w}")
    return ResizeParams(output_shapes=[stored_shape(n, new_h, new_w, c, nchw)], nchw=nchw, batch=n, channels=c,
                        in_h=h, in_w=w, out_h=new_h, out_w=new_w, align_corners=align, half_pixel_centers=half,
                        height_scale=axis_scale(h, new_h, align), width_scale=axis_scale(w, new_w, align))


@operation(OperationType.RESIZE_BILINEAR)
def resize_bilinear(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ResizeParams:
    return decode_resize(inputs, outputs, "RESIZE_BILINEAR")
