"""FULLY_CONNECTED: float (F32, F16 computed in fp32) and exact quantized arithmetic (operands.md §8.5)."""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ...operations import TensorInfo
from ...operations.fully_connected import FullyConnectedParams
from ..registry import F16, F32, Q8A, Q8AS, kernel
from .conv import centred, finish_float, requantize


@kernel(OperationType.FULLY_CONNECTED, types=(F32, F16, Q8A, Q8AS))
def fully_connected(p: FullyConnectedParams, inputs: list[TensorInfo],
                    outputs: list[TensorInfo]) -> list[np.ndarray]:
    out = outputs[0]
    if p.batch == 0:
        return [np.zeros(p.output_shapes[0], dtype=out.dtype)]
    q = p.quant
    x = centred(inputs[0], q.input_zero_point if q else 0).reshape(p.batch, p.input_size)
    w = centred(inputs[1], q.filter_zero_point if q else 0)
    acc = x @ w.T  # float64: exact for the quantized integer products
    bias = inputs[2].array()
    if q is not None:
        return [requantize(np.rint(acc).astype(np.int64) + bias.astype(np.int64), q, p, out.dtype)]
    return [finish_float(acc + bias.astype(np.float64), p, out.dtype)]
