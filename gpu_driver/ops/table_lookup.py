"""EMBEDDING_LOOKUP, GATHER and HASHTABLE_LOOKUP: gather rows of a tensor by index / by key.

The lookups / indices are always TENSOR_INT32.  EMBEDDING_LOOKUP (rows of axis 0) and GATHER (slices
of any axis, ``np.take``; indices of any rank) fail the execution (GENERAL_FAILURE) for an index
outside the axis, negative ones included; neither accepts zero-sized tensors.  On the accelerator,
indices that are not constants known to be in range are checked by the kernel, which reports a bad
one through the status word (its slices are zero-filled).  HASHTABLE_LOOKUP has no failure mode: a
missing key gives a zero row and hit 0; the keys are sorted ascending and binary-searched (a lower
bound, like numpy.searchsorted).  All are exact copies (float16 is copied as its bits).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import bits_ctype, ctype, known, params_ok, scalars_constant, Work
from ..errors import failure
from ..hal.types import OperationType
from ..sizes import element_count
from .definition import OpParams, TensorInfo, require, require_nonempty, same_quant_as_input
from .registry import operation
from .shape_preserving import normalize_axis
from .signature import F16, F32, I32, Q8A, Q8AS, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class LookupParams(OpParams):
    """A row gather.  The table is viewed as [outer, num_rows, row_size] and the output as
    [outer, num_lookups, row_size] (EMBEDDING_LOOKUP / HASHTABLE_LOOKUP: outer = 1, the rows are
    the values' dim 0 and row_size the product of its dims 1…; GATHER: around ``axis``).

    - EMBEDDING_LOOKUP / GATHER: out[o, i] = table[o, lookups[i]]; a lookup outside [0, num_rows)
      fails the execution (GENERAL_FAILURE).
    - HASHTABLE_LOOKUP (``num_keys`` = num_rows, keys sorted ascending): found at j → out[i] =
      values[j], hits[i] = 1; else out[i] = zero bytes, hits[i] = 0.  Output 1 (hits) is Q8A [num_lookups].
    """

    num_lookups: int = 0
    num_rows: int = 0
    row_size: int = 1
    num_keys: int = 0
    outer: int = 1
    axis: int = 0


# ---- signatures -----------------------------------------------------------------------------------------

#: lookups, values (the values select the type configuration)
EMBEDDING_LOOKUP_SIGNATURE = OpSignature(
    {F32: 1, I32: 3, Q8A: 3, F16: 4, Q8AS: 4}, (Variant("lookup", (I32, "T"), ("T",)),),
    primary=1, ranks={0: (1, 1), 1: (2, 99)}, out_ranks={0: (2, 99)}, same_quant=((0, 1),))

#: lookups, keys, values → values rows, hits
HASHTABLE_LOOKUP_SIGNATURE = OpSignature(
    {F32: 1, I32: 1, Q8A: 1}, (Variant("lookup", (I32, I32, "T"), ("T", Q8A)),),
    primary=2, ranks={0: (1, 1), 1: (1, 1), 2: (1, 99)}, out_ranks={1: (1, 1)}, same_quant=((0, 2),))

#: input, axis, indices
GATHER_SIGNATURE = OpSignature(
    {F32: 3, F16: 3, I32: 3, Q8A: 3, Q8AS: 4}, (Variant("gather", ("T", i32, I32), ("T",)),),
    ranks={0: (1, 99)}, same_quant=((0, 0),))


# ---- definition helpers ---------------------------------------------------------------------------------

def value_rows(values: TensorInfo, name: str, min_rank: int) -> tuple[tuple[int, ...], int]:
    """The values' shape and row size (elements per row, the product of dims 1…)."""
    dims = values.dims()
    require(len(dims) >= min_rank, name, f"values must have rank ≥ {min_rank}, got shape {list(dims)}")
    require_nonempty(dims, name)
    return tuple(dims), element_count(dims[1:])


def lookup_count(info: TensorInfo, name: str) -> int:
    """The number of lookups (a non-empty rank-1 tensor)."""
    dims = info.dims()
    require(len(dims) == 1, name, f"lookups must be rank 1, got shape {list(dims)}")
    require_nonempty(dims, name)
    return dims[0]


# ---- reference kernels ----------------------------------------------------------------------------------

def checked_indices(info: TensorInfo, bound: int, name: str) -> np.ndarray:
    """The index tensor's values, every one in [0, bound), else the execution fails."""
    idx = info.array().astype(np.int64)
    bad = (idx < 0) | (idx >= bound)
    if bad.any():
        raise failure(f"{name}: index {int(idx[bad][0])} out of range [0, {bound})")
    return idx


def embedding_lookup_reference(params: LookupParams, inputs: list[TensorInfo],
                               outputs: list[TensorInfo]) -> list[np.ndarray]:
    idx = checked_indices(inputs[0], params.num_rows, "EMBEDDING_LOOKUP")
    return [inputs[1].array()[idx].astype(outputs[0].dtype)]


def gather_reference(params: LookupParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    idx = checked_indices(inputs[2], params.num_rows, "GATHER")
    return [np.take(inputs[0].array(), idx, axis=params.axis).astype(outputs[0].dtype)]


def hashtable_lookup_reference(params: LookupParams, inputs: list[TensorInfo],
                               outputs: list[TensorInfo]) -> list[np.ndarray]:
    lookups = inputs[0].array().astype(np.int64)
    keys = inputs[1].array().astype(np.int64)
    values = inputs[2].array()
    pos = np.searchsorted(keys, lookups)          # keys are sorted ascending (binary search)
    safe = np.minimum(pos, params.num_keys - 1)
    hit = (pos < params.num_keys) & (keys[safe] == lookups)
    out = values[safe].copy()
    out[~hit] = 0                                 # zero bytes, not the zero point
    return [out.astype(outputs[0].dtype), hit.astype(np.uint8)]


# ---- lowerings (table_lookup.cl: MODE 0 = by index, 1 = by key) -----------------------------------------

def gather_supported(ctx: LoweringContext, lookups: int, table: int, types) -> bool:
    """Shapes known, int32 lookups at input ``lookups``, the table at input ``table`` of one of ``types``
    and the output of the table's type."""
    if not params_ok(ctx):
        return False
    look, values, out = ctx.inputs[lookups], ctx.inputs[table], ctx.outputs[0]
    return known(look, values, *ctx.outputs) and look.type == I32 and values.type in types \
        and out.type == values.type


def lookups_in_range(ctx: LoweringContext, lookups: int) -> bool:
    """Constant lookups at input ``lookups``, all in range: the kernel needs no check."""
    if not ctx.is_constant(lookups) or ctx.inputs[lookups].value is None:
        return False
    idx = ctx.inputs[lookups].array()
    return bool(np.all((idx >= 0) & (idx < ctx.params.num_rows)))


def lower_gather(ctx: LoweringContext, lookups: int, table: int) -> None:
    """One work item per output element: row ``lookups[i]`` of each outer slab, checked unless known."""
    p = ctx.params
    count = p.outer * p.num_lookups * p.row_size
    if count == 0:
        return
    checked = not lookups_in_range(ctx, lookups)
    d = {"T": bits_ctype(ctx.inputs[table]), "MODE": 0, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_rows,
         "NLOOK": p.num_lookups, "NKEYS": 0, "STATUS": int(checked), "STATUS_CODE": ctx.status_code if checked else 0}
    outs = [ctx.output(0)]
    if checked:
        outs.append(ctx.status(f"an index is outside [0, {p.num_rows})"))
    ctx.emit("table_lookup.cl", d, [ctx.input(lookups), ctx.input(table)], outs, (count,), Work.ELEMENTS)


def embedding_lookup_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, 0, 1, (F32, F16, I32, Q8A, Q8AS))


def lower_embedding_lookup(ctx: LoweringContext) -> None:
    lower_gather(ctx, 0, 1)


def gather_op_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, 2, 0, (F32, F16, I32, Q8A, Q8AS)) and scalars_constant(ctx, [1])


