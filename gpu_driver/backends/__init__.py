"""Accelerator runtimes behind one interface (backends.base.Backend): OpenCL (PyOpenCL) and CUDA (CuPy).

Importing this package registers a lazy device provider per runtime; a runtime that is missing or finds
no hardware contributes no device.  Neither pyopencl nor cupy is imported until discovery runs.
"""
from ..device import register_device_provider
from .base import Backend, DeviceBuffer, Program, TransferCounters


def _opencl_devices():
    from .opencl import _provider
    return _provider()


def _cuda_devices():
    from .cuda import _provider
    return _provider()


register_device_provider(_cuda_devices)
register_device_provider(_opencl_devices)

__all__ = ["Backend", "DeviceBuffer", "Program", "TransferCounters"]
