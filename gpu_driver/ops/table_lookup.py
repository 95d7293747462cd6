"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP: gather rows of a values tensor by index / by key.

The lookups (input 0) are always TENSOR_INT32.  EMBEDDING_LOOKUP fails the execution
(GENERAL_FAILURE) for a lookup outside the table: on the accelerator, lookups that are not constants
known to be in range are checked by the kernel, which reports a bad one through the status word
(out-of-range rows are zero-filled).  HASHTABLE_LOOKUP has no failure mode: a missing key gives a
zero row and hit 0; the keys are sorted ascending and binary-searched (a lower bound, like
numpy.searchsorted).  Both are exact row copies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, known, params_ok, Work
from ..errors import failure
from ..hal.types import OperationType
from ..sizes import element_count
from .definition import OpParams, TensorInfo, require, require_nonempty, same_quant_as_input
from .registry import operation
from .signature import F16, F32, I32, Q8A, Q8AS, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ---------------------------------------------------------------------------------------------

@dataclass
class LookupParams(OpParams):
    """A row gather.  ``values`` is viewed as [num_rows, row_size] (row_size = product of its
    dims 1…; 1 for a rank-1 values tensor); the output is [num_lookups, row_size] viewed back.

    - EMBEDDING_LOOKUP: out[i] = values[lookups[i]]; a lookup outside [0, num_rows) fails the
      execution (GENERAL_FAILURE).
    - HASHTABLE_LOOKUP (``num_keys`` = num_rows, keys sorted ascending): found at j → out[i] =
      values[j], hits[i] = 1; else out[i] = zero bytes, hits[i] = 0.  Output 1 (hits) is Q8A [num_lookups].
    """

    num_lookups: int = 0
    num_rows: int = 0
    row_size: int = 1
    num_keys: int = 0


# ---- signatures -----------------------------------------------------------------------------------------

#: lookups, values (the values select the type configuration)
EMBEDDING_LOOKUP_SIGNATURE = OpSignature(
    {F32: 1, I32: 3, Q8A: 3, F16: 4, Q8AS: 4}, (Variant("lookup", (I32, "T"), ("T",)),),
    primary=1, ranks={0: (1, 1), 1: (2, 99)}, out_ranks={0: (2, 99)}, same_quant=((0, 1),))

#: lookups, keys, values → values rows, hits
HASHTABLE_LOOKUP_SIGNATURE = OpSignature(
    {F32: 1, I32: 1, Q8A: 1}, (Variant("lookup", (I32, I32, "T"), ("T", Q8A)),),
    primary=2, ranks={0: (1, 1), 1: (1, 1), 2: (1, 99)}, out_ranks={1: (1, 1)}, same_quant=((0, 2),))


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

def embedding_lookup_reference(params: LookupParams, inputs: list[TensorInfo],
                               outputs: list[TensorInfo]) -> list[np.ndarray]:
    idx = inputs[0].array().astype(np.int64)
    values = inputs[1].array()
    bad = (idx < 0) | (idx >= params.num_rows)
    if bad.any():
        raise failure(f"EMBEDDING_LOOKUP: lookup value {int(idx[bad][0])} out of range [0, {params.num_rows})")
    return [values[idx].astype(outputs[0].dtype)]


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


# ---- lowerings (lookup.cl: MODE 0 = by index, 1 = by key) -----------------------------------------------

def embedding_lookup_supported(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    look, values, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    return known(look, values, out) and look.type == I32 and values.type in (F32, Q8A, I32) \
        and out.type == values.type


def lookups_in_range(ctx: LoweringContext) -> bool:
    """Constant lookups, all in range: the kernel needs no check."""
    if not ctx.is_constant(0) or ctx.inputs[0].value is None:
        return False
    idx = ctx.inputs[0].array()
    return bool(np.all((idx >= 0) & (idx < ctx.params.num_rows)))


def lower_embedding_lookup(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.num_lookups * p.row_size
    if count == 0:
        return
    checked = not lookups_in_range(ctx)
    d = {"T": ctype(ctx.inputs[1]), "MODE": 0, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_rows, "NKEYS": 0,
         "STATUS": int(checked), "STATUS_CODE": ctx.status_code if checked else 0}
    outs = [ctx.output(0)]
    if checked:
        outs.append(ctx.status(f"a lookup index is outside [0, {p.num_rows})"))
    ctx.emit("table_lookup.cl", d, [ctx.input(0), ctx.input(1)], outs, (count,), Work.ELEMENTS)


def hashtable_lookup_supported(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    look, keys, values = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    return (known(look, keys, values, *ctx.outputs) and look.type == I32 and keys.type == I32
            and values.type in (F32, Q8A, I32) and ctx.outputs[0].type == values.type)


def lower_hashtable_lookup(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.num_lookups * p.row_size
    if count == 0:
        return
    d = {"T": ctype(ctx.inputs[2]), "MODE": 1, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_keys,
         "NKEYS": p.num_keys, "STATUS": 0, "STATUS_CODE": 0}
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
