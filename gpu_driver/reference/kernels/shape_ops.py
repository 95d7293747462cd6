"""RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH: pure data movement (any element type)."""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.shape_ops import DepthSpaceParams, ReshapeParams
from ..registry import F16, F32, I32, Q8A, Q8AS, kernel


@kernel(OperationType.RESHAPE, types=(F32, F16, Q8A, Q8AS, I32))
def reshape(params: ReshapeParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [inputs[0].array().reshape(params.output_shapes[0]).copy()]


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nchw else x)


@kernel(OperationType.DEPTH_TO_SPACE, types=(F32, F16, Q8A, Q8AS))
def depth_to_space(params: DepthSpaceParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    x = to_nhwc(inputs[0].array(), p.nchw)
    y = (x.reshape(p.batch, p.in_h, p.in_w, b, b, p.out_c).transpose(0, 1, 3, 2, 4, 5)
         .reshape(p.batch, p.out_h, p.out_w, p.out_c))
    return [from_nhwc(y, p.nchw)]


@kernel(OperationType.SPACE_TO_DEPTH, types=(F32, F16, Q8A, Q8AS))
def space_to_depth(params: DepthSpaceParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    x = to_nhwc(inputs[0].array(), p.nchw)
    y = (x.reshape(p.batch, p.out_h, b, p.out_w, b, p.in_c).transpose(0, 1, 3, 2, 4, 5)
         .reshape(p.batch, p.out_h, p.out_w, p.out_c))
    return [from_nhwc(y, p.nchw)]
