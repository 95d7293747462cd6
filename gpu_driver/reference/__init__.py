"""The reference device: numpy CPU executor (the oracle for every accelerator backend)."""
from .device import ReferenceDevice, ReferencePreparedModel
from .executor import ExecutionLimits, ReferenceExecutor

__all__ = ["ReferenceDevice", "ReferencePreparedModel", "ReferenceExecutor", "ExecutionLimits"]
