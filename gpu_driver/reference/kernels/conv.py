"""CONV_2D and DEPTHWISE_CONV_2D: float (F32, F16 computed in fp32) and exact quantized arithmetic.

Quantized accumulation (operands.md §8.5) is done on (q − zp) products; for CONV_2D through a
float64 matrix product, which is exact here (every partial sum is an integer far below 2^53).
Also home of the helpers the pool and fully-connected kernels share.
"""
from __future__ import annotations

import numpy as np

from ... import quant
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.conv import ActivationParams, Conv2DParams, DepthwiseConv2DParams, Requantization, Window2DParams
from ..registry import F16, F32, Q8A, Q8AS, kernel


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nchw else x)


def pad_spatial(x: np.ndarray, p: Window2DParams, value=0) -> np.ndarray:
    """Pad an NHWC array with ``p``'s explicit padding (``value`` in the padded cells)."""
    if not (p.pad_top or p.pad_bottom or p.pad_left or p.pad_right):
        return x
    return np.pad(x, ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0)),
                  constant_values=value)


def window_taps(xp: np.ndarray, p: Window2DParams):
    """Yield (i, j, view) for every filter tap: ``view[n, y, x, c]`` is the padded input cell that
    tap (i, j) of output (y, x) reads."""
    h_span = (p.out_h - 1) * p.stride_h + 1
    w_span = (p.out_w - 1) * p.stride_w + 1
    for i in range(p.kernel_h):
        y0 = i * p.dilation_h
        for j in range(p.kernel_w):
            x0 = j * p.dilation_w
            yield i, j, xp[:, y0:y0 + h_span:p.stride_h, x0:x0 + w_span:p.stride_w, :]


def finish_float(acc: np.ndarray, p: ActivationParams, dtype: np.dtype) -> np.ndarray:
    """Apply the float activation, round to fp32 (then to the output type, e.g. fp16)."""
    if p.activation:
        acc = np.clip(acc, p.float_min, p.float_max)
    return acc.astype(np.float32).astype(dtype)


def requantize(acc: np.ndarray, q: Requantization, p: ActivationParams, dtype: np.dtype) -> np.ndarray:
    """int32 accumulators [..., C] → stored quantized values (MBQM per channel, zero point, clamp)."""
    m = np.asarray(q.output_multiplier, dtype=np.int64)
    s = np.asarray(q.output_shift, dtype=np.int64)
    r = quant.multiply_by_quantized_multiplier(acc, m, s) + q.output_zero_point
    return np.clip(r, p.act_min, p.act_max).astype(dtype)


def centred(info: TensorInfo, zero_point: int, dtype=np.float64) -> np.ndarray:
    """The operand's values as ``dtype``, minus ``zero_point``."""
    a = info.array().astype(dtype)
    return a - zero_point if zero_point else a


def _inputs(p: Conv2DParams, inputs: list[TensorInfo], acc_dtype):
    q = p.quant
    x = to_nhwc(centred(inputs[0], q.input_zero_point if q else 0, acc_dtype), p.nchw)
    w = centred(inputs[1], q.filter_zero_point if q else 0, acc_dtype)
    return pad_spatial(x, p), w


def _finish(acc: np.ndarray, p: Conv2DParams, inputs: list[TensorInfo], out: TensorInfo) -> list[np.ndarray]:
    bias = inputs[2].array()
    if p.quant is not None:
        acc = (acc if acc.dtype.kind == "i" else np.rint(acc)).astype(np.int64) + bias.astype(np.int64)
        r = requantize(acc, p.quant, p, out.dtype)
    else:
        r = finish_float(acc + bias.astype(np.float64), p, out.dtype)
    return [from_nhwc(r, p.nchw)]


def _empty(p, out: TensorInfo) -> list[np.ndarray]:
    return [np.zeros(p.output_shapes[0], dtype=out.dtype)]


@kernel(OperationType.CONV_2D, types=(F32, F16, Q8A, Q8AS))
def conv_2d(p: Conv2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _empty(p, outputs[0])
    xp, w = _inputs(p, inputs, np.float64)
    taps = p.kernel_h * p.kernel_w
    # im2col: cols[n, y, x, (i·KW + j)·C + c] = tap (i, j) of channel c
    cols = np.empty((p.batch, p.out_h, p.out_w, taps * p.in_c), dtype=np.float64)
    for i, j, view in window_taps(xp, p):
        t = i * p.kernel_w + j
        cols[..., t * p.in_c:(t + 1) * p.in_c] = view
    acc = cols.reshape(-1, taps * p.in_c) @ w.reshape(p.out_c, -1).T
    return _finish(acc.reshape(p.batch, p.out_h, p.out_w, p.out_c), p, inputs, outputs[0])


@kernel(OperationType.DEPTHWISE_CONV_2D, types=(F32, F16, Q8A, Q8AS))
def depthwise_conv_2d(p: DepthwiseConv2DParams, inputs: list[TensorInfo],
                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    if p.batch == 0:
        return _empty(p, outputs[0])
    acc_dtype = np.int64 if p.quant is not None else np.float64
    xp, w = _inputs(p, inputs, acc_dtype)
    m = p.depth_multiplier
    w = w.reshape(p.kernel_h, p.kernel_w, p.in_c, m)
    acc = np.zeros((p.batch, p.out_h, p.out_w, p.in_c, m), dtype=acc_dtype)
    for i, j, view in window_taps(xp, p):
        acc += view[..., None] * w[i, j]
    return _finish(acc.reshape(p.batch, p.out_h, p.out_w, p.out_c), p, inputs, outputs[0])
