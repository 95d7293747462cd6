"""Small models and fixtures shared by the accelerator framework tests."""
from __future__ import annotations

import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O, zoo


def opencl_device():
    try:
        return gd.get_device("opencl")
    except gd.DriverError:
        pytest.skip("no OpenCL device (pyopencl + PoCL not installed)")


def chain_model(layers: int, shape=(1, 32, 32, 8), relu: bool = True, seed: int = 0):
    """x → [ADD const_i → RELU] × layers (alternating ADD / MUL when relu is False); gpu_driver.zoo."""
    return zoo.chain_model(layers, shape, relu=relu, seed=seed)


def add_model(shape=(2, 3, 4), activation: int = 0, output_dims=None):
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, shape)
    y = b.add_input(T.TENSOR_FLOAT32, shape)
    act = b.add_scalar(T.INT32, activation)
    out = b.add_operand(T.TENSOR_FLOAT32, shape if output_dims is None else output_dims)
    b.add_operation(O.ADD, [x, y, act], [out])
    b.set_outputs([out])
    return b.finish()


def reference_outputs(model, inputs):
    return gd.get_device("reference").prepare_model(model).execute(inputs)
