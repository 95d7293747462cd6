"""CONCATENATION: byte copies, plus the TFLite fp32 requantisation of quantized inputs whose
params differ from the output's (operands.md §8.2)."""
from __future__ import annotations

import numpy as np

from ... import quant
from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.concatenation import ConcatenationParams
from ..registry import F16, F32, Q8A, Q8AS, kernel


@kernel(OperationType.CONCATENATION, types=(F32, F16, Q8A, Q8AS))
def concatenation(p: ConcatenationParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    out = outputs[0]
    parts = []
    for i, t in enumerate(inputs[:-1]):
        a = t.array()
        if p.requantize[i]:
            v = a.astype(np.float32) * np.float32(p.requant_scale[i]) + np.float32(p.requant_bias[i])
            a = np.clip(quant.round_half_away(v).astype(np.int64) + p.output_zero_point, p.qmin, p.qmax)
        parts.append(a.astype(out.dtype, copy=False))
    return [np.concatenate(parts, axis=p.axis).reshape(p.output_shapes[0])]
