"""Data-movement ops: RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH (quantization is always "=in")."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import failure
from ..hal.types import OperationType
from ..sizes import element_count
from .base import (
    OpParams,
    ShapeUnknown,
    TensorInfo,
    operation,
    require,
    same_quant_as_input,
)
from .conv import nhwc_dims, stored_shape


def require_nonempty(shape: tuple[int, ...], op_name: str) -> None:
    """Ops outside operations.md §0.6's list fail (GENERAL_FAILURE) on a zero-sized input.

    A 0 in a fully known shape only happens at execution (before it, 0 means "unknown").
    """
    if 0 in shape:
        raise failure(f"{op_name}: zero-sized input {list(shape)} is not supported by this operation")


# ---- RESHAPE ------------------------------------------------------------------------------------------

@dataclass
class ReshapeParams(OpParams):
    """RESHAPE: the same bytes viewed with ``output_shapes[0]`` (the resolved target shape, −1 filled in)."""


@operation(OperationType.RESHAPE)
def reshape(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReshapeParams:
    inp, shape_info, out = inputs[0], inputs[1], outputs[0]
    same_quant_as_input(inp, out, "RESHAPE")
    target = [int(v) for v in np.asarray(shape_info.array()).reshape(-1)]  # ShapeUnknown if not constant
    require(shape_info.shape is None or len(shape_info.shape) == 1, "RESHAPE", "the shape input must be rank 1")
    require(all(v >= -1 for v in target), "RESHAPE", f"shape entries must be ≥ −1, got {target}")
    stretch = [i for i, v in enumerate(target) if v == -1]
    require(len(stretch) <= 1, "RESHAPE", f"at most one shape entry may be −1, got {target}")
    known = 1
    for v in target:
        if v != -1:
            known *= v
    try:
        dims = inp.dims()
    except ShapeUnknown:
        if stretch:
            raise
        # without −1 the target alone fixes the output; the element count is checked at execution
        return ReshapeParams(output_shapes=[tuple(target)])
    require(len(dims) <= 4, "RESHAPE", f"input rank must be at most 4, got {len(dims)}")
    require_nonempty(dims, "RESHAPE")
    numel = element_count(dims)
    if stretch:
        require(known > 0 and numel % known == 0, "RESHAPE",
                f"cannot infer the −1 entry of {target} for {numel} elements")
        target[stretch[0]] = numel // known
    require(element_count(target) == numel, "RESHAPE",
            f"shape {target} has a different element count than the input {list(dims)}")
    return ReshapeParams(output_shapes=[tuple(target)])


# ---- DEPTH_TO_SPACE / SPACE_TO_DEPTH -------------------------------------------------------------------

@dataclass
class DepthSpaceParams(OpParams):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH with block size ``block_size`` (b).

    Sizes are NHWC-normalised (``nchw`` says whether input 0 / output 0 are stored [N,C,H,W]):

    - DEPTH_TO_SPACE: out[n, h·b+i, w·b+j, c] = in[n, h, w, (i·b + j)·out_c + c]; out_c = in_c / b².
    - SPACE_TO_DEPTH: out[n, h, w, (i·b + j)·in_c + c] = in[n, h·b+i, w·b+j, c]; out_c = in_c · b².
    """

    block_size: int = 1
    nchw: bool = False
    batch: int = 0
    in_h: int = 0
    in_w: int = 0
    in_c: int = 0
    out_h: int = 0
    out_w: int = 0
    out_c: int = 0


def optional_bool(inputs: list[TensorInfo], index: int) -> bool:
    """Decode an optional trailing BOOL input (layout flag, align_corners, …); default false."""
    return bool(inputs[index].scalar()) if len(inputs) > index and not inputs[index].omitted else False


def _depth_space(to_space: bool, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    name = "DEPTH_TO_SPACE" if to_space else "SPACE_TO_DEPTH"
    inp, out = inputs[0], outputs[0]
    b = inputs[1].scalar()
    require(b >= 1, name, f"block_size must be ≥ 1, got {b}")
    nchw = optional_bool(inputs, 2)
    same_quant_as_input(inp, out, name)
    require_nonempty(inp.dims(), name)
    n, h, w, c = nhwc_dims(inp, nchw, name)
    if to_space:
        require(c % (b * b) == 0, name, f"depth {c} is not a multiple of block_size² = {b * b}")
        oh, ow, oc = h * b, w * b, c // (b * b)
    else:
        require(h % b == 0 and w % b == 0, name, f"height {h} and width {w} must be multiples of block_size {b}")
        oh, ow, oc = h // b, w // b, c * b * b
    return DepthSpaceParams(output_shapes=[stored_shape(n, oh, ow, oc, nchw)], block_size=b, nchw=nchw, batch=n,
                            in_h=h, in_w=w, in_c=c, out_h=oh, out_w=ow, out_c=oc)


@operation(OperationType.DEPTH_TO_SPACE)
def depth_to_space(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return _depth_space(True, inputs, outputs)


@operation(OperationType.SPACE_TO_DEPTH)
def space_to_depth(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return _depth_space(False, inputs, outputs)
