"""L2_NORMALIZATION (float and exact TFLite integer path) and LOCAL_RESPONSE_NORMALIZATION (float)."""
from __future__ import annotations

import numpy as np

from ... import fixedpoint as fp
from ... import quant
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.normalization import L2NormParams, LRNParams
from ..registry import F16, F32, Q8A, Q8AS, kernel
from .activation import float_compute


def _view(x: np.ndarray, p) -> np.ndarray:
    return x.reshape(p.outer_size, p.axis_size, p.inner_size)


@kernel(OperationType.L2_NORMALIZATION, types=(F32, F16, Q8A, Q8AS))
def l2_normalization(params: L2NormParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if not inp.is_quantized:
        v = _view(float_compute(x), params)
        norm = np.sqrt((v * v).sum(axis=1, keepdims=True))
        r = v / np.maximum(norm, np.float32(params.epsilon))
        return [r.reshape(x.shape).astype(out.dtype)]
    v = _view(x.astype(np.int64) - params.input_zero_point, params)
    multiplier, shift = fp.inv_sqrt_quantized_multiplier_exp((v * v).sum(axis=1, keepdims=True), -1)
    r = quant.multiply_by_quantized_multiplier_smaller_than_one(v * 128, multiplier, shift)
    qmin, qmax = out.qrange
    r = np.clip(r + params.output_zero_point, qmin, qmax)
    return [r.reshape(x.shape).astype(out.dtype)]


@kernel(OperationType.LOCAL_RESPONSE_NORMALIZATION, types=(F32, F16))
def local_response_normalization(params: LRNParams, inputs: list[TensorInfo],
                                 outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    v = _view(float_compute(x), params).astype(np.float64)
    size = params.axis_size
    radius = min(params.radius, size)
    # windowed sum of squares along axis 1 with a cumulative sum (window clipped to the axis)
    csum = np.concatenate([np.zeros_like(v[:, :1]), np.cumsum(v * v, axis=1)], axis=1)
    idx = np.arange(size)
    lo = np.maximum(idx - radius, 0)
    hi = np.minimum(idx + radius, size - 1) + 1
    sq = csum[:, hi] - csum[:, lo]
    r = v * np.power(params.bias + params.alpha * sq, -params.beta)
    return [r.reshape(x.shape).astype(outputs[0].dtype)]
