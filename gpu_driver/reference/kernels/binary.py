"""ADD and MUL: float, int32 and quantized (operands.md §8.5)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ... import quant
from ...hal.types import OperandType, OperationType
from ...operations import TensorInfo
from ...operations.binary import BinaryParams
from ..registry import F16, F32, I32, Q8A, Q8AS, kernel


def apply_float_activation(x: np.ndarray, activation: int) -> np.ndarray:
    lo, hi = quant.activation_range_float(activation)
    return np.clip(x, lo, hi).astype(x.dtype) if activation else x


def _quant_add(a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TFLite quantized ADD: both sides rescaled to 2·max(s1, s2) with a left shift of 20."""
    left_shift = 20
    twice_max = 2.0 * max(a.scale, b.scale)
    m1, s1 = quant.quantize_multiplier_smaller_than_one(a.scale / twice_max)
    m2, s2 = quant.quantize_multiplier_smaller_than_one(b.scale / twice_max)
    mo, so = quant.quantize_multiplier_smaller_than_one(twice_max / ((1 << left_shift) * out.scale))
    xa = quant.multiply_by_quantized_multiplier_smaller_than_one(
        (x.astype(np.int64) - a.zero_point) * (1 << left_shift), m1, s1)
    yb = quant.multiply_by_quantized_multiplier_smaller_than_one(
        (y.astype(np.int64) - b.zero_point) * (1 << left_shift), m2, s2)
    return quant.multiply_by_quantized_multiplier_smaller_than_one(xa + yb, mo, so) + out.zero_point


def _quant_mul(a: TensorInfo, b: TensorInfo, out: TensorInfo, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TFLite quantized MUL: one multiplier s1·s2/s_out."""
    m, s = quant.quantize_multiplier_smaller_than_one(a.scale * b.scale / out.scale)
    prod = (x.astype(np.int64) - a.zero_point) * (y.astype(np.int64) - b.zero_point)
    return quant.multiply_by_quantized_multiplier(prod, m, s) + out.zero_point


def _binary(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo],
            op: Callable[[np.ndarray, np.ndarray], np.ndarray],
            quantized: Callable[..., np.ndarray]) -> list[np.ndarray]:
    a, b = inputs[0], inputs[1]
    out = outputs[0]
    x, y = a.array(), b.array()
    shape = params.output_shapes[0]
    if a.type == OperandType.TENSOR_INT32:  # wrapping int32 arithmetic, no activation
        return [np.broadcast_to(op(x.astype(np.int64), y.astype(np.int64)).astype(np.int32), shape).copy()]
    if not a.is_quantized:
        r = apply_float_activation(op(x, y).astype(x.dtype), params.activation)
        return [np.broadcast_to(r, shape).astype(x.dtype)]
    qmin, qmax = out.qrange
    lo, hi = quant.activation_range_quantized(params.activation, out.scale, out.zero_point, qmin, qmax)
    r = np.clip(quantized(a, b, out, x, y), lo, hi).astype(out.dtype)
    return [np.broadcast_to(r, shape).copy()]


@kernel(OperationType.ADD, types=(F32, F16, I32, Q8A, Q8AS))
def add(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _binary(params, inputs, outputs, np.add, _quant_add)


@kernel(OperationType.MUL, types=(F32, F16, I32, Q8A, Q8AS))
def mul(params: BinaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _binary(params, inputs, outputs, np.multiply, _quant_mul)
