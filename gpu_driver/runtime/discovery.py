"""Device discovery: the devices this driver exposes, best first (``get_devices`` / ``get_device``).

Built in: the reference device, always; one AcceleratorDevice per device the CUDA and OpenCL backends
find (none when their runtime, CuPy or PyOpenCL, is missing or finds no hardware; neither is imported
before discovery runs).  :func:`register_device_provider` adds further device sources.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable

from ..accelerator.device import AcceleratorDevice
from ..backends import cuda, opencl
from ..errors import DriverError, invalid
from ..hal.types import DeviceType, ErrorStatus
from ..reference.device import ReferenceDevice
from .device import Device


def _reference_devices() -> list[Device]:
    return [ReferenceDevice()]


def _cuda_devices() -> list[Device]:
    return [AcceleratorDevice(f"cuda:{i}", b, rank=cuda.RANK_CUDA - i) for i, b in enumerate(cuda.discover())]


def _opencl_devices() -> list[Device]:
    """GPUs above accelerators above CPUs; within a kind, in the order the backend lists them."""
    ranks = {DeviceType.GPU: opencl.RANK_GPU, DeviceType.CPU: opencl.RANK_CPU}
    return [AcceleratorDevice(f"opencl:{i}", b, rank=ranks.get(b.device_type, opencl.RANK_ACCELERATOR) - i)
            for i, b in enumerate(opencl.discover())]


_PROVIDERS: list[Callable[[], Iterable[Device]]] = [_reference_devices, _cuda_devices, _opencl_devices]
_DEVICES: list[Device] | None = None
_DISCOVERY_LOCK = threading.Lock()


def register_device_provider(provider: Callable[[], Iterable[Device]]) -> None:
    """Add a function that returns the devices of one source (called once, lazily)."""
    global _DEVICES
    _PROVIDERS.append(provider)
    _DEVICES = None


def get_devices() -> list[Device]:
    """All devices this driver exposes, best first (the NNAPI runtime's device list)."""
    global _DEVICES
    with _DISCOVERY_LOCK:
        if _DEVICES is None:
            found: list[Device] = []
            for provider in _PROVIDERS:
                try:
                    found.extend(provider())
                except Exception:  # a backend whose runtime is missing or broken contributes nothing
                    continue
            found.sort(key=lambda d: -d.rank)
            _DEVICES = found
        return list(_DEVICES)


def get_device(name: str | None = None) -> Device:
    """A device by name ("reference", "opencl", "opencl:1", "cuda", "cuda:0"); default: the best one.

    A bare backend name ("opencl", "cuda") picks that backend's best device.
    """
    devices = get_devices()
    if name is None:
        return devices[0]
    if not isinstance(name, str):
        raise invalid(f"device name must be a string, got {name!r}")
    for d in devices:
        if d.name == name:
            return d
    if ":" not in name:
        for d in devices:
            if d.name.split(":")[0] == name:
                return d
    raise DriverError(ErrorStatus.DEVICE_UNAVAILABLE,
                      f"no device named {name!r}; available: {', '.join(d.name for d in devices)}")
