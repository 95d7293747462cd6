"""Registry of the reference device's numpy kernels.

A kernel is ``fn(params, inputs, outputs) -> list[np.ndarray]``: ``params`` is what the operation's
definition (gpu_driver.operations) decoded, ``inputs`` are TensorInfos whose ``value`` holds the
actual data (numpy arrays; Python scalars for scalar operands; ``None`` for omitted optional
inputs), ``outputs`` are TensorInfos carrying the output operands' type and quantization.  It returns
one array per output, of the output type's numpy dtype and the shape in ``params.output_shapes``.
Kernels raise ``DriverError(GENERAL_FAILURE)`` for bad data at execution (operations.md §0.10).

``types`` lists the operand types of input 0 the kernel implements (what the reference device
reports as supported).
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..hal.abbreviations import F16, F32, I32, Q8A, Q8AS  # noqa: F401  (re-exported to the kernels)
from ..hal.types import OperandType, OperationType
from ..operations import OpParams, TensorInfo

Kernel = Callable[[OpParams, list[TensorInfo], list[TensorInfo]], list[np.ndarray]]
KERNELS: dict[OperationType, Kernel] = {}
KERNEL_TYPES: dict[OperationType, frozenset[OperandType]] = {}



def kernel(*op_types: OperationType, types: Iterable[OperandType]):
    def register(fn: Kernel) -> Kernel:
        for t in op_types:
            KERNELS[t] = fn
            KERNEL_TYPES[t] = frozenset(types)
        return fn

    return register
