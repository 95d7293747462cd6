"""The reference device: a numpy CPU executor, the oracle every accelerator backend is checked against."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import __version__
from ..device import Device, register_device_provider
from ..hal.model import Model, Operation, Subgraph
from ..hal.types import (OPERAND_TYPE_INFO, Capabilities, DeviceType, ExecutionPreference, OperandPerformance,
                         OperandType, PerformanceInfo, Priority)
from ..prepared_model import ExecutionContext, PreparedModel
from .executor import ExecutionLimits, ReferenceExecutor
from .registry import KERNEL_TYPES, KERNELS

_UNIT = PerformanceInfo(1.0, 1.0)
_CACHE_BINARY = b"gpu_driver reference executor v1"


class ReferencePreparedModel(PreparedModel):
    def __init__(self, device: "ReferenceDevice", model: Model):
        super().__init__(device, model)
        self._executor = ReferenceExecutor(model)

    def _compute(self, inputs: list[np.ndarray | None], ctx: ExecutionContext):
        limits = ExecutionLimits(ctx.deadline_ns, ctx.loop_timeout_ns)
        return self._executor.run(inputs, limits), None

    def cache_payload(self) -> tuple[bytes, dict, list[np.ndarray]]:
        """Compilation-cache hook: the reference's "compiled form" is the model itself, which the cache
        stores anyway (structure in the model cache, constant pools in the data cache)."""
        return _CACHE_BINARY, {"executor": "reference"}, []


class ReferenceDevice(Device):
    """``"reference"``: runs every operation it has a kernel for, in numpy, on the host CPU."""

    name = "reference"
    rank = 0
    #: no driver-private cache by default: preparing the reference costs less than hashing the model
    private_cache = False

    def get_capabilities(self) -> Capabilities:
        """HAL ``getCapabilities_1_3``: the reference is the unit of every ratio (1.0)."""
        types = sorted(t for t in OperandType if t not in (OperandType.SUBGRAPH, OperandType.OEM,
                                                            OperandType.TENSOR_OEM_BYTE))
        return Capabilities(_UNIT, _UNIT, [OperandPerformance(t, _UNIT) for t in types], _UNIT, _UNIT)

    def get_type(self) -> DeviceType:
        """HAL ``getType``: CPU."""
        return DeviceType.CPU

    def get_version_string(self) -> str:
        """HAL ``getVersionString``."""
        return f"gpu_driver-{__version__}-reference"

    def _supports_operation(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        if op.type not in KERNELS or not op.inputs:
            return False
        first = subgraph.operands[op.inputs[0]].type
        return first in KERNEL_TYPES[op.type] or not OPERAND_TYPE_INFO[first].is_tensor

    def _prepare(self, model: Model, preference: ExecutionPreference, priority: Priority, deadline_ns,
                 model_cache: Sequence, data_cache: Sequence, token) -> PreparedModel:
        return ReferencePreparedModel(self, model)

    def load_prepared(self, binary: bytes, plan: dict, constants: list, model: Model) -> PreparedModel:
        """Compilation-cache hook: rebuild a prepared model from what ``cache_payload`` returned."""
        from ..errors import failure

        if binary != _CACHE_BINARY or plan != {"executor": "reference"} or constants:
            raise failure("not a reference-device cache")
        return ReferencePreparedModel(self, model)


register_device_provider(lambda: [ReferenceDevice()])
