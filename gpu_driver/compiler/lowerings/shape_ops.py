"""RESHAPE (storage alias, no kernel), DEPTH_TO_SPACE and SPACE_TO_DEPTH (NHWC gathers, exact)."""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, ctype, known, launch_1d, numel, params_ok, scalars_constant


def _reshape_supports(ctx: LoweringContext) -> bool:
    # the target shape must be known at preparation (a constant shape input) so the alias is static
    x, out = ctx.inputs[0], ctx.outputs[0]
    return params_ok(ctx) and ctx.is_constant(1) and known(x, out) and x.type == out.type and \
        x.type in (F32, Q8A)


@lowering(OperationType.RESHAPE, supports=_reshape_supports)
def lower_reshape(ctx: LoweringContext) -> None:
    ctx.alias(0, 0)


def _ds_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [1, 2]):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return not ctx.params.nchw and known(x, out) and x.type == out.type and x.type in (F32, Q8A)


@lowering(OperationType.DEPTH_TO_SPACE, OperationType.SPACE_TO_DEPTH, supports=_ds_supports)
def lower_depth_space(ctx: LoweringContext) -> None:
    p = ctx.params
    count = numel(ctx.params.output_shapes[0])
    if count == 0:
        return
    d = {"T": ctype(ctx.inputs[0]), "COUNT": count, "MODE": 0 if ctx.node.type == OperationType.DEPTH_TO_SPACE else 1,
         "B": p.block_size, "IH": p.in_h, "IW": p.in_w, "IC": p.in_c, "OH": p.out_h, "OW": p.out_w, "OC": p.out_c}
    g, l = launch_1d(count)
    ctx.emit("depth_space.cl", d, [ctx.input(0)], [ctx.output(0)], g, l)
