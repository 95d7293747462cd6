"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP: gather rows of a values tensor by index / by key."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hal.types import OperandType, OperationType
from .base import OpParams, TensorInfo, operation, require, same_quant_as_input
from .shape_ops import require_nonempty


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


def _rows(values: TensorInfo, name: str, min_rank: int) -> tuple[tuple[int, ...], int]:
    dims = values.dims()
    require(len(dims) >= min_rank, name, f"values must have rank ≥ {min_rank}, got shape {list(dims)}")
    require_nonempty(dims, name)
    return tuple(dims), int(np.prod(dims[1:], dtype=np.int64))


def _lookups(info: TensorInfo, name: str) -> int:
    dims = info.dims()
    require(len(dims) == 1, name, f"lookups must be rank 1, got shape {list(dims)}")
    require_nonempty(dims, name)
    return dims[0]


@operation(OperationType.EMBEDDING_LOOKUP)
def embedding_lookup(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LookupParams:
    name = "EMBEDDING_LOOKUP"
    lookups, values = inputs[0], inputs[1]
    same_quant_as_input(values, outputs[0], name)
    k = _lookups(lookups, name)
    vdims, row = _rows(values, name, 2)
    return LookupParams(output_shapes=[(k, *vdims[1:])], num_lookups=k, num_rows=vdims[0], row_size=row,
                        num_keys=0)


@operation(OperationType.HASHTABLE_LOOKUP)
def hashtable_lookup(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LookupParams:
    name = "HASHTABLE_LOOKUP"
    lookups, keys, values = inputs
    same_quant_as_input(values, outputs[0], name)
    require(outputs[1].type == OperandType.TENSOR_QUANT8_ASYMM, name, "the hits output must be TENSOR_QUANT8_ASYMM")
    k = _lookups(lookups, name)
    kdims = keys.dims()
    require(len(kdims) == 1, name, f"keys must be rank 1, got shape {list(kdims)}")
    vdims, row = _rows(values, name, 1)
    require(kdims[0] == vdims[0], name, f"{kdims[0]} keys for {vdims[0]} value rows")
    return LookupParams(output_shapes=[(k, *vdims[1:]), (k,)], num_lookups=k, num_rows=vdims[0], row_size=row,
                        num_keys=kdims[0])
