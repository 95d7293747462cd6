"""CONCATENATION (HAL 1.0): one copy kernel per input, float32 and quant8_asymm.

Quantized inputs whose (scale, zero point) differ from the output's are requantised with the params'
fp32 constants (operands.md §8.2); identical params are byte copies (exact).
"""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, ctype, known, launch_1d, params_ok, scalars_constant


def _supports(ctx: LoweringContext) -> bool:
    n = len(ctx.node.inputs)
    if not params_ok(ctx) or not scalars_constant(ctx, [n - 1]):
        return False
    tensors, out = ctx.inputs[:-1], ctx.outputs[0]
    return (known(*tensors, out) and out.type in (F32, Q8A) and all(t.type == out.type for t in tensors))


@lowering(OperationType.CONCATENATION, supports=_supports)
def lower_concatenation(ctx: LoweringContext) -> None:
    p = ctx.params
    out = ctx.outputs[0]
    out_row = sum(p.axis_sizes) * p.inner
    offset = 0
    for i, size in enumerate(p.axis_sizes):
        in_row = size * p.inner
        count = p.outer * in_row
        if count:
            requant = bool(p.requantize[i]) if p.requantize else False
            d = {"T": ctype(out), "COUNT": count, "IN_ROW": in_row, "OUT_ROW": out_row, "OFFSET": offset,
                 "REQUANT": int(requant), "RS": p.requant_scale[i] if requant else 0.0,
                 "RB": p.requant_bias[i] if requant else 0.0, "ZO": p.output_zero_point,
                 "QMIN": p.qmin, "QMAX": p.qmax}
            g, l = launch_1d(count)
            ctx.emit("concat.cl", d, [ctx.input(i)], [ctx.output(0)], g, l)
        offset += in_row
