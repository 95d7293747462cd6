"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP (input 0, the lookups, is always TENSOR_INT32)."""
from __future__ import annotations

import numpy as np

from ...errors import failure
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.lookup import LookupParams
from ..registry import I32, kernel


@kernel(OperationType.EMBEDDING_LOOKUP, types=(I32,))
def embedding_lookup(params: LookupParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    idx = inputs[0].array().astype(np.int64)
    values = inputs[1].array()
    bad = (idx < 0) | (idx >= params.num_rows)
    if bad.any():
        raise failure(f"EMBEDDING_LOOKUP: lookup value {int(idx[bad][0])} out of range [0, {params.num_rows})")
    return [values[idx].astype(outputs[0].dtype)]


@kernel(OperationType.HASHTABLE_LOOKUP, types=(I32,))
def hashtable_lookup(params: LookupParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    lookups = inputs[0].array().astype(np.int64)
    keys = inputs[1].array().astype(np.int64)
    values = inputs[2].array()
    pos = np.searchsorted(keys, lookups)          # keys are sorted ascending (binary search)
    safe = np.minimum(pos, params.num_keys - 1)
    hit = (pos < params.num_keys) & (keys[safe] == lookups)
    out = values[safe].copy()
    out[~hit] = 0                                 # zero bytes, not the zero point
    return [out.astype(outputs[0].dtype), hit.astype(np.uint8)]
