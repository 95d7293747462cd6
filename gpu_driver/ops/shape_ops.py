"""Data movement and shape operations: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CHANNEL_SHUFFLE,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, FILL, RANK.

- RESHAPE / SQUEEZE / EXPAND_DIMS: the same bytes under a new shape (RESHAPE: one −1 entry is
  inferred; SQUEEZE: omitted axes squeeze every size-1 dimension, all removed gives [1]; EXPAND_DIMS:
  axis ∈ [−(n+1), n+1)).  On the accelerator a storage alias, no kernel.
- TRANSPOSE: out.dims[i] = in.dims[perm[i]]; an omitted perm swaps the two dimensions of a rank-2
  input (the reference's rule; other ranks need a perm).  Zero-sized inputs give zero-sized outputs.
- CHANNEL_SHUFFLE: with S = size/G along the axis, out[k·G + g] = in[g·S + k].
- DEPTH_TO_SPACE / SPACE_TO_DEPTH / BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND: block rearrangements of
  rank-4 images, NHWC or NCHW (operations.md §0.11 recipes); SPACE_TO_BATCH_ND pads H and W with the
  logical zero (the zero point for quantized types).
- FILL: a tensor of the shape given by a rank-1 TENSOR_INT32 filled with a scalar of the output type.
- RANK: the number of dimensions of any tensor, as an INT32 scalar.

Every rearrangement is an exact copy, so quantization is always "=in".  The accelerator runs every
rearrangement as one affine gather (shape_ops.cl, OP 0): each output element's index is split into
at most six factors, each adding a multiple of itself to one input coordinate; FILL and RANK write
constants (OP 1: a literal, OP 2: a one-element buffer).  Elements are copied as raw bits (float as
uint, half as ushort), so every type is exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, known, params_ok, pad_dims, scalars_constant, Work
from ..errors import failure
from ..hal.abbreviations import B8, Q16A, Q16S
from ..hal.types import OperationType
from ..sizes import element_count
from .definition import (OpParams, ShapeUnknown, TensorInfo, optional_bool, presence, require, require_nonempty,
                         same_quant_as_input)
from .layout import ImageSizes, from_nhwc, nhwc_dims, stored_shape, to_nhwc
from .registry import operation
from .shape_preserving import AxisParams, axis_fields, normalize_axis
from .signature import (F16, F32, I32, LAYOUT, PC8, Q8A, Q8AS, Q8S, RANK4, RANK_UP_TO_4, STD_TYPES,
                        OpContext, OpSignature, Variant, f16, f32, i32)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class ReshapeParams(OpParams):
    """RESHAPE / SQUEEZE / EXPAND_DIMS: the same bytes viewed with ``output_shapes[0]``."""


@dataclass
class TransposeParams(OpParams):
    """TRANSPOSE: out.dims[i] = in.dims[perm[i]] (``perm`` resolved, also when omitted)."""

    perm: tuple[int, ...] = ()


@dataclass
class ChannelShuffleParams(AxisParams):
    """CHANNEL_SHUFFLE along ``axis`` into ``groups`` groups (the input viewed as [outer, axis_size, inner])."""

    groups: int = 1


@dataclass
class DepthSpaceParams(OpParams, ImageSizes):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH with block size ``block_size`` (b).

    Sizes are NHWC-normalised (``nchw`` says whether input 0 / output 0 are stored [N,C,H,W]):

    - DEPTH_TO_SPACE: out[n, h·b+i, w·b+j, c] = in[n, h, w, (i·b + j)·out_c + c]; out_c = in_c / b².
    - SPACE_TO_DEPTH: out[n, h, w, (i·b + j)·in_c + c] = in[n, h·b+i, w·b+j, c]; out_c = in_c · b².
    """

    block_size: int = 1


