"""RESIZE_BILINEAR (FL1) and RESIZE_NEAREST_NEIGHBOR (FL3): by output size or by scale (FL3;
new size = floor(in·scale) in fp32), NCHW layout (optional for bilinear, FL3; required for nearest),
align_corners / half_pixel_centers (FL4, not both).  Quantization of the output = the input's.

Per axis, scale = (align_corners && out > 1) ? (in − 1)/(out − 1) : in/out, in fp32.
- Bilinear: TFLite's reference arithmetic, in fp32 and in its order; quantized types interpolate
  the raw stored values and truncate toward zero (the C float→integer cast).
- Nearest: src = half_pixel_centers ? (o + 0.5)·scale : o·scale (fp32); index = align_corners ?
  round half away from zero (roundf) : floor, then min(index, in − 1) and, with half_pixel_centers,
  max(index, 0).  The whole channel vector is copied.

The lowering (``resize.cl``) runs every type and both layouts, one work item per output pixel (looping over its channels).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import QRANGE, ctype, float_io, known, params_ok, trailing_scalars_constant
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, optional_bool, require, same_quant_as_input
from .layout import ImageSizes, from_nhwc, image_strides, nhwc_dims, stored_shape, to_nhwc
from .registry import operation
from .signature import BOOL, F16, F32, LAYOUT, Q8A, Q8AS, RANK4, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class ResizeParams(OpParams, ImageSizes):
    """An image resize (sizes: :class:`ImageSizes`; ``in_c == out_c``).

    Bilinear, per output row y (and likewise column x), all in fp32 exactly as the reference:
    ``src = half_pixel_centers ? (y + 0.5)·height_scale − 0.5 : y·height_scale``,
    ``y0 = max(floor(src), 0)``, ``y1 = min(ceil(src), in_h − 1)``, ``ty = src − y0``;
    out = in[y0,x0]·(1−ty)·(1−tx) + in[y1,x0]·ty·(1−tx) + in[y0,x1]·(1−ty)·tx + in[y1,x1]·ty·tx
    (left to right).  Quantized types interpolate the raw stored values and truncate toward zero.
    ``height_scale``/``width_scale`` are fp32 values: (in−1)/(out−1) when align_corners and out > 1,
    else in/out.  Nearest neighbour: see the module docstring.
    """

    align_corners: bool = False
    half_pixel_centers: bool = False
    height_scale: float = 1.0
    width_scale: float = 1.0


# ---- signature ------------------------------------------------------------------------------------------

#: after the sizes / scales: NCHW flag (FL3), align_corners (FL4), half_pixel_centers (FL4)
_RESIZE_FLAGS = (LAYOUT, ((BOOL,), 4), ((BOOL,), 4))

RESIZE_BILINEAR_SIGNATURE = OpSignature(
    {F32: 1, F16: 3, Q8A: 3, Q8AS: 4},
    (Variant("size", ("T", i32, i32), ("T",), _RESIZE_FLAGS),
     Variant("scale", ("T", "F", "F"), ("T",), _RESIZE_FLAGS, feature_level=3)),
    ranks={0: RANK4}, out_ranks={0: RANK4}, same_quant=((0, 0),))

# the layout flag is required
RESIZE_NEAREST_NEIGHBOR_SIGNATURE = OpSignature(
    {F32: 3, F16: 3, Q8A: 3, Q8AS: 4},
    (Variant("size", ("T", i32, i32, BOOL), ("T",), _RESIZE_FLAGS[1:]),
     Variant("scale", ("T", "F", "F", BOOL), ("T",), _RESIZE_FLAGS[1:])),
    ranks={0: RANK4}, out_ranks={0: RANK4}, same_quant=((0, 0),))


# ---- definition helpers ---------------------------------------------------------------------------------

def axis_scale(in_size: int, out_size: int, align_corners: bool) -> float:
    """The fp32 source-per-destination step of one axis (TFLite's height_scale / width_scale)."""
    if align_corners and out_size > 1:
        return float(np.float32(in_size - 1) / np.float32(out_size - 1))
    return float(np.float32(in_size) / np.float32(out_size))


def decode_resize(inputs: list[TensorInfo], outputs: list[TensorInfo], name: str) -> ResizeParams:
    """Decode input, new width/height (sizes or scales), layout, align_corners, half_pixel_centers."""
    inp, out = inputs[0], outputs[0]
    nchw = optional_bool(inputs, 3)
    align = optional_bool(inputs, 4)
    half = optional_bool(inputs, 5)
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
    return ResizeParams(output_shapes=[stored_shape(n, new_h, new_w, c, nchw)], nchw=nchw, batch=n, in_c=c, out_c=c,
                        in_h=h, in_w=w, out_h=new_h, out_w=new_w, align_corners=align, half_pixel_centers=half,
                        height_scale=axis_scale(h, new_h, align), width_scale=axis_scale(w, new_w, align))


# ---- reference kernel -----------------------------------------------------------------------------------

def interpolation_axis(out_size: int, scale: float, half_pixel: bool, in_size: int):
    """(lower index, upper index, fraction) per output position of one axis, in fp32."""
    o = np.arange(out_size, dtype=np.float32)
    s = np.float32(scale)
    src = (o + np.float32(0.5)) * s - np.float32(0.5) if half_pixel else o * s
    lo = np.maximum(np.floor(src).astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, (src - lo.astype(np.float32)).astype(np.float32)


def resize_bilinear_reference(params: ResizeParams, inputs: list[TensorInfo],
                              outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, out = params, outputs[0]
    x = to_nhwc(inputs[0].array(), p.nchw).astype(np.float32)
    y0, y1, ty = interpolation_axis(p.out_h, p.height_scale, p.half_pixel_centers, p.in_h)
    x0, x1, tx = interpolation_axis(p.out_w, p.width_scale, p.half_pixel_centers, p.in_w)
    ty = ty[None, :, None, None]
    tx = tx[None, None, :, None]
    one = np.float32(1.0)
    rows0, rows1 = x[:, y0], x[:, y1]
    r = (rows0[:, :, x0] * (one - ty) * (one - tx) + rows1[:, :, x0] * ty * (one - tx)
         + rows0[:, :, x1] * (one - ty) * tx + rows1[:, :, x1] * ty * tx)
    if inputs[0].is_quantized:
        qmin, qmax = out.qrange
        r = np.clip(np.trunc(r), qmin, qmax)      # C float→integer cast truncates
    return [from_nhwc(r.astype(out.dtype), p.nchw)]


def nearest_axis(out_size: int, scale: float, align_corners: bool, half_pixel: bool, in_size: int) -> np.ndarray:
    """The source index of every output position of one axis (fp32 arithmetic as AOSP)."""
    o = np.arange(out_size, dtype=np.float32)
    s = np.float32(scale)
    src = ((o + np.float32(0.5)) * s if half_pixel else o * s).astype(np.float64)
    idx = np.floor(src + 0.5) if align_corners else np.floor(src)   # src >= 0: roundf = floor(x + 0.5)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half_pixel else idx


def resize_nearest_neighbor_reference(params: ResizeParams, inputs: list[TensorInfo],
                                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    x = to_nhwc(inputs[0].array(), p.nchw)
    ys = nearest_axis(p.out_h, p.height_scale, p.align_corners, p.half_pixel_centers, p.in_h)
    xs = nearest_axis(p.out_w, p.width_scale, p.align_corners, p.half_pixel_centers, p.in_w)
    return [from_nhwc(x[:, ys][:, :, xs].astype(outputs[0].dtype), p.nchw)]


# ---- lowering -------------------------------------------------------------------------------------------

def resize_supported(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type and x.type in (F32, F16, Q8A, Q8AS)


def _lower_resize(ctx: LoweringContext, nearest: bool) -> None:
    """One resize.cl launch over (output column, batch·output row), each looping over the channels."""
    p = ctx.params
    if p.batch == 0:
        return
    x = ctx.inputs[0]
    qmin, qmax = QRANGE.get(x.type, (0, 0))
    d = {"T": ctype(x), "NEAREST": int(nearest), "QUANT": int(x.type in QRANGE), "H": p.in_h, "W": p.in_w,
         "C": p.in_c, "OH": p.out_h, "OW": p.out_w, "ROWS": p.batch * p.out_h, "SCALE_H": float(p.height_scale),
         "SCALE_W": float(p.width_scale), "ALIGN": int(p.align_corners), "HALF_PIXEL": int(p.half_pixel_centers),
         "QMIN": qmin, "QMAX": qmax}
    d.update(zip(("XN", "XY", "XX", "XC"), image_strides(p.batch, p.in_h, p.in_w, p.in_c, p.nchw)))
    d.update(zip(("ON", "OY", "OX", "OC"), image_strides(p.batch, p.out_h, p.out_w, p.out_c, p.nchw)))
    d.update(float_io(x))
    ctx.emit("resize.cl", d, [ctx.input(0)], [ctx.output(0)], (p.out_w, p.batch * p.out_h))


def lower_resize_bilinear(ctx: LoweringContext) -> None:
    _lower_resize(ctx, nearest=False)


def lower_resize_nearest_neighbor(ctx: LoweringContext) -> None:
    _lower_resize(ctx, nearest=True)


# ---- the operations -------------------------------------------------------------------------------------

@operation(OperationType.RESIZE_BILINEAR, signature=RESIZE_BILINEAR_SIGNATURE, reference=resize_bilinear_reference,
           lower=lower_resize_bilinear, supports=resize_supported)
def resize_bilinear(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ResizeParams:
    return decode_resize(inputs, outputs, "RESIZE_BILINEAR")


@operation(OperationType.RESIZE_NEAREST_NEIGHBOR, signature=RESIZE_NEAREST_NEIGHBOR_SIGNATURE,
           reference=resize_nearest_neighbor_reference, lower=lower_resize_nearest_neighbor, supports=resize_supported)
def resize_nearest_neighbor(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ResizeParams:
    return decode_resize(inputs, outputs, "RESIZE_NEAREST_NEIGHBOR")
