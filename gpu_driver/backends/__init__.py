"""Accelerator runtimes behind small parts (backends.base): OpenCL (PyOpenCL) and CUDA (CuPy).

Each runtime module holds its compiler, allocator, launcher and launch tuning, and a ``discover()``
returning one BackendDevice per device it finds (none when the runtime is missing or finds no
hardware); gpu_driver.runtime.discovery turns them into devices.  Neither pyopencl nor cupy is
imported until discovery runs.
"""
from .base import (Allocator, BackendDevice, Compiler, DeviceBuffer, Launcher, LaunchTuning, Program,
                   TransferCounters)

__all__ = ["Allocator", "BackendDevice", "Compiler", "DeviceBuffer", "Launcher", "LaunchTuning", "Program",
           "TransferCounters"]