@dataclass
class BatchSpaceParams(OpParams, ImageSizes):
    """BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND with blocks (block_h, block_w), NHWC-normalised sizes.

    - BATCH_TO_SPACE_ND: out[n, h·bh+a, w·bw+b, c] = in[(a·bw + b)·out_n + n, h, w, c].
    - SPACE_TO_BATCH_ND: out[(a·bw + b)·in_n + n, y, x, c] = padded[n, y·bh+a, x·bw+b, c], where padded is
      the input with ``pad_top``/``pad_bottom`` rows and ``pad_left``/``pad_right`` columns of
      ``pad_value`` (the logical zero).
    """

    out_batch: int = 0
    block_h: int = 1
    block_w: int = 1
    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0
    pad_value: int = 0


@dataclass
class FillParams(OpParams):
    """FILL: ``output_shapes[0]`` filled with input 1."""


@dataclass
class RankParams(OpParams):
    """RANK: ``rank`` of input 0 (output_shapes[0] is the scalar's ())."""

    rank: int = 0


# ---- signatures -----------------------------------------------------------------------------------------

RESHAPE_SIGNATURE = OpSignature(
    {**STD_TYPES, I32: 6}, (Variant("reshape", ("T", I32), ("T",)),),
    ranks={0: RANK_UP_TO_4, 1: (1, 1)}, same_quant=((0, 0),))

#: SQUEEZE: input, axes (may be NO_VALUE)
SQUEEZE_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("squeeze", ("T", I32), ("T",)),), omittable=frozenset({1}),
    ranks={0: RANK_UP_TO_4, 1: (1, 1)}, same_quant=((0, 0),))

EXPAND_DIMS_SIGNATURE = OpSignature(
    {F32: 3, F16: 3, I32: 3, Q8A: 3, Q8AS: 4}, (Variant("expand", ("T", i32), ("T",)),), same_quant=((0, 0),))

#: TRANSPOSE: input, perm (may be NO_VALUE)
TRANSPOSE_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("transpose", ("T", I32), ("T",)),), omittable=frozenset({1}),
    ranks={0: RANK_UP_TO_4, 1: (1, 1)}, same_quant=((0, 0),))

#: CHANNEL_SHUFFLE: input, num_groups, axis
CHANNEL_SHUFFLE_SIGNATURE = OpSignature(
    {F32: 3, F16: 3, Q8A: 3, Q8AS: 4}, (Variant("shuffle", ("T", i32, i32), ("T",)),),
    ranks={0: RANK_UP_TO_4}, same_quant=((0, 0),))

#: DEPTH_TO_SPACE and SPACE_TO_DEPTH: input, block size, optional NCHW flag
DEPTH_SPACE_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("block", ("T", i32), ("T",), (LAYOUT,)),), ranks={0: RANK4},
    out_ranks={0: RANK4}, same_quant=((0, 0),))

#: BATCH_TO_SPACE_ND: input, block [2], optional NCHW flag
BATCH_TO_SPACE_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("blocks", ("T", I32), ("T",), (LAYOUT,)),), ranks={0: RANK4, 1: (1, 1)},
    out_ranks={0: RANK4}, same_quant=((0, 0),))


def _check_space_to_batch(ctx: OpContext, t) -> int:
    """A quant8_asymm input with a non-zero zero point needs FL3 (the padding value)."""
    return 3 if t == Q8A and ctx.inp(0).zero_point != 0 else 2


#: SPACE_TO_BATCH_ND: input, block [2], paddings [2, 2], optional NCHW flag
SPACE_TO_BATCH_SIGNATURE = OpSignature(
    STD_TYPES, (Variant("blocks", ("T", I32, I32), ("T",), (LAYOUT,)),),
    ranks={0: RANK4, 1: (1, 1), 2: (2, 2)}, out_ranks={0: RANK4}, same_quant=((0, 0),),
    check=_check_space_to_batch)

