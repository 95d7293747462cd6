"""LSH_PROJECTION reference kernel (operations.md 15), bit-exact with FarmHash Fingerprint64."""
from __future__ import annotations

import numpy as np

from ...errors import failure
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.lsh import LSH_DENSE, LSH_SPARSE, LSHParams
from ..farmhash import fingerprint64_signed
from ..registry import F16, F32, kernel


def _wrap_int32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def running_sign_bit(items: list[bytes], weights: list[float] | None, seed: np.float32) -> int:
    """1 if Σ_k w_k·double(Fingerprint64(seed bytes ‖ item k)) > 0, else 0 (sequential double sum)."""
    seed_bytes = np.float32(seed).astype("<f4").tobytes()
    score = 0.0
    for k, item in enumerate(items):
        h = float(fingerprint64_signed(seed_bytes + item))
        score += h if weights is None else weights[k] * h
    return 1 if score > 0 else 0


@kernel(OperationType.LSH_PROJECTION, types=(F32, F16))
def lsh_projection(params: LSHParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    hash_, inp, weight = inputs[0], inputs[1], inputs[2]
    if params.num_items == 0 or np.size(hash_.value) == 0:
        raise failure("LSH_PROJECTION: zero-sized input is not supported")
    seeds = np.asarray(hash_.value).astype(np.float32).reshape(params.num_hash, params.num_bits)
    raw = np.ascontiguousarray(inp.value, dtype=inp.dtype.newbyteorder("<")).tobytes()
    n = params.item_bytes
    items = [raw[k * n:(k + 1) * n] for k in range(params.num_items)]
    weights = None
    if params.has_weight and weight.value is not None:
        weights = [float(w) for w in np.asarray(weight.value).reshape(-1)]  # exact: f32/f16 → double
    bits = [[running_sign_bit(items, weights, seeds[i, j]) for j in range(params.num_bits)]
            for i in range(params.num_hash)]
    if params.lsh_type == LSH_DENSE:
        return [np.asarray(bits, dtype=np.int32).reshape(-1)]
    out = []
    for i, row in enumerate(bits):
        sig = 0
        for bit in row:
            sig = _wrap_int32((sig << 1) | bit)
        if params.lsh_type == LSH_SPARSE:
            sig = _wrap_int32(sig + i * (1 << params.num_bits))
        out.append(sig)
    return [np.asarray(out, dtype=np.int32)]
