"""Slicing and repetition: SLICE, STRIDED_SLICE, SPLIT, TILE, REVERSE.

Every one is a gather: along each input axis a the output coordinate o reads the input coordinate
``begin[a] + o·step[a]`` (TILE: ``o mod dim[a]``).  The definitions reduce each operation to those
per-axis begins and steps (:class:`GatherParams`), so one numpy kernel and one accelerator kernel
(``slicing.cl``, raw element copies) serve all five.

- SLICE: 0 ≤ begin ≤ dim, size ≥ 0 (−1 = to the end), begin + size ≤ dim; zero-sized inputs allowed.
- STRIDED_SLICE (rank ≤ 4): per axis a begin/end clamped as TFLite's ClampedIndex (negative values
  count from the end; a begin/end mask bit selects the whole range in the stride's direction), length
  max(0, ceil((end − begin)/stride)); a shrink-axis bit removes the axis and needs stride > 0 and
  length 1; an output with every axis removed has shape [1].  Strides are non-zero.
- SPLIT: num_splits outputs of equal size along axis ∈ [−rank, rank); num_splits divides that size.
- TILE: output dim = dim·multiple (multiples ≥ 0), np.tile.
- REVERSE (feature level 7, rank 1–8): np.flip along axis ∈ [0, rank), given as an INT32 tensor [1].
Quantization is "=in" everywhere.  Only SLICE accepts zero-sized inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ceil_div, known, numel, params_ok, row_strides, scalars_constant, Work
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, require, require_nonempty
from .registry import operation
from .shape_preserving import normalize_axis
from .signature import F16, F32, I32, Q8A, Q8AS, RANK_UP_TO_4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

#: the element types of SLICE, SPLIT and TILE (STRIDED_SLICE has no TENSOR_INT32)
_TYPES = {F32: 3, F16: 3, I32: 3, Q8A: 3, Q8AS: 4}
#: the unsigned C type that copies an element of each byte size bit for bit
RAW_TYPES = {1: "uchar", 2: "ushort", 4: "uint"}


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class GatherParams(OpParams):
    """Output k is a gather over ``gather_shapes[k]`` (the input's rank; STRIDED_SLICE's shrunk axes kept
    as size 1, so it has output k's row-major layout): along axis a the coordinate o reads input
    coordinate ``begins[k][a] + o·steps[a]``, or ``o mod dim[a]`` with ``tile``."""

    gather_shapes: list[tuple[int, ...]] = field(default_factory=list)
    begins: list[tuple[int, ...]] = field(default_factory=list)
    steps: tuple[int, ...] = ()
    tile: bool = False


# ---- signatures --------------------------------------------------------------------------------------

def _check_split(ctx: OpContext, t: OperandType) -> int:
    """Every SPLIT output carries the input's quantization ("=in")."""
    a = ctx.inp(0)
    for k in range(len(ctx.op.outputs)):
        o = ctx.out(k)
        if a.type in (Q8A, Q8AS) and (float(o.scale) != float(a.scale) or o.zero_point != a.zero_point):
            ctx.fail(f"output {k} scale/zeroPoint ({o.scale}, {o.zero_point}) must equal input 0's "
                     f"({a.scale}, {a.zero_point})")
    return 1


_VECTOR = (1, 1)
SLICE_SIGNATURE = OpSignature(_TYPES, (Variant("slice", ("T", I32, I32), ("T",)),), ranks={1: _VECTOR, 2: _VECTOR},
                              same_quant=((0, 0),))
STRIDED_SLICE_SIGNATURE = OpSignature(
    {F32: 2, Q8A: 2, F16: 3, Q8AS: 4}, (Variant("strided_slice", ("T", I32, I32, I32, i32, i32, i32), ("T",)),),
    ranks={0: RANK_UP_TO_4, 1: _VECTOR, 2: _VECTOR, 3: _VECTOR}, out_ranks={0: RANK_UP_TO_4}, same_quant=((0, 0),))
SPLIT_SIGNATURE = OpSignature(
    _TYPES, (Variant("split", ("T", i32, i32), ("T",), variadic_outputs=True),),
    check=_check_split)
TILE_SIGNATURE = OpSignature(_TYPES, (Variant("tile", ("T", I32), ("T",)),), ranks={1: _VECTOR},
                             same_quant=((0, 0),))
REVERSE_SIGNATURE = OpSignature({F16: 7, F32: 7, Q8A: 7, Q8AS: 7, I32: 7}, (Variant("reverse", ("T", I32), ("T",)),),
                                ranks={0: (1, 8), 1: _VECTOR}, same_quant=((0, 0),))


# ---- definition helpers ------------------------------------------------------------------------------

def int_vector(info: TensorInfo, length: int, op_name: str, what: str) -> list[int]:
    """The values of a 1-D INT32 argument of ``length`` entries (ShapeUnknown while not known)."""
    values = [int(v) for v in info.array().reshape(-1)]
    require(len(values) == length, op_name, f"{what} has {len(values)} entries, expected {length}")
    return values


def _single(shape: tuple[int, ...], begin, step, out_shape=None) -> GatherParams:
    return GatherParams(output_shapes=[tuple(out_shape if out_shape is not None else shape)],
                        gather_shapes=[tuple(shape)], begins=[tuple(begin)], steps=tuple(step))


def _clamped_index(index: int, dim: int, positive_stride: bool) -> int:
    """TFLite's ClampedIndex: a begin/end value clamped into the range a stride's direction can use."""
    if positive_stride:
        return dim if index >= dim else max(index, -dim) % dim
    return -1 if index < -dim else min(index, dim - 1) % dim


# ---- reference kernel --------------------------------------------------------------------------------

def reference_gather(params: GatherParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    results = []
    for shape, begin, out_shape in zip(params.gather_shapes, params.begins, params.output_shapes):
        index = [b + np.arange(n) * s for n, b, s in zip(shape, begin, params.steps)]
        if params.tile:
            index = [i % d for i, d in zip(index, x.shape)]
        results.append(x[np.ix_(*index)].reshape(out_shape))
    return results


# ---- lowering ----------------------------------------------------------------------------------------

def gather_axes(out_shape, in_shape, begin, step) -> list[list[int]]:
    """Per merged axis [out dim, in dim, in stride, begin, step] of a gather (``slicing.cl``).

    An axis that reads its whole input axis in order (out dim = in dim, begin 0, step 1) merges into
    the axis before it when that one has step 1: the two then map linearly onto one axis of their
    merged input (under TILE too, whose steps are all 1)."""
    axes: list[list[int]] = []
    for o, d, stride, b, s in zip(out_shape, in_shape, row_strides(in_shape), begin, step):
        prev = axes[-1] if axes else None
        if prev is not None and o == d and b == 0 and s == 1 and prev[4] == 1:
            axes[-1] = [prev[0] * o, prev[1] * d, stride, prev[3] * d, 1]
        else:
            axes.append([int(o), int(d), int(stride), int(b), int(s)])
    return axes


def gather_defines(info: TensorInfo, axes: list[list[int]], tile: bool) -> dict:
    """The literals of ``slicing.cl`` (MAP 0, or 1 for TILE) for ``axes`` (:func:`gather_axes`)."""
    names = ("OUT_DIMS", "IN_DIMS", "IN_STRIDES", "BEGIN", "STEP")
    d = {name: "{" + ", ".join(str(v) for v in column) + "}" for name, column in zip(names, zip(*axes))}
    d.update(T=RAW_TYPES[info.dtype.itemsize], RANK=len(axes), MAP=int(tile), FILL="0u", REFLECT=0)
    return d


#: output elements of one row that one work item of ``slicing.cl`` copies at most
GATHER_BLOCK = 256


def gather_launch(out_dims) -> tuple[dict, int]:
    """``slicing.cl``'s BLOCK, BLOCKS and ITEMS for the merged output dims, and the work items."""
    n = int(out_dims[-1])
    block = min(n, GATHER_BLOCK)
    blocks = ceil_div(n, block)
    items = numel(out_dims[:-1]) * blocks
    return {"BLOCK": block, "BLOCKS": blocks, "ITEMS": items}, items


def supports_gather(ctx: LoweringContext) -> bool:
    """Kernels copy raw elements of any size up to 4 bytes; the arguments must be fixed (constants or
    specialised values) and the shapes known, with int32 offsets."""
    if not params_ok(ctx) or not scalars_constant(ctx, range(1, len(ctx.node.inputs))):
        return False
    x = ctx.inputs[0]
    outs = ctx.outputs
    return (known(x, *outs) and all(o.type == x.type for o in outs) and x.dtype.itemsize in RAW_TYPES
            and numel(x.shape) < 2 ** 31 and all(numel(o.shape) < 2 ** 31 for o in outs))


def lower_gather(ctx: LoweringContext) -> None:
    """One ``slicing.cl`` launch per non-empty output."""
    p = ctx.params
    x = ctx.inputs[0]
    for k, (shape, begin) in enumerate(zip(p.gather_shapes, p.begins)):
        count = numel(shape)
        if count:
            axes = gather_axes(shape, x.shape, begin, p.steps)
            launch, items = gather_launch([a[0] for a in axes])
            ctx.emit("slicing.cl", gather_defines(x, axes, p.tile) | launch, [ctx.input(0)], [ctx.output(k)],
                     (items,), Work.ROWS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.SLICE, signature=SLICE_SIGNATURE, reference=reference_gather, lower=lower_gather,
           supports=supports_gather, value_inputs=(1, 2))
def slice_(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GatherParams:
    dims = inputs[0].dims()
    rank = len(dims)
    require(rank >= 1, "SLICE", "input must have rank ≥ 1")
    begin = int_vector(inputs[1], rank, "SLICE", "begin")
    sizes = int_vector(inputs[2], rank, "SLICE", "size")
    out = []
    for a, (d, b, s) in enumerate(zip(dims, begin, sizes)):
        require(0 <= b <= d, "SLICE", f"begin[{a}] = {b} outside [0, {d}]")
        s = d - b if s == -1 else s
        require(0 <= s and b + s <= d, "SLICE", f"size[{a}] = {sizes[a]} does not fit from begin {b} in {d}")
        out.append(s)
    return _single(out, begin, [1] * rank)


@operation(OperationType.STRIDED_SLICE, signature=STRIDED_SLICE_SIGNATURE, reference=reference_gather,
           lower=lower_gather, supports=supports_gather, value_inputs=(1, 2, 3))
def strided_slice(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GatherParams:
    name = "STRIDED_SLICE"
    dims = inputs[0].dims()
    rank = len(dims)
    require(1 <= rank <= 4, name, f"input rank must be 1..4, got {rank}")
    begins, ends, strides = (int_vector(inputs[i], rank, name, what)
                             for i, what in ((1, "begin"), (2, "end"), (3, "strides")))
    begin_mask, end_mask, shrink_mask = (inputs[i].scalar() for i in (4, 5, 6))
    require_nonempty(dims, name)
    shape, begin, out = [], [], []
    for a, (d, s) in enumerate(zip(dims, strides)):
        require(s != 0, name, f"strides[{a}] is 0")
        b = (0 if s > 0 else d - 1) if begin_mask >> a & 1 else _clamped_index(begins[a], d, s > 0)
        e = (d if s > 0 else -1) if end_mask >> a & 1 else _clamped_index(ends[a], d, s > 0)
        n = max(0, -((b - e) // s))
        if shrink_mask >> a & 1:
            require(s > 0, name, f"shrink_axis_mask removes axis {a}, whose stride {s} is negative")
            require(n == 1, name, f"shrink_axis_mask removes axis {a}, whose length is {n}, not 1")
        else:
            out.append(n)
        shape.append(n)
        begin.append(b)
    return _single(shape, begin, strides, out or [1])


@operation(OperationType.SPLIT, signature=SPLIT_SIGNATURE, reference=reference_gather, lower=lower_gather,
           supports=supports_gather)
def split(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GatherParams:
    dims = inputs[0].dims()
    axis = normalize_axis(inputs[1].scalar(), len(dims), "SPLIT")
    count = inputs[2].scalar()
    require(count == len(outputs), "SPLIT", f"num_splits {count} differs from the {len(outputs)} outputs")
    require(dims[axis] % count == 0, "SPLIT", f"num_splits {count} does not divide the axis size {dims[axis]}")
    require_nonempty(dims, "SPLIT")
    part = dims[axis] // count
    shape = dims[:axis] + (part,) + dims[axis + 1:]
    begins = [tuple(k * part if a == axis else 0 for a in range(len(dims))) for k in range(count)]
    return GatherParams(output_shapes=[shape] * count, gather_shapes=[shape] * count, begins=begins,
                        steps=(1,) * len(dims))


@operation(OperationType.TILE, signature=TILE_SIGNATURE, reference=reference_gather, lower=lower_gather,
           supports=supports_gather, value_inputs=(1,))
def tile(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GatherParams:
    dims = inputs[0].dims()
    multiples = int_vector(inputs[1], len(dims), "TILE", "multiples")
    require(all(m >= 0 for m in multiples), "TILE", f"multiples must be ≥ 0, got {multiples}")
    require_nonempty(dims, "TILE")
    params = _single([d * m for d, m in zip(dims, multiples)], [0] * len(dims), [1] * len(dims))
    params.tile = True
    return params


@operation(OperationType.REVERSE, signature=REVERSE_SIGNATURE, reference=reference_gather, lower=lower_gather,
           supports=supports_gather, value_inputs=(1,))
def reverse(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> GatherParams:
    dims = inputs[0].dims()
    rank = len(dims)
    require(1 <= rank <= 8, "REVERSE", f"input rank must be 1..8, got {rank}")
    (axis,) = int_vector(inputs[1], 1, "REVERSE", "axis")
    require(0 <= axis < rank, "REVERSE", f"axis {axis} outside [0, {rank})")
    require_nonempty(dims, "REVERSE")
    begin = [d - 1 if a == axis else 0 for a, d in enumerate(dims)]
    return _single(dims, begin, [-1 if a == axis else 1 for a in range(rank)])