#: FILL: dims, value (its scalar type selects the output type)
FILL_SIGNATURE = OpSignature(
    {f32: 4, f16: 4, i32: 4},
    (Variant("float32", (I32, f32), (F32,)), Variant("float16", (I32, f16), (F16,)),
     Variant("int32", (I32, i32), (I32,))),
    primary=1, ranks={0: (1, 1)})

RANK_SIGNATURE = OpSignature(
    {t: 4 for t in (F16, F32, I32, Q8A, Q16S, B8, PC8, Q16A, Q8S, Q8AS)}, (Variant("rank", ("T",), (i32,)),))


# ---- definition helpers ---------------------------------------------------------------------------------

def int_values(info: TensorInfo, name: str, what: str, shape: tuple[int | None, ...] = (None,)) -> list[int]:
    """The values (row-major) of a TENSOR_INT32 argument of ``shape`` (None: any size), or ShapeUnknown."""
    values = np.asarray(info.array())
    require(values.ndim == len(shape) and all(s is None or s == d for s, d in zip(shape, values.shape)), name,
            f"{what} must have shape {[s if s is not None else '*' for s in shape]}, got {list(values.shape)}")
    return [int(v) for v in values.reshape(-1)]


def known_input_dims(inp: TensorInfo, name: str, allow_empty: bool = False) -> tuple[int, ...]:
    """The input's fully known shape (rank ≤ 4); zero-sized inputs fail unless allowed."""
    dims = inp.dims()
    require(len(dims) <= 4, name, f"input rank must be at most 4, got {len(dims)}")
    if not allow_empty:
        require_nonempty(dims, name)
    return tuple(dims)


def input_and_optional_vector(inputs: list[TensorInfo], outputs: list[TensorInfo], name: str,
                              allow_empty: bool) -> tuple[tuple[int, ...], bool]:
    """SQUEEZE / TRANSPOSE: the input's shape and whether the optional vector (input 1) is given;
    checks the "=in" quantization."""
    same_quant_as_input(inputs[0], outputs[0], name)
    given = presence(inputs[1])
    if given is None:
        raise ShapeUnknown(f"operand {inputs[1].index}: presence not known before execution")
    return known_input_dims(inputs[0], name, allow_empty), given


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


def image_blocks(inputs: list[TensorInfo], name: str) -> tuple[int, int]:
    """The (block_h, block_w) argument of the batch/space operations, each ≥ 1."""
    bh, bw = int_values(inputs[1], name, "block", (2,))
    require(bh >= 1 and bw >= 1, name, f"block sizes must be ≥ 1, got {[bh, bw]}")
    return bh, bw


# ---- reference kernels ----------------------------------------------------------------------------------

