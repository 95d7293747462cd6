"""Helpers of the shape-preserving operations (activations, normalizations).

The input shape (rank ≤ 4), the optional axis argument and the row-major [outer, axis, inner] view
of an operation working along one axis, the fixed output quantization of the operations whose outputs
lie in [0, 1] or [−1, 1], and the fp32 compute type of the float reference kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiler.lowering_helpers import axis_split
from .definition import OpParams, TensorInfo, as_float32, require, require_nonempty
from .signature import Q8A, Q8AS

#: fixed output (scale, zero point) per quantized type of an operation with outputs in [0, 1]
UNIT_INTERVAL_QUANT = {Q8A: (1 / 256, 0), Q8AS: (1 / 256, -128)}
#: fixed output (scale, zero point) per quantized type of an operation with outputs in [−1, 1]
SIGNED_UNIT_INTERVAL_QUANT = {Q8A: (1 / 128, 128), Q8AS: (1 / 128, 0)}


@dataclass
class AxisParams(OpParams):
    """An op working along ``axis`` (normalised to [0, rank)); the tensor is viewed as
    [outer_size, axis_size, inner_size] (row-major)."""

    axis: int = -1
    outer_size: int = 1
    axis_size: int = 1
    inner_size: int = 1


def elementwise_shape(inp: TensorInfo, op_name: str) -> tuple[int, ...]:
    """The (fully known) shape of an element-wise op's input; rank ≤ 4."""
    dims = inp.dims()
    require(len(dims) <= 4, op_name, f"input rank must be at most 4, got {len(dims)}")
    return tuple(dims)


def normalize_axis(axis: int, rank: int, op_name: str) -> int:
    """An axis argument in [−rank, rank) made non-negative (operations.md §0.7)."""
    require(-rank <= axis < rank, op_name, f"axis {axis} out of range for rank {rank}")
    return axis % rank


def optional_axis(inputs: list[TensorInfo], index: int, rank: int, op_name: str) -> int:
    """Decode an optional trailing axis input (default −1), normalised to [0, rank)."""
    axis = inputs[index].scalar() if len(inputs) > index and not inputs[index].omitted else -1
    return normalize_axis(axis, rank, op_name)


def axis_fields(inputs: list[TensorInfo], axis_index: int, op_name: str,
                allow_empty: bool) -> tuple[tuple[int, ...], dict]:
    """(shape, AxisParams fields) of input 0 with the optional axis argument at ``axis_index``."""
    shape = elementwise_shape(inputs[0], op_name)
    require(len(shape) >= 1, op_name, "input must have rank ≥ 1")
    if not allow_empty:
        require_nonempty(shape, op_name)
    axis = optional_axis(inputs, axis_index, len(shape), op_name)
    outer, size, inner = axis_split(shape, axis)
    return shape, dict(axis=axis, outer_size=outer, axis_size=size, inner_size=inner)


def axis_view(x: np.ndarray, params: AxisParams) -> np.ndarray:
    """The data viewed as [outer_size, axis_size, inner_size]."""
    return x.reshape(params.outer_size, params.axis_size, params.inner_size)


def fixed_output_quant(inp: TensorInfo, out: TensorInfo, op_name: str, fixed: dict) -> int:
    """Check a fixed output quantization (operations.md §0.4); returns the required zero point.

    ``fixed`` maps Q8A and Q8AS to the output's (scale, zero point), e.g. :data:`UNIT_INTERVAL_QUANT`.
    """
    scale, zp = fixed[Q8A] if inp.type == Q8A else fixed[Q8AS]
    require(out.type == inp.type, op_name, f"output type {out.type.name} must equal the input's {inp.type.name}")
    require(as_float32(out.scale) == scale and out.zero_point == zp, op_name,
            f"quantized output must have scale {scale} and zeroPoint {zp}, got ({out.scale}, {out.zero_point})")
    return zp


def has_fixed_q8a_quant(out: TensorInfo, fixed: dict) -> bool:
    """Whether ``out`` has the Q8A (scale, zero point) of ``fixed`` (what the quantized kernels produce)."""
    scale, zero_point = fixed[Q8A]
    return out.zero_point == zero_point and abs(out.scale - scale) < 1e-12


def float_compute(x: np.ndarray) -> np.ndarray:
    """Float data as the fp32 the reference computes in (fp16 inputs are widened)."""
    return np.asarray(x).astype(np.float32)
