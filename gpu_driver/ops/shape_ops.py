"""Data movement: RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH.

- RESHAPE: the same bytes under a new shape (one −1 entry is inferred); on the accelerator a storage
  alias, no kernel.  The target shape must be a constant for the lowering.
- DEPTH_TO_SPACE / SPACE_TO_DEPTH: block rearrangements between depth and the spatial dimensions,
  NHWC or NCHW (the lowering runs NHWC only).  Exact copies.

Quantization is always "=in": the output keeps the input's scale and zero point.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, known, params_ok, scalars_constant, Work
from ..hal.types import OperationType
from ..sizes import element_count
from .definition import (OpParams, ShapeUnknown, TensorInfo, optional_bool, require, require_nonempty,
                         same_quant_as_input)
from .layout import ImageSizes, from_nhwc, nhwc_dims, stored_shape, to_nhwc
from .registry import operation
from .signature import F32, I32, LAYOUT, Q8A, RANK4, RANK_UP_TO_4, STD_TYPES, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class ReshapeParams(OpParams):
    """RESHAPE: the same bytes viewed with ``output_shapes[0]`` (the resolved target shape, −1 filled in)."""


@dataclass
class DepthSpaceParams(OpParams, ImageSizes):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH with block size ``block_size`` (b).

    Sizes are NHWC-normalised (``nchw`` says whether input 0 / output 0 are stored [N,C,H,W]):

    - DEPTH_TO_SPACE: out[n, h·b+i, w·b+j, c] = in[n, h, w, (i·b + j)·out_c + c]; out_c = in_c / b².
    - SPACE_TO_DEPTH: out[n, h, w, (i·b + j)·in_c + c] = in[n, h·b+i, w·b+j, c]; out_c = in_c · b².
    """

    block_size: int = 1


# ---- signatures -----------------------------------------------------------------------------------------

RESHAPE_SIGNATURE = OpSignature(
    {**STD_TYPES, I32: 6}, (Variant("reshape", ("T", I32), ("T",)),),
    ranks={0: RANK_UP_TO_4, 1: (1, 1)}, same_quant=((0, 0),))

#: DEPTH_TO_SPACE and SPACE_TO_DEPTH: input, block size, optional NCHW flag
DEPTH_SPACE_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("block", ("T", i32), ("T",), (LAYOUT,)),), ranks={0: RANK4},
    out_ranks={0: RANK4}, same_quant=((0, 0),))


# ---- definition helpers ---------------------------------------------------------------------------------

def define_depth_space(to_space: bool, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    """Decode DEPTH_TO_SPACE (``to_space``) or SPACE_TO_DEPTH: block size, layout, output sizes."""
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


# ---- reference kernels ----------------------------------------------------------------------------------

def reshape_reference(params: ReshapeParams, inputs: list[TensorInfo],
                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [inputs[0].array().reshape(params.output_shapes[0]).copy()]


def depth_to_space_reference(params: DepthSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    x = to_nhwc(inputs[0].array(), p.nchw)
    y = (x.reshape(p.batch, p.in_h, p.in_w, b, b, p.out_c).transpose(0, 1, 3, 2, 4, 5)
         .reshape(p.batch, p.out_h, p.out_w, p.out_c))
    return [from_nhwc(y, p.nchw)]


def space_to_depth_reference(params: DepthSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    x = to_nhwc(inputs[0].array(), p.nchw)
    y = (x.reshape(p.batch, p.out_h, b, p.out_w, b, p.in_c).transpose(0, 1, 3, 2, 4, 5)
         .reshape(p.batch, p.out_h, p.out_w, p.out_c))
    return [from_nhwc(y, p.nchw)]


# ---- lowerings ------------------------------------------------------------------------------------------

def reshape_supported(ctx: LoweringContext) -> bool:
    # the target shape must be known at preparation (a constant shape input) so the alias is static
    x, out = ctx.inputs[0], ctx.outputs[0]
    return params_ok(ctx) and ctx.is_constant(1) and known(x, out) and x.type == out.type and \
        x.type in (F32, Q8A)


def lower_reshape(ctx: LoweringContext) -> None:
    ctx.alias(0, 0)


def depth_space_supported(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [1, 2]):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return not ctx.params.nchw and known(x, out) and x.type == out.type and x.type in (F32, Q8A)


def lower_depth_space(ctx: LoweringContext) -> None:
    """One NHWC gather (shape_ops.cl; MODE 0 = DEPTH_TO_SPACE, 1 = SPACE_TO_DEPTH)."""
    p = ctx.params
    count = element_count(p.output_shapes[0])
    if count == 0:
        return
    d = {"T": ctype(ctx.inputs[0]), "COUNT": count, "MODE": 0 if ctx.node.type == OperationType.DEPTH_TO_SPACE else 1,
         "B": p.block_size, "IH": p.in_h, "IW": p.in_w, "IC": p.in_c, "OH": p.out_h, "OW": p.out_w, "OC": p.out_c}
    ctx.emit("shape_ops.cl", d, [ctx.input(0)], [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations -------------------------------------------------------------------------------------

@operation(OperationType.RESHAPE, signature=RESHAPE_SIGNATURE, reference=reshape_reference, lower=lower_reshape,
           supports=reshape_supported)
def reshape(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReshapeParams:
    inp, shape_info, out = inputs[0], inputs[1], outputs[0]
    same_quant_as_input(inp, out, "RESHAPE")
    target = [int(v) for v in np.asarray(shape_info.array()).reshape(-1)]  # ShapeUnknown if not constant
    require(shape_info.shape is None or len(shape_info.shape) == 1, "RESHAPE", "the shape input must be rank 1")
    require(all(v >= -1 for v in target), "RESHAPE", f"shape entries must be ≥ −1, got {target}")
    stretch = [i for i, v in enumerate(target) if v == -1]
    require(len(stretch) <= 1, "RESHAPE", f"at most one shape entry may be −1, got {target}")
    given = element_count(v for v in target if v != -1)
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
        require(given > 0 and numel % given == 0, "RESHAPE",
                f"cannot infer the −1 entry of {target} for {numel} elements")
        target[stretch[0]] = numel // given
    require(element_count(target) == numel, "RESHAPE",
            f"shape {target} has a different element count than the input {list(dims)}")
    return ReshapeParams(output_shapes=[tuple(target)])


@operation(OperationType.DEPTH_TO_SPACE, signature=DEPTH_SPACE_SIGNATURE, reference=depth_to_space_reference,
           lower=lower_depth_space, supports=depth_space_supported)
def depth_to_space(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return define_depth_space(True, inputs, outputs)


@operation(OperationType.SPACE_TO_DEPTH, signature=DEPTH_SPACE_SIGNATURE, reference=space_to_depth_reference,
           lower=lower_depth_space, supports=depth_space_supported)
def space_to_depth(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return define_depth_space(False, inputs, outputs)
