"""Fixtures for the memory tests: the reference device and the OpenCL device (PoCL), small models."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.types import OperandType, OperationType

F32 = OperandType.TENSOR_FLOAT32


def _opencl():
    for d in gd.get_devices():
        if d.name.startswith("opencl"):
            return d
    return None


@pytest.fixture(scope="session")
def reference():
    return gd.get_device("reference")


@pytest.fixture(scope="session")
def opencl():
    d = _opencl()
    if d is None:
        pytest.skip("no OpenCL device")
    return d


@pytest.fixture(scope="session", params=["reference", "opencl"])
def device(request):
    if request.param == "reference":
        return gd.get_device("reference")
    d = _opencl()
    if d is None:
        pytest.skip("no OpenCL device")
    return d


def add_model(shape=(2, 3), const: np.ndarray | None = None) -> gd.Model:
    """out = a + b (const None) or out = a + const (then one input)."""
    b = gd.ModelBuilder()
    a = b.add_input(F32, list(shape))
    c = b.add_input(F32, list(shape)) if const is None else b.add_constant(F32, list(shape), const)
    none = b.add_scalar(OperandType.INT32, 0)
    out = b.add_operand(F32, list(shape))
    b.add_operation(OperationType.ADD, [a, c, none], [out])
    b.set_outputs([out])
    return b.finish()


def two_output_model(shape=(2, 3)) -> gd.Model:
    """(a + b, a * b)."""
    b = gd.ModelBuilder()
    a = b.add_input(F32, list(shape))
    c = b.add_input(F32, list(shape))
    none = b.add_scalar(OperandType.INT32, 0)
    s = b.add_operand(F32, list(shape))
    p = b.add_operand(F32, list(shape))
    b.add_operation(OperationType.ADD, [a, c, none], [s])
    b.add_operation(OperationType.MUL, [a, c, none], [p])
    b.set_outputs([s, p])
    return b.finish()


@pytest.fixture(scope="session")
def prepared_add():
    """{device name: prepared (2, 3) a + b model}, prepared once per session."""
    cache = {}

    def get(device):
        if device.name not in cache:
            cache[device.name] = device.prepare_model(add_model())
        return cache[device.name]

    return get
