"""gpu_driver: an NN HAL 1.3 neural-network driver in Python, running models on OpenCL and CUDA devices.

Quick start::

    import gpu_driver as gd
    device = gd.get_device()             # best available: cuda > opencl (PoCL on a CPU) > reference
    prepared = device.prepare_model(model)
    outputs = prepared.execute([x])
"""
from .version import __version__
from .builder import ModelBuilder
from .cache.compilation_cache import CompilationCache
from .errors import DriverError
from .hal import *  # noqa: F401,F403  (the HAL vocabulary at top level)
from .hal import ErrorStatus, Model, OperandType, OperationType
from .memory import HardwareBuffer, Memory, MmapFd, SharedMemory
from .runtime.device import Device
from .runtime.discovery import get_device, get_devices, register_device_provider
from .runtime.burst import Burst
from .runtime.prepared_model import PreparedModel
from .runtime.reusable_execution import ReusableExecution
from .runtime.sync_fence import FencedExecutionCallback, FenceState, SyncFence
from .service.client import connect
from .validation import RequestShapes, validate_model, validate_request

__all__ = ["__version__", "ModelBuilder", "Device", "PreparedModel", "DriverError", "ErrorStatus", "Model",
           "OperandType", "OperationType", "Memory", "SharedMemory", "MmapFd", "HardwareBuffer", "CompilationCache",
           "get_device", "get_devices", "register_device_provider", "validate_model", "validate_request",
           "RequestShapes", "SyncFence", "FenceState", "FencedExecutionCallback", "Burst", "ReusableExecution",
           "connect"]
