"""Accelerator runtimes behind one interface (backends.base.Backend): OpenCL (PyOpenCL) and CUDA (CuPy).

Each runtime module has a ``discover()`` returning one backend per device it finds (none when the
runtime is missing or finds no hardware); gpu_driver.runtime.discovery turns them into devices.
Neither pyopencl nor cupy is imported until discovery runs.
"""
from .base import Backend, DeviceBuffer, Program, TransferCounters

__all__ = ["Backend", "DeviceBuffer", "Program", "TransferCounters"]