def reshape_reference(params: OpParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [inputs[0].array().reshape(params.output_shapes[0]).copy()]


def transpose_reference(params: TransposeParams, inputs: list[TensorInfo],
                        outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [np.ascontiguousarray(inputs[0].array().transpose(params.perm))]


def channel_shuffle_reference(params: ChannelShuffleParams, inputs: list[TensorInfo],
                              outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    x = inputs[0].array().reshape(p.outer_size, p.groups, p.axis_size // p.groups, p.inner_size)
    return [np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(p.output_shapes[0])]


def rearranged(p: ImageSizes, x_nhwc: np.ndarray, split: tuple[int, ...], axes: tuple[int, ...],
               out_batch: int) -> list[np.ndarray]:
    """An NHWC image split into ``split``, its axes permuted by ``axes``, merged into the NHWC output
    [out_batch, out_h, out_w, out_c] and stored in the operation's layout (operations.md §0.11)."""
    y = x_nhwc.reshape(split).transpose(axes).reshape(out_batch, p.out_h, p.out_w, p.out_c)
    return [from_nhwc(y, p.nchw)]


def depth_to_space_reference(params: DepthSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    return rearranged(p, to_nhwc(inputs[0].array(), p.nchw), (p.batch, p.in_h, p.in_w, b, b, p.out_c),
                      (0, 1, 3, 2, 4, 5), p.batch)


def space_to_depth_reference(params: DepthSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, b = params, params.block_size
    return rearranged(p, to_nhwc(inputs[0].array(), p.nchw), (p.batch, p.out_h, b, p.out_w, b, p.in_c),
                      (0, 1, 3, 2, 4, 5), p.batch)


def batch_to_space_reference(params: BatchSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    return rearranged(p, to_nhwc(inputs[0].array(), p.nchw),
                      (p.block_h, p.block_w, p.out_batch, p.in_h, p.in_w, p.in_c), (2, 3, 0, 4, 1, 5), p.out_batch)


def space_to_batch_reference(params: BatchSpaceParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    x = to_nhwc(inputs[0].array(), p.nchw)
    xp = np.pad(x, ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0)),
                constant_values=np.asarray(p.pad_value).astype(x.dtype))
    return rearranged(p, xp, (p.batch, p.out_h, p.block_h, p.out_w, p.block_w, p.in_c), (2, 4, 0, 1, 3, 5),
                      p.out_batch)


def fill_reference(params: FillParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [np.full(params.output_shapes[0], inputs[1].value, dtype=outputs[0].dtype)]


def rank_reference(params: RankParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [np.array(params.rank, dtype=np.int32)]


# ---- lowerings ------------------------------------------------------------------------------------------

#: the C type an element is copied as (raw bits: float as uint, half as ushort)
_COPY_TYPES = {F32: "uint", F16: "ushort"}
#: factors of a gather's output index (shape_ops.cl i0..i5)
_MAX_FACTORS = 6
#: every literal of shape_ops.cl (each instance overrides the ones its OP reads)
_GATHER_DEFAULTS = {"OP": 0, "T": "int", "COUNT": 0, "VALUE": 0, "HAS_PAD": 0, "PAD": 0,
                    **{f"OD{k}": 1 for k in range(_MAX_FACTORS)}, **{f"A{k}": 0 for k in range(_MAX_FACTORS)},
                    **{f"M{k}": 0 for k in range(_MAX_FACTORS)},
                    **{f"ID{j}": 1 for j in range(4)}, **{f"P{j}": 0 for j in range(4)}}


def copy_type(info: TensorInfo) -> str:
    return _COPY_TYPES.get(info.type, ctype(info))


@dataclass
class Gather:
    """An affine gather: output element (in row-major order) ↔ factors (size, input dim, multiplier),
    outermost first; input coordinate j = Σ index_k·multiplier_k over the factors of dim j − pads[j];
    a coordinate outside [0, in_dims[j]) reads the pad value."""

    in_dims: tuple[int, ...]
    factors: list[tuple[int, int, int]] = field(default_factory=list)
    pads: tuple[int, ...] = (0, 0, 0, 0)


def emit_gather(ctx: LoweringContext, g: Gather, pad_value: int | None = None) -> None:
    """One shape_ops.cl OP 0 instance copying input 0 to output 0 through ``g`` (≤ 4 input dims)."""
    count = element_count(s for s, _d, _m in g.factors)
    if count == 0:
        return
    shift = 4 - len(g.in_dims)
    factors = [(s, d + shift, m) for s, d, m in g.factors if s != 1]
    if len(factors) > _MAX_FACTORS:  # pragma: no cover - every operation here needs at most six
        raise failure(f"gather with {len(factors)} factors")
    factors = [(1, 0, 0)] * (_MAX_FACTORS - len(factors)) + factors
    d = {**_GATHER_DEFAULTS, "T": copy_type(ctx.inputs[0]), "COUNT": count,
         "HAS_PAD": int(pad_value is not None), "PAD": pad_value or 0}
    for k, (size, dim, mult) in enumerate(factors):
        d[f"OD{k}"], d[f"A{k}"], d[f"M{k}"] = size, dim, mult
    for j, (size, pad) in enumerate(zip(pad_dims(g.in_dims), (0,) * shift + tuple(g.pads[:len(g.in_dims)]))):
        d[f"ID{j}"], d[f"P{j}"] = size, pad
    ctx.emit("shape_ops.cl", d, [ctx.input(0)], [ctx.output(0)], (count,), Work.ELEMENTS)


def image_gather(nchw: bool, in_nhwc: tuple[int, int, int, int], groups: list[list[tuple[int, int, int]]],
                 pads_nhwc: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Gather:
    """A Gather from NHWC-described factor groups (one per output dimension N, H, W, C; input dims
    0..3 = N, H, W, C) laid out for the operation's layout."""
    if not nchw:
        return Gather(tuple(in_nhwc), [f for grp in groups for f in grp], tuple(pads_nhwc))
    stored = {0: 0, 1: 2, 2: 3, 3: 1}  # NHWC dim → its position in [N, C, H, W]
    order = (0, 3, 1, 2)
    factors = [(s, stored[d], m) for o in order for s, d, m in groups[o]]
    return Gather(tuple(in_nhwc[o] for o in order), factors, tuple(pads_nhwc[o] for o in order))


def alias_supported(ctx: LoweringContext) -> bool:
    """Reshape-like operations: an alias needs the shapes known at preparation."""
    return params_ok(ctx) and known(ctx.inputs[0], ctx.outputs[0])


def lower_alias(ctx: LoweringContext) -> None:
    ctx.alias(0, 0)


def reshape_supported(ctx: LoweringContext) -> bool:
    return alias_supported(ctx) and ctx.is_constant(1)


def squeeze_supported(ctx: LoweringContext) -> bool:
    return alias_supported(ctx) and (ctx.inputs[1].omitted or ctx.is_constant(1))


def gather_supported(ctx: LoweringContext, value_inputs=(), scalar_inputs=()) -> bool:
    """A gather lowering runs the node: decoded, arguments fixed at preparation, shapes known."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    return params_ok(ctx) and scalars_constant(ctx, scalar_inputs) and \
        all(ctx.inputs[i].omitted or ctx.is_constant(i) for i in value_inputs) and \
        known(x, out) and x.type in (F32, F16, I32, Q8A, Q8AS)


def transpose_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, value_inputs=(1,))


def lower_transpose(ctx: LoweringContext) -> None:
    dims = ctx.inputs[0].dims()
    emit_gather(ctx, Gather(tuple(dims), [(dims[p], p, 1) for p in ctx.params.perm]))


def channel_shuffle_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, scalar_inputs=(1, 2))


def lower_channel_shuffle(ctx: LoweringContext) -> None:
    p = ctx.params
    s = p.axis_size // p.groups
    emit_gather(ctx, Gather((p.outer_size, p.axis_size, p.inner_size),
                            [(p.outer_size, 0, 1), (s, 1, 1), (p.groups, 1, s), (p.inner_size, 2, 1)]))


def depth_space_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, scalar_inputs=(1, 2))


def lower_depth_space(ctx: LoweringContext) -> None:
    p = ctx.params
    b = p.block_size
    if ctx.node.type == OperationType.DEPTH_TO_SPACE:
        groups = [[(p.batch, 0, 1)], [(p.in_h, 1, 1), (b, 3, b * p.out_c)], [(p.in_w, 2, 1), (b, 3, p.out_c)],
                  [(p.out_c, 3, 1)]]
    else:
        groups = [[(p.batch, 0, 1)], [(p.out_h, 1, b)], [(p.out_w, 2, b)], [(b, 1, 1), (b, 2, 1), (p.in_c, 3, 1)]]
    emit_gather(ctx, image_gather(p.nchw, (p.batch, p.in_h, p.in_w, p.in_c), groups))


def batch_space_supported(ctx: LoweringContext) -> bool:
    values = (1,) if ctx.node.type == OperationType.BATCH_TO_SPACE_ND else (1, 2)
    return gather_supported(ctx, value_inputs=values, scalar_inputs=(len(values) + 1,))


def lower_batch_space(ctx: LoweringContext) -> None:
    p = ctx.params
    bh, bw = p.block_h, p.block_w
    if ctx.node.type == OperationType.BATCH_TO_SPACE_ND:
        groups = [[(p.out_batch, 0, 1)], [(p.in_h, 1, 1), (bh, 0, bw * p.out_batch)],
                  [(p.in_w, 2, 1), (bw, 0, p.out_batch)], [(p.in_c, 3, 1)]]
        emit_gather(ctx, image_gather(p.nchw, (p.batch, p.in_h, p.in_w, p.in_c), groups))
        return
    groups = [[(bh, 1, 1), (bw, 2, 1), (p.batch, 0, 1)], [(p.out_h, 1, bh)], [(p.out_w, 2, bw)], [(p.in_c, 3, 1)]]
    pad = p.pad_value if p.pad_top or p.pad_bottom or p.pad_left or p.pad_right else None
    emit_gather(ctx, image_gather(p.nchw, (p.batch, p.in_h, p.in_w, p.in_c), groups,
                                  (0, p.pad_top, p.pad_left, 0)), pad)


def bits_literal(value, info_type) -> str:
    """A scalar as the raw bits the output stores (C literal of the copy type)."""
    if info_type == F32:
        return f"0x{int(np.float32(value).view(np.uint32)):08x}u"
    if info_type == F16:
        return f"0x{int(np.float16(value).view(np.uint16)):04x}u"
    return str(int(value))


def fill_supported(ctx: LoweringContext) -> bool:
    return params_ok(ctx) and ctx.is_constant(0) and known(ctx.outputs[0])


def lower_fill(ctx: LoweringContext) -> None:
    out = ctx.outputs[0]
    count = element_count(ctx.params.output_shapes[0])
    if count == 0:
        return
    d = {**_GATHER_DEFAULTS, "T": copy_type(out), "COUNT": count}
    if ctx.is_constant(1):
        d.update(OP=1, VALUE=bits_literal(ctx.inputs[1].value, out.type))
        ctx.emit("shape_ops.cl", d, [], [ctx.output(0)], (count,), Work.ELEMENTS)
    else:  # a scalar computed by an earlier operation (e.g. RANK): read from its buffer
        ctx.emit("shape_ops.cl", {**d, "OP": 2}, [ctx.input(1)], [ctx.output(0)], (count,), Work.ELEMENTS)


def rank_supported(ctx: LoweringContext) -> bool:
    return params_ok(ctx)


def lower_rank(ctx: LoweringContext) -> None:
    d = {**_GATHER_DEFAULTS, "OP": 1, "T": "int", "COUNT": 1, "VALUE": ctx.params.rank}
    ctx.emit("shape_ops.cl", d, [], [ctx.output(0)], (1,), Work.ELEMENTS)


# ---- the operations -------------------------------------------------------------------------------------

@operation(OperationType.RESHAPE, signature=RESHAPE_SIGNATURE, reference=reshape_reference, lower=lower_alias,
           supports=reshape_supported, value_inputs=(1,))
def reshape(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReshapeParams:
    inp, shape_info, out = inputs[0], inputs[1], outputs[0]
    same_quant_as_input(inp, out, "RESHAPE")
    target = int_values(shape_info, "RESHAPE", "the shape input")  # ShapeUnknown if not known
    require(all(v >= -1 for v in target), "RESHAPE", f"shape entries must be ≥ −1, got {target}")
    stretch = [i for i, v in enumerate(target) if v == -1]
    require(len(stretch) <= 1, "RESHAPE", f"at most one shape entry may be −1, got {target}")
    given = element_count(v for v in target if v != -1)
    try:
        dims = known_input_dims(inp, "RESHAPE")
    except ShapeUnknown:
        if stretch:
            raise
        # without −1 the target alone fixes the output; the element count is checked at execution
        return ReshapeParams(output_shapes=[tuple(target)])
    numel = element_count(dims)
    if stretch:
        require(given > 0 and numel % given == 0, "RESHAPE",
                f"cannot infer the −1 entry of {target} for {numel} elements")
        target[stretch[0]] = numel // given
    require(element_count(target) == numel, "RESHAPE",
            f"shape {target} has a different element count than the input {list(dims)}")
    return ReshapeParams(output_shapes=[tuple(target)])


@operation(OperationType.SQUEEZE, signature=SQUEEZE_SIGNATURE, reference=reshape_reference, lower=lower_alias,
           supports=squeeze_supported, value_inputs=(1,))
def squeeze(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReshapeParams:
    dims, given = input_and_optional_vector(inputs, outputs, "SQUEEZE", allow_empty=False)
    rank = len(dims)
    if given:
        drop = set()
        for a in int_values(inputs[1], "SQUEEZE", "axes"):
            require(-rank <= a < rank, "SQUEEZE", f"axis {a} out of range for rank {rank}")
            require(dims[a % rank] == 1, "SQUEEZE", f"dimension {a % rank} of {list(dims)} is not 1")
            drop.add(a % rank)
    else:
        drop = {i for i, d in enumerate(dims) if d == 1}
    shape = tuple(d for i, d in enumerate(dims) if i not in drop)
    return ReshapeParams(output_shapes=[shape or (1,)])


@operation(OperationType.EXPAND_DIMS, signature=EXPAND_DIMS_SIGNATURE, reference=reshape_reference,
           lower=lower_alias, supports=alias_supported)
def expand_dims(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReshapeParams:
    same_quant_as_input(inputs[0], outputs[0], "EXPAND_DIMS")
    axis = inputs[1].scalar()
    dims = inputs[0].dims()
    require_nonempty(dims, "EXPAND_DIMS")
    axis = normalize_axis(axis, len(dims) + 1, "EXPAND_DIMS")
    return ReshapeParams(output_shapes=[tuple(dims[:axis]) + (1,) + tuple(dims[axis:])])


@operation(OperationType.TRANSPOSE, signature=TRANSPOSE_SIGNATURE, reference=transpose_reference,
           lower=lower_transpose, supports=transpose_supported, value_inputs=(1,))
def transpose(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> TransposeParams:
    dims, given = input_and_optional_vector(inputs, outputs, "TRANSPOSE", allow_empty=True)
    rank = len(dims)
    if given:
        perm = tuple(int_values(inputs[1], "TRANSPOSE", "perm", (rank,)))
        require(sorted(perm) == list(range(rank)), "TRANSPOSE",
                f"perm {list(perm)} is not a permutation of 0..{rank - 1}")
    else:
        require(rank == 2, "TRANSPOSE", f"an omitted perm needs a rank-2 input, got rank {rank}")
        perm = (1, 0)
    return TransposeParams(output_shapes=[tuple(dims[p] for p in perm)], perm=perm)


@operation(OperationType.CHANNEL_SHUFFLE, signature=CHANNEL_SHUFFLE_SIGNATURE, reference=channel_shuffle_reference,
           lower=lower_channel_shuffle, supports=channel_shuffle_supported)
def channel_shuffle(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ChannelShuffleParams:
    same_quant_as_input(inputs[0], outputs[0], "CHANNEL_SHUFFLE")
    groups = inputs[1].scalar()
    dims, fields = axis_fields(inputs, 2, "CHANNEL_SHUFFLE", allow_empty=False)
    require(groups > 0 and fields["axis_size"] % groups == 0, "CHANNEL_SHUFFLE",
            f"num_groups {groups} must be > 0 and divide the axis size {fields['axis_size']}")
    return ChannelShuffleParams(output_shapes=[dims], groups=groups, **fields)


@operation(OperationType.DEPTH_TO_SPACE, signature=DEPTH_SPACE_SIGNATURE, reference=depth_to_space_reference,
           lower=lower_depth_space, supports=depth_space_supported)
def depth_to_space(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return define_depth_space(True, inputs, outputs)


@operation(OperationType.SPACE_TO_DEPTH, signature=DEPTH_SPACE_SIGNATURE, reference=space_to_depth_reference,
           lower=lower_depth_space, supports=depth_space_supported)
def space_to_depth(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DepthSpaceParams:
    return define_depth_space(False, inputs, outputs)


@operation(OperationType.BATCH_TO_SPACE_ND, signature=BATCH_TO_SPACE_SIGNATURE, reference=batch_to_space_reference,
           lower=lower_batch_space, supports=batch_space_supported, value_inputs=(1,))
def batch_to_space(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BatchSpaceParams:
    name = "BATCH_TO_SPACE_ND"
    inp, out = inputs[0], outputs[0]
    same_quant_as_input(inp, out, name)
    bh, bw = image_blocks(inputs, name)
    nchw = optional_bool(inputs, 2)
    require_nonempty(inp.dims(), name)
    n, h, w, c = nhwc_dims(inp, nchw, name)
    require(n % (bh * bw) == 0, name, f"batch {n} is not a multiple of block_h·block_w = {bh * bw}")
    on, oh, ow = n // (bh * bw), h * bh, w * bw
    return BatchSpaceParams(output_shapes=[stored_shape(on, oh, ow, c, nchw)], nchw=nchw, batch=n, in_h=h, in_w=w,
                            in_c=c, out_h=oh, out_w=ow, out_c=c, out_batch=on, block_h=bh, block_w=bw)


@operation(OperationType.SPACE_TO_BATCH_ND, signature=SPACE_TO_BATCH_SIGNATURE, reference=space_to_batch_reference,
           lower=lower_batch_space, supports=batch_space_supported, value_inputs=(1, 2))
def space_to_batch(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BatchSpaceParams:
    name = "SPACE_TO_BATCH_ND"
    inp, out = inputs[0], outputs[0]
    same_quant_as_input(inp, out, name)
    bh, bw = image_blocks(inputs, name)
    pads = int_values(inputs[2], name, "paddings", (2, 2))
    require(min(pads) >= 0, name, f"paddings must be ≥ 0, got {pads}")
    nchw = optional_bool(inputs, 3)
    require_nonempty(inp.dims(), name)
    n, h, w, c = nhwc_dims(inp, nchw, name)
    top, bottom, left, right = pads
    hp, wp = h + top + bottom, w + left + right
    require(hp % bh == 0 and wp % bw == 0, name,
            f"padded height {hp} and width {wp} must be multiples of the blocks {[bh, bw]}")
    oh, ow, on = hp // bh, wp // bw, n * bh * bw
    return BatchSpaceParams(output_shapes=[stored_shape(on, oh, ow, c, nchw)], nchw=nchw, batch=n, in_h=h, in_w=w,
                            in_c=c, out_h=oh, out_w=ow, out_c=c, out_batch=on, block_h=bh, block_w=bw,
                            pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right,
                            pad_value=inp.zero_point if inp.is_quantized else 0)


@operation(OperationType.FILL, signature=FILL_SIGNATURE, reference=fill_reference, lower=lower_fill,
           supports=fill_supported, value_inputs=(0,))
def fill(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> FillParams:
    dims = int_values(inputs[0], "FILL", "dims")
    require(all(d >= 0 for d in dims), "FILL", f"dims must be ≥ 0, got {dims}")
    return FillParams(output_shapes=[tuple(dims)])


@operation(OperationType.RANK, signature=RANK_SIGNATURE, reference=rank_reference, lower=lower_rank,
           supports=rank_supported)
def rank(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> RankParams:
    inp = inputs[0]
    r = inp.rank
    if inp.known_shape:
        require_nonempty(inp.shape, "RANK")
    return RankParams(output_shapes=[()], rank=r)
