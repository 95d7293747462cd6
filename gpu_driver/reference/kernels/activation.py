"""RELU*, LOGISTIC, TANH, SOFTMAX, FLOOR, DEQUANTIZE.

Quantized LOGISTIC / TANH / SOFTMAX are bit-exact TFLite fixed point (gpu_driver.fixedpoint).
Float16 tensors are computed in fp32 and rounded (operations.md §0.9).
"""
from __future__ import annotations

import numpy as np

from ... import fixedpoint as fp
from ... import quant
from ...hal.abbreviations import PC8, Q8S
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.activation import (
    ClampParams,
    DequantizeParams,
    ElementwiseParams,
    SigmoidParams,
    SoftmaxParams,
)
from ..registry import F16, F32, Q8A, Q8AS, kernel


def float_compute(x: np.ndarray) -> np.ndarray:
    """Float data as the fp32 the reference computes in (fp16 inputs are widened)."""
    return np.asarray(x).astype(np.float32)


@kernel(OperationType.RELU, OperationType.RELU1, OperationType.RELU6, types=(F32, F16, Q8A, Q8AS))
def relu(params: ClampParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    if inputs[0].is_quantized:
        return [np.clip(x, params.quant_min, params.quant_max).astype(x.dtype)]
    return [np.clip(x, params.float_min, params.float_max).astype(x.dtype)]


@kernel(OperationType.LOGISTIC, OperationType.TANH, types=(F32, F16, Q8A, Q8AS))
def sigmoid(params: SigmoidParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if not inp.is_quantized:
        xf = float_compute(x)
        r = np.tanh(xf) if params.function == "tanh" else 1.0 / (1.0 + np.exp(-xf))
        return [r.astype(x.dtype)]
    qmin, qmax = out.qrange
    c = x.astype(np.int64) - params.input_zero_point
    radius = params.input_range_radius
    inside = (c > -radius) & (c < radius)
    rescaled = quant.multiply_by_quantized_multiplier_greater_than_one(
        np.where(inside, c, 0), params.input_multiplier, params.input_left_shift)
    func = fp.tanh if params.function == "tanh" else fp.logistic
    f = func(rescaled, params.input_integer_bits)
    r = np.clip(quant.rounding_divide_by_pot(f, params.output_shift) + params.output_zero_point, qmin, qmax)
    r = np.where(inside, r, np.where(c <= -radius, qmin, qmax))
    return [r.astype(out.dtype)]


def _softmax_float(x: np.ndarray, beta: float) -> np.ndarray:
    """Float softmax over axis 1 of an [outer, axis, inner] view."""
    e = np.exp((x - x.max(axis=1, keepdims=True)) * np.float32(beta))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_quant(q: np.ndarray, params: SoftmaxParams, qmin: int, qmax: int) -> np.ndarray:
    """TFLite fixed-point softmax over axis 1 of an [outer, axis, inner] view of raw values."""
    x = q.astype(np.int64)
    diff = x - x.max(axis=1, keepdims=True)
    valid = diff >= params.diff_min
    rescaled = quant.multiply_by_quantized_multiplier_greater_than_one(
        np.where(valid, diff, 0), params.input_multiplier, params.input_left_shift)
    exp_q0 = fp.exp_on_negative_values(rescaled, 5)                       # Q0.31
    sum_of_exps = fp.wrap32(np.where(valid, quant.rounding_divide_by_pot(exp_q0, 12), 0).sum(axis=1, keepdims=True))
    headroom_plus_one = fp.count_leading_zeros32(sum_of_exps)
    num_bits_over_unit = 12 - headroom_plus_one
    shifted_sum_minus_one = (sum_of_exps << headroom_plus_one) - (1 << 31)
    shifted_scale = fp.one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    r = quant.rounding_divide_by_pot(quant.srdhm(shifted_scale, exp_q0), num_bits_over_unit + 31 - 8)
    r = np.clip(r + params.output_zero_point, qmin, qmax)
    return np.where(valid, r, qmin)


@kernel(OperationType.SOFTMAX, types=(F32, F16, Q8A, Q8AS))
def softmax(params: SoftmaxParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out.dtype)]
    view = x.reshape(params.outer_size, params.axis_size, params.inner_size)
    if inp.is_quantized:
        r = _softmax_quant(view, params, *out.qrange)
    else:
        r = _softmax_float(float_compute(view), params.beta)
    return [r.reshape(x.shape).astype(out.dtype)]


@kernel(OperationType.FLOOR, types=(F32, F16))
def floor(params: ElementwiseParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    return [np.floor(x).astype(x.dtype)]


@kernel(OperationType.DEQUANTIZE, types=(Q8A, Q8AS, Q8S, PC8))
def dequantize(params: DequantizeParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    q = inputs[0].array()
    if params.channel_dim >= 0:
        shape = [1] * q.ndim
        shape[params.channel_dim] = -1
        scales = np.asarray(params.channel_scales, dtype=np.float32).reshape(shape)
        r = q.astype(np.float32) * scales
    else:
        r = quant.dequantize(q, params.scale, params.zero_point)
    return [r.astype(outputs[0].dtype)]
