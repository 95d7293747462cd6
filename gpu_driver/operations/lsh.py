"""LSH_PROJECTION (15): project items onto bits by signs of FarmHash-based random projections.

Needs a bit-exact FarmHash Fingerprint64: gpu_driver.reference.farmhash on the host, and the same
algorithm in the shared kernel dialect (opencl_kernels/ops/lsh.cl, which also needs fp64) on devices.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hal.types import OperationType
from .base import OpParams, TensorInfo, operation, require
from .recurrent import presence

LSH_SPARSE_DEPRECATED = 1
LSH_DENSE = 2
LSH_SPARSE = 3
LSH_TYPES = {LSH_SPARSE_DEPRECATED: "SPARSE_DEPRECATED", LSH_DENSE: "DENSE", LSH_SPARSE: "SPARSE"}


@dataclass
class LSHParams(OpParams):
    """Decoded LSH_PROJECTION (operations.md 15).

    ``lsh_type`` 1 SPARSE_DEPRECATED / 2 DENSE / 3 SPARSE; ``num_hash`` and ``num_bits`` are the hash
    tensor's dims; ``num_items`` is the input's dim 0 and ``item_bytes`` the raw bytes per item
    (hashed after the 4 seed bytes); ``has_weight`` whether per-item weights are given (DENSE only),
    None while undecided (a model input before execution: the presence rule is checked at execution).
    Output I32: [num_hash] (sparse kinds) or [num_hash·num_bits] (DENSE).
    """

    lsh_type: int = LSH_SPARSE
    num_hash: int = 0
    num_bits: int = 0
    num_items: int = 0
    item_bytes: int = 0
    has_weight: bool | None = False


@operation(OperationType.LSH_PROJECTION)
def lsh_projection(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LSHParams:
    name = "LSH_PROJECTION"
    hash_, inp, weight, type_info = inputs[:4]
    hs = hash_.dims()
    require(len(hs) == 2, name, f"hash tensor must be 2-D [num_hash, num_bits], got {list(hs)}")
    num_hash, num_bits = hs
    require(num_bits <= 32, name, f"num_bits {num_bits} exceeds 32")
    xs = inp.dims()
    require(len(xs) >= 1, name, "input must have rank >= 1")
    lsh_type = type_info.scalar()
    require(lsh_type in LSH_TYPES, name, f"type {lsh_type} is not 1 (SPARSE_DEPRECATED), 2 (DENSE) or 3 (SPARSE)")
    has_weight = presence(weight)
    if lsh_type == LSH_DENSE:
        require(has_weight is not False, name, "DENSE projection requires the weight input")
        if has_weight:
            ws = weight.dims()
            require(len(ws) == 1 and ws[0] == xs[0], name,
                    f"weight must have shape [{xs[0]}] (input dim 0), got {list(ws)}")
        out_shape = (num_hash * num_bits,)
    else:
        require(has_weight is not True, name,
                f"{LSH_TYPES[lsh_type]} projection requires the weight input to be omitted")
        if lsh_type == LSH_SPARSE and num_hash > 0:
            require(num_bits + math.ceil(math.log2(num_hash)) <= 32, name,
                    f"num_bits + ceil(log2(num_hash)) = {num_bits} + {math.ceil(math.log2(num_hash))} exceeds 32")
        out_shape = (num_hash,)
    item_bytes = int(np.prod(xs[1:], dtype=np.int64)) * inp.dtype.itemsize
    return LSHParams(output_shapes=[out_shape], lsh_type=lsh_type, num_hash=num_hash, num_bits=num_bits,
                     num_items=xs[0], item_bytes=item_bytes, has_weight=has_weight)
