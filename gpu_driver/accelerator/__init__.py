"""The HAL device and prepared model on top of any accelerator backend (gpu_driver.backends)."""
from .device import AcceleratorDevice
from .prepared_model import AcceleratorPreparedModel, Specialization

__all__ = ["AcceleratorDevice", "AcceleratorPreparedModel", "Specialization"]
