"""AVERAGE_POOL_2D, MAX_POOL_2D (float32, quant8_asymm) and L2_POOL_2D (float32), NHWC.

Quantized results equal the reference exactly (integer sums, rounding half away from zero).
"""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, act_defines, ctype, known, params_ok, trailing_scalars_constant

_KIND = {"average": 0, "max": 1, "l2": 2}


def _supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if ctx.params.nchw or not known(x, out) or x.type != out.type:
        return False
    if ctx.node.type == OperationType.L2_POOL_2D:
        return x.type == F32
    return x.type in (F32, Q8A)


@lowering(OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D, supports=_supports)
def lower_pool(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    x, out = ctx.inputs[0], ctx.outputs[0]
    d = {"T": ctype(x), "QUANT": int(x.type == Q8A), "KIND": _KIND[p.kind], "H": p.in_h, "W": p.in_w,
         "C": p.in_c, "OH": p.out_h, "OW": p.out_w, "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h,
         "SW": p.stride_w, "PT": p.pad_top, "PL": p.pad_left, "ROWS": p.batch * p.out_h}
    d.update(act_defines(p, out))
    ctx.emit("pool2d.cl", d, [ctx.input(0)], [ctx.output(0)], (p.in_c, p.out_w, p.batch * p.out_h))
