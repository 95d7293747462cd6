"""RESIZE_BILINEAR: TFLite reference arithmetic in fp32; quantized types interpolate raw values and truncate."""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.resize import ResizeParams
from ..registry import F16, F32, Q8A, Q8AS, kernel
from .shape_ops import from_nhwc, to_nhwc


def interpolation_axis(out_size: int, scale: float, half_pixel: bool, in_size: int):
    """(lower index, upper index, fraction) per output position of one axis, in fp32."""
    o = np.arange(out_size, dtype=np.float32)
    s = np.float32(scale)
    src = (o + np.float32(0.5)) * s - np.float32(0.5) if half_pixel else o * s
    lo = np.maximum(np.floor(src).astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, (src - lo.astype(np.float32)).astype(np.float32)


@kernel(OperationType.RESIZE_BILINEAR, types=(F32, F16, Q8A, Q8AS))
def resize_bilinear(params: ResizeParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
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
