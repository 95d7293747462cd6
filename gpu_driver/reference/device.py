"""The reference device: a numpy CPU executor, the oracle every accelerator backend is checked against."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..compiler.artifact import CompiledModel
from ..errors import failure
from ..hal.model import Model, Operation, Subgraph
from ..hal.types import (Capabilities, DeviceType, ExecutionPreference, OperandPerformance, OperationType,
                         OperandType, PerformanceInfo, Priority)
from ..ops.catalog import lookup
from ..runtime.device import Device
from ..runtime.execution_limits import ExecutionContext
from ..runtime.prepared_model import PreparedModel
from ..version import __version__
from .executor import ExecutionLimits, ReferenceExecutor
from .host_allocator import HostAllocator

_UNIT = PerformanceInfo(1.0, 1.0)
_CACHE_BINARY = b"gpu_driver reference executor v1"


class ReferencePreparedModel(PreparedModel):
    def __init__(self, device: "ReferenceDevice", model: Model):
        super().__init__(device, model)
        self._executor = ReferenceExecutor(model)

    def _compute(self, inputs: list[np.ndarray | None], ctx: ExecutionContext):
        limits = ExecutionLimits(ctx.deadline_ns, ctx.loop_timeout_ns)
        return self._executor.run(inputs, limits), None

    def cache_payload(self) -> CompiledModel:
        """Compilation cache: the reference's "compiled form" is the model itself, which the cache
        stores anyway (structure in the model cache, constant pools in the data cache): a marker
        binary, no launch plan, no constants."""
        return CompiledModel(_CACHE_BINARY, None)


class ReferenceDevice(Device):
    """``"reference"``: runs every operation it has a kernel for, in numpy, on the host CPU."""

    name = "reference"
    rank = 0
    caches_compilations = True
    #: no driver-private cache by default: preparing the reference costs less than hashing the model
    private_cache = False

    def __init__(self) -> None:
        super().__init__(allocator=HostAllocator())  # driver-managed buffers live in host memory

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

    def _support_list(self, model: Model) -> list[bool]:
        return [self._supports(model, model.main, op) for op in model.main.operations]

    def _supports(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        """Every operation with a definition (each operand type its signature admits has a reference
        kernel; validation checked the types), and IF / WHILE whose branches it supports throughout."""
        if op.type not in (OperationType.IF, OperationType.WHILE):
            return lookup(op.type) is not None
        branch_inputs = (1, 2) if op.type == OperationType.IF else (0, 1)
        for i in branch_inputs:
            branch = model.referenced[subgraph.operands[op.inputs[i]].location.offset]
            if not all(self._supports(model, branch, inner) for inner in branch.operations):
                return False
        return True

    def _prepare(self, model: Model, preference: ExecutionPreference, priority: Priority, deadline_ns,
                 model_cache: Sequence, data_cache: Sequence, token) -> PreparedModel:
        return ReferencePreparedModel(self, model)

    def load_prepared(self, compiled: CompiledModel, model: Model) -> PreparedModel:
        """Compilation cache (``prepareModelFromCache_1_3``): rebuild a prepared model from what
        ``cache_payload`` returned."""
        if compiled.binary != _CACHE_BINARY or compiled.plan is not None or compiled.constants:
            raise failure("not a reference-device cache")
        return ReferencePreparedModel(self, model)

