"""AVERAGE_POOL_2D, MAX_POOL_2D (float and quantized), L2_POOL_2D (float)."""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.pool import Pool2DParams
from ..registry import F16, F32, Q8A, Q8AS, kernel
from .conv import finish_float, from_nhwc, pad_spatial, to_nhwc, window_taps


def _axis_counts(out: int, stride: int, pad: int, k: int, size: int) -> np.ndarray:
    """In-bounds cells of each window along one axis."""
    start = np.arange(out) * stride - pad
    return np.minimum(start + k, size) - np.maximum(start, 0)


def _counts(p: Pool2DParams) -> np.ndarray:
    """[out_h, out_w, 1] in-bounds cell count of every window."""
    ch = _axis_counts(p.out_h, p.stride_h, p.pad_top, p.kernel_h, p.in_h)
    cw = _axis_counts(p.out_w, p.stride_w, p.pad_left, p.kernel_w, p.in_w)
    return (ch[:, None] * cw[None, :])[..., None].astype(np.int64)


def _window_sum(x: np.ndarray, p: Pool2DParams) -> np.ndarray:
    xp = pad_spatial(x, p, 0)
    acc = np.zeros((p.batch, p.out_h, p.out_w, p.in_c), dtype=x.dtype)
    for _, _, view in window_taps(xp, p):
        acc += view
    return acc


def _run(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo], body) -> list[np.ndarray]:
    out = outputs[0]
    if p.batch == 0:
        return [np.zeros(p.output_shapes[0], dtype=out.dtype)]
    x = to_nhwc(inputs[0].array(), p.nchw)
    if inputs[0].is_quantized:
        r = np.clip(body(x.astype(np.int64), True), p.act_min, p.act_max).astype(out.dtype)
    else:
        r = finish_float(body(x.astype(np.float64), False), p, out.dtype)
    return [from_nhwc(r, p.nchw)]


@kernel(OperationType.AVERAGE_POOL_2D, types=(F32, F16, Q8A, Q8AS))
def average_pool_2d(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    def body(x, quantized):
        s, n = _window_sum(x, p), _counts(p)
        if not quantized:
            return s / n
        # integer mean of the stored values, rounded half away from zero (operands.md §8.5)
        return np.where(s >= 0, (s + n // 2) // n, -((-s + n // 2) // n))

    return _run(p, inputs, outputs, body)


@kernel(OperationType.MAX_POOL_2D, types=(F32, F16, Q8A, Q8AS))
def max_pool_2d(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    def body(x, quantized):
        low = np.iinfo(np.int64).min if quantized else -np.inf  # padding never wins
        xp = pad_spatial(x, p, low)
        acc = np.full((p.batch, p.out_h, p.out_w, p.in_c), low, dtype=x.dtype)
        for _, _, view in window_taps(xp, p):
            np.maximum(acc, view, out=acc)
        return acc

    return _run(p, inputs, outputs, body)


@kernel(OperationType.L2_POOL_2D, types=(F32, F16))
def l2_pool_2d(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _run(p, inputs, outputs, lambda x, _q: np.sqrt(_window_sum(x * x, p) / _counts(p)))
