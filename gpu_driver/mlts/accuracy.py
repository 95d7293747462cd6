"""Whether a whole model's output is "the same" as TF Lite's (shared/models/README.md).

Per output tensor, against LiteRT-XNNPACK on the same input:

- **fp32** when max|d| ≤ max(10 × the largest difference between two fp32 CPU kernel libraries
  (LiteRT builtin vs XNNPACK), 1e-5 × the output's peak, 1e-6);
- **relaxed** (fp16) when max|d| ≤ 8 × the difference that fp16 storage of every intermediate
  produces (the model run with every float tensor stored as float16, on the reference device);
- **fail** otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class OutputVerdict:
    name: str
    max_diff: float
    fp32_bound: float
    relaxed_bound: float | None
    verdict: str          # "fp32", "relaxed" or "fail"


def max_abs_diff(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == b.size:  # a TF Lite scalar comes back from the driver as shape [1]
        a = a.reshape(b.shape)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b), initial=0.0))


def verdict(name: str, ours, xnnpack, builtin, fp16_storage=None) -> OutputVerdict:
    """The verdict of one output: ``ours`` against ``xnnpack``; ``builtin`` is LiteRT's builtin
    kernels' output, ``fp16_storage`` the fp16-storage run's (None when not available)."""
    d = max_abs_diff(ours, xnnpack)
    peak = float(np.max(np.abs(np.asarray(xnnpack, dtype=np.float64)), initial=0.0))
    fp32 = max(10.0 * max_abs_diff(builtin, xnnpack), 1e-5 * peak, 1e-6)
    relaxed = None if fp16_storage is None else 8.0 * max_abs_diff(fp16_storage, xnnpack)
    if d <= fp32:
        v = "fp32"
    elif relaxed is not None and d <= relaxed:
        v = "relaxed"
    else:
        v = "fail"
    return OutputVerdict(name, d, fp32, relaxed, v)


def fp16_storage_model(model):
    """``model`` with every float32 tensor and scalar stored as float16 (constants rounded): run on
    the reference device it gives what fp16 storage of every intermediate produces."""
    import copy

    from ..graph import constant_bytes
    from ..hal.model import DataLocation
    from ..hal.types import OperandLifeTime as L, OperandType as T
    from ..memory import SharedMemory

    to_half = {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16}
    values, pool = bytearray(), bytearray()
    new = copy.copy(model)
    subgraphs = []
    for sg in [model.main, *model.referenced]:
        sg2 = copy.deepcopy(sg)
        for operand, original in zip(sg2.operands, sg.operands):
            if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
                raw = bytes(constant_bytes(model, original))
                if operand.type in to_half:
                    raw = np.frombuffer(raw, dtype="<f4").astype("<f2").tobytes()
                store, align = (values, 4) if len(raw) <= 128 else (pool, 64)
                store.extend(b"\0" * ((-len(store)) % align))
                operand.lifetime = L.CONSTANT_COPY if store is values else L.CONSTANT_REFERENCE
                operand.location = DataLocation(0, len(store), len(raw))
                store.extend(raw)
            operand.type = to_half.get(operand.type, operand.type)
        subgraphs.append(sg2)
    new.main, new.referenced = subgraphs[0], subgraphs[1:]
    new.operand_values = bytes(values)
    new.pools = [SharedMemory.from_bytes(bytes(pool))] if pool else []
    new.relax_computation_float32_to_float16 = False
    return new
