"""gpu_driver: an NN HAL 1.3 neural-network driver in Python, running models on OpenCL and CUDA devices.

Quick start::

    import gpu_driver as gd
    device = gd.get_device()             # best available: cuda > opencl (PoCL on a CPU) > reference
    prepared = device.prepare_model(model)
    outputs = prepared.execute([x])
"""
__version__ = "0.1.0"

from .builder import ModelBuilder
from .device import Device, get_device, get_devices, register_device_provider
from .errors import DriverError
from .hal import *  # noqa: F401,F403  (the HAL vocabulary at top level)
from .hal import ErrorStatus, Model, OperandType, OperationType
from .memory import HardwareBuffer, Memory, MmapFd, SharedMemory
from .prepared_model import PreparedModel
from . import reference  # noqa: F401  (registers the reference device)
from .cache import CompilationCache  # noqa: E402  (user-side compilation caching helper)
from . import backends  # noqa: F401  (registers the OpenCL / CUDA device providers, lazily)

__all__ = ["__version__", "ModelBuilder", "Device", "PreparedModel", "DriverError", "ErrorStatus", "Model",
           "OperandType", "OperationType", "Memory", "SharedMemory", "MmapFd", "HardwareBuffer", "CompilationCache",
           "get_device", "get_devices", "register_device_provider"]