def lower_gather_op(ctx: LoweringContext) -> None:
    lower_gather(ctx, 2, 0)


def hashtable_lookup_supported(ctx: LoweringContext) -> bool:
    return gather_supported(ctx, 0, 2, (F32, Q8A, I32)) and ctx.inputs[1].type == I32


def lower_hashtable_lookup(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.num_lookups * p.row_size
    if count == 0:
        return
    d = {"T": ctype(ctx.inputs[2]), "MODE": 1, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_keys,
         "NLOOK": p.num_lookups, "NKEYS": p.num_keys, "STATUS": 0, "STATUS_CODE": 0}
    ctx.emit("table_lookup.cl", d, [ctx.input(0), ctx.input(1), ctx.input(2)], [ctx.output(0), ctx.output(1)],
             (count,), Work.ELEMENTS)


# ---- the operations -------------------------------------------------------------------------------------

@operation(OperationType.EMBEDDING_LOOKUP, signature=EMBEDDING_LOOKUP_SIGNATURE,
           reference=embedding_lookup_reference, lower=lower_embedding_lookup,
           supports=embedding_lookup_supported)
def embedding_lookup(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LookupParams:
    name = "EMBEDDING_LOOKUP"
    lookups, values = inputs[0], inputs[1]
    same_quant_as_input(values, outputs[0], name)
    k = lookup_count(lookups, name)
    vdims, row = value_rows(values, name, 2)
    return LookupParams(output_shapes=[(k, *vdims[1:])], num_lookups=k, num_rows=vdims[0], row_size=row,
                        num_keys=0)


@operation(OperationType.GATHER, signature=GATHER_SIGNATURE, reference=gather_reference, lower=lower_gather_op,
           supports=gather_op_supported)
def gather(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LookupParams:
    name = "GATHER"
    values, indices = inputs[0], inputs[2]
    same_quant_as_input(values, outputs[0], name)
    dims = tuple(values.dims())
    require(len(dims) >= 1, name, "input must have rank ≥ 1")
    axis = normalize_axis(inputs[1].scalar(), len(dims), name)
    idims = tuple(indices.dims())
    require_nonempty(dims, name)
    require_nonempty(idims, name)
    return LookupParams(output_shapes=[dims[:axis] + idims + dims[axis + 1:]], num_lookups=element_count(idims),
                        num_rows=dims[axis], row_size=element_count(dims[axis + 1:]),
                        outer=element_count(dims[:axis]), axis=axis)


@operation(OperationType.HASHTABLE_LOOKUP, signature=HASHTABLE_LOOKUP_SIGNATURE,
           reference=hashtable_lookup_reference, lower=lower_hashtable_lookup,
           supports=hashtable_lookup_supported)
def hashtable_lookup(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LookupParams:
    name = "HASHTABLE_LOOKUP"
    lookups, keys, values = inputs
    same_quant_as_input(values, outputs[0], name)
    require(outputs[1].type == Q8A, name, "the hits output must be TENSOR_QUANT8_ASYMM")
    k = lookup_count(lookups, name)
    kdims = keys.dims()
    require(len(kdims) == 1, name, f"keys must be rank 1, got shape {list(kdims)}")
    vdims, row = value_rows(values, name, 1)
    require(kdims[0] == vdims[0], name, f"{kdims[0]} keys for {vdims[0]} value rows")
    return LookupParams(output_shapes=[(k, *vdims[1:]), (k,)], num_lookups=k, num_rows=vdims[0], row_size=row,
                        num_keys=kdims[0])
