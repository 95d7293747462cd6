"""RESIZE_BILINEAR (HAL 1.0 + align_corners / half_pixel_centers), NHWC, float32 and quant8_asymm.

fp32 arithmetic in the reference's order; quantized values are truncated like the reference's C cast.
"""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, ctype, known, params_ok, trailing_scalars_constant


def _supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return not ctx.params.nchw and known(x, out) and x.type == out.type and x.type in (F32, Q8A)


@lowering(OperationType.RESIZE_BILINEAR, supports=_supports)
def lower_resize_bilinear(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    x = ctx.inputs[0]
    qmin, qmax = (0, 255) if x.type == Q8A else (0, 0)
    d = {"T": ctype(x), "QUANT": int(x.type == Q8A), "H": p.in_h, "W": p.in_w, "C": p.channels, "OH": p.out_h,
         "OW": p.out_w, "ROWS": p.batch * p.out_h, "SCALE_H": float(p.height_scale), "SCALE_W": float(p.width_scale),
         "HALF_PIXEL": int(p.half_pixel_centers), "QMIN": qmin, "QMAX": qmax}
    ctx.emit("resize_bilinear.cl", d, [ctx.input(0)], [ctx.output(0)], (p.channels, p.out_w, p.batch * p.out_h))
