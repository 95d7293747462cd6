"""RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR, DEQUANTIZE, SOFTMAX (HAL 1.0), float32 and quant8_asymm.

Quantized RELU* clamp the stored values (exact).  Quantized LOGISTIC/TANH depend on the input byte
only: lowering tabulates the reference's fixed-point function over all 256 inputs (exact match);
if the reference kernel cannot be evaluated the table falls back to quantize(f(dequantize(q)))
(within ±1, operands.md §8.6).  Quantized SOFTMAX computes in float with an exp table (±1).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ... import quant
from ...hal.types import OperationType
from ...operations import define
from ..lowering import LoweringContext, lowering
from ._util import F32, Q8A, axis_split, ctype, known, launch_1d, numel, params_ok, scalars_constant

_FLOAT_CLAMP = {OperationType.RELU: (0.0, math.inf), OperationType.RELU1: (-1.0, 1.0),
                OperationType.RELU6: (0.0, 6.0)}
_FIXED_OUT = {OperationType.LOGISTIC: (1.0 / 256, 0), OperationType.TANH: (1.0 / 128, 128),
              OperationType.SOFTMAX: (1.0 / 256, 0)}


def _unary_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out) or len(x.shape) > 4:
        return False
    op = ctx.node.type
    if op == OperationType.FLOOR:
        return x.type == F32 and out.type == F32
    if op == OperationType.DEQUANTIZE:
        return x.type == Q8A and out.type == F32
    if x.type != out.type or x.type not in (F32, Q8A):
        return False
    if x.type == Q8A and op in _FIXED_OUT:
        s, z = _FIXED_OUT[op]
        return out.zero_point == z and abs(out.scale - s) < 1e-12
    return True


def _table(ctx: LoweringContext) -> np.ndarray:
    """The quantized LOGISTIC/TANH output for every stored input value 0..255."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    values = np.arange(256, dtype=np.uint8)
    try:
        from ...reference.registry import KERNELS
        inp = dataclasses.replace(x, shape=(256,), value=values, known_shape=True)
        o = dataclasses.replace(out, shape=(256,), value=None, known_shape=True)
        params = define(ctx.node.type, [inp], [o])
        table = np.asarray(KERNELS[ctx.node.type](params, [inp], [o])[0]).reshape(256)
        return table.astype(np.uint8)
    except Exception:  # reference unavailable: the float formula (within ±1)
        real = (values.astype(np.float32) - np.float32(x.zero_point)) * np.float32(x.scale)
        f = 1.0 / (1.0 + np.exp(-real.astype(np.float64))) if ctx.node.type == OperationType.LOGISTIC \
            else np.tanh(real.astype(np.float64))
        return quant.quantize(f, out.scale, out.zero_point, 0, 255).astype(np.uint8)


@lowering(OperationType.RELU, OperationType.RELU1, OperationType.RELU6, OperationType.LOGISTIC,
          OperationType.TANH, OperationType.FLOOR, OperationType.DEQUANTIZE, supports=_unary_supports)
def lower_unary(ctx: LoweringContext) -> None:
    x, out = ctx.inputs[0], ctx.outputs[0]
    op = ctx.node.type
    count = numel(x.shape)
    if count == 0:
        return
    d = {"T_IN": ctype(x), "T_OUT": ctype(out), "COUNT": count, "FMIN": 0.0, "FMAX": 0.0, "ZP": 0,
         "SCALE": 0.0, "QMIN": 0, "QMAX": 0}
    inputs = [ctx.input(0)]
    if op in _FLOAT_CLAMP and x.type == F32:
        d["OP"] = 0
        d["FMIN"], d["FMAX"] = _FLOAT_CLAMP[op]
    elif op in _FLOAT_CLAMP:
        d["OP"] = 5
        d["QMIN"], d["QMAX"] = quant.activation_range_quantized(
            {OperationType.RELU: 1, OperationType.RELU1: 2, OperationType.RELU6: 3}[op],
            x.scale, x.zero_point, 0, 255)
    elif op == OperationType.FLOOR:
        d["OP"] = 1
    elif op == OperationType.DEQUANTIZE:
        d["OP"] = 4
        d["ZP"], d["SCALE"] = x.zero_point, float(np.float32(x.scale))
    elif x.type == F32:
        d["OP"] = 2 if op == OperationType.LOGISTIC else 3
    else:
        d["OP"] = 6
        inputs.append(ctx.constant(_table(ctx)))
    g, l = launch_1d(count)
    ctx.emit("unary.cl", d, inputs, [ctx.output(0)], g, l)


def _softmax_args(ctx: LoweringContext) -> tuple[float, int]:
    p = ctx.params
    beta = getattr(p, "beta", None)
    axis = getattr(p, "axis", None)
    if beta is None:
        beta = ctx.inputs[1].scalar()
    if axis is None:
        axis = ctx.inputs[2].scalar() if len(ctx.inputs) > 2 and not ctx.inputs[2].omitted else -1
    return float(beta), int(axis) % len(ctx.inputs[0].shape)


def _softmax_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [1, 2]):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out) or not 1 <= len(x.shape) <= 4 or x.type != out.type or x.type not in (F32, Q8A):
        return False
    if x.type == Q8A:
        return out.zero_point == 0 and abs(out.scale - 1.0 / 256) < 1e-12
    return True


@lowering(OperationType.SOFTMAX, supports=_softmax_supports)
def lower_softmax(ctx: LoweringContext) -> None:
    x, out = ctx.inputs[0], ctx.outputs[0]
    beta, axis = _softmax_args(ctx)
    outer, size, inner = axis_split(x.shape, axis)
    if outer * size * inner == 0:
        return
    d = {"T": ctype(x), "OUTER": outer, "AXIS": size, "INNER": inner, "BETA": beta,
         "QUANT": int(x.type == Q8A), "ZO": out.zero_point, "QMIN": 0, "QMAX": 255}
    inputs = [ctx.input(0)]
    if x.type == Q8A:
        diffs = np.arange(-255, 1, dtype=np.float64)
        inputs.append(ctx.constant(np.exp(diffs * float(np.float32(x.scale)) * beta).astype(np.float32)))
    g, l = launch_1d(outer * inner, 32)
    ctx.emit("softmax.cl", d, inputs, [ctx.output(0)], g, l)
