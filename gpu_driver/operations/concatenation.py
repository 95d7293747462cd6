"""CONCATENATION (HAL 1.0): join n ≥ 1 tensors along ``axis`` ∈ [0, rank)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hal.types import OperationType
from .base import OpParams, TensorInfo, operation, require


@dataclass
class ConcatenationParams(OpParams):
    """``axis`` (non-negative); ``axis_sizes``: each input's extent on the axis (its offset in the
    output is the sum of the previous ones); ``outer``/``inner``: element counts before/after the axis.

    Quantized inputs whose (scale, zero point) differ from the output's are requantised with fp32
    arithmetic (operands.md §8.2, TFLite):
    ``q_out = clamp(int(round_half_away(q·requant_scale[i] + requant_bias[i])) + output_zero_point,
    qmin, qmax)`` where ``requant_scale = s_in · (1 / s_out)`` and ``requant_bias = −zp_in · requant_scale``
    (both float32).  ``requantize[i]`` is False where input i is a plain copy.
    """

    axis: int = 0
    axis_sizes: tuple[int, ...] = ()
    outer: int = 1
    inner: int = 1
    requantize: tuple[bool, ...] = ()
    requant_scale: tuple[float, ...] = ()
    requant_bias: tuple[float, ...] = ()
    output_zero_point: int = 0
    qmin: int = 0
    qmax: int = 0


@operation(OperationType.CONCATENATION)
def concatenation(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ConcatenationParams:
    name = "CONCATENATION"
    tensors, axis_info = inputs[:-1], inputs[-1]
    require(len(tensors) >= 1, name, "needs at least one input tensor")
    axis = axis_info.scalar()
    shapes = [t.dims() for t in tensors]
    rank = len(shapes[0])
    require(1 <= rank <= 4, name, f"input rank must be 1..4, got {rank}")
    require(0 <= axis < rank, name, f"axis {axis} out of range [0, {rank})")
    for i, s in enumerate(shapes):
        require(len(s) == rank, name, f"input {i} has rank {len(s)}, input 0 has rank {rank}")
        for d in range(rank):
            require(d == axis or s[d] == shapes[0][d], name,
                    f"input {i} shape {list(s)} differs from input 0 shape {list(shapes[0])} off the axis")
    sizes = tuple(s[axis] for s in shapes)
    out_shape = list(shapes[0])
    out_shape[axis] = sum(sizes)
    outer = int(np.prod(out_shape[:axis], dtype=np.int64))
    inner = int(np.prod(out_shape[axis + 1:], dtype=np.int64))
    params = ConcatenationParams(output_shapes=[tuple(out_shape)], axis=axis, axis_sizes=sizes, outer=outer,
                                 inner=inner, requantize=(False,) * len(tensors))
    out = outputs[0]
    if out.is_quantized:
        inv = np.float32(1.0) / np.float32(out.scale)
        req, scales, biases = [], [], []
        for t in tensors:
            same = np.float32(t.scale) == np.float32(out.scale) and t.zero_point == out.zero_point
            f = np.float32(t.scale) * inv
            req.append(not same)
            scales.append(float(f))
            biases.append(float(np.float32(-t.zero_point) * f))
        params.requantize, params.requant_scale, params.requant_bias = tuple(req), tuple(scales), tuple(biases)
        params.output_zero_point = out.zero_point
        params.qmin, params.qmax = out.qrange
    return params
