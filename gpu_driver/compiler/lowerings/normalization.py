"""L2_NORMALIZATION (float32 exact-bar; quant8_asymm within ±1) and LOCAL_RESPONSE_NORMALIZATION
(float32), along any axis."""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, ctype, known, launch_1d, params_ok, trailing_scalars_constant


def _l2_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out) or len(x.shape) > 4 or x.type != out.type or x.type not in (F32, Q8A):
        return False
    return x.type == F32 or (out.zero_point == 128 and abs(out.scale - 1.0 / 128) < 1e-12)


@lowering(OperationType.L2_NORMALIZATION, supports=_l2_supports)
def lower_l2_normalization(ctx: LoweringContext) -> None:
    p = ctx.params
    x = ctx.inputs[0]
    rows = p.outer_size * p.inner_size
    if rows * p.axis_size == 0:
        return
    d = {"T": ctype(x), "QUANT": int(x.type == Q8A), "OUTER": p.outer_size, "AXIS": p.axis_size,
         "INNER": p.inner_size, "EPS": float(p.epsilon), "ZX": p.input_zero_point, "ZO": p.output_zero_point,
         "QMIN": 0, "QMAX": 255}
    g, l = launch_1d(rows, 32)
    ctx.emit("l2norm.cl", d, [ctx.input(0)], [ctx.output(0)], g, l)


def _lrn_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and len(x.shape) <= 4 and x.type == F32 and out.type == F32


@lowering(OperationType.LOCAL_RESPONSE_NORMALIZATION, supports=_lrn_supports)
def lower_lrn(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.outer_size * p.axis_size * p.inner_size
    if count == 0:
        return
    d = {"COUNT": count, "AXIS": p.axis_size, "INNER": p.inner_size, "RADIUS": min(p.radius, p.axis_size),
         "BIAS": float(p.bias), "ALPHA": float(p.alpha), "BETA": float(p.beta)}
    g, l = launch_1d(count)
    ctx.emit("lrn.cl", d, [ctx.input(0)], [ctx.output(0)], g, l)
