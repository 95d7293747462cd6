"""Small models for the service tests, each with inputs and its expected outputs computed here in
numpy (independently of the driver)."""
import numpy as np

import gpu_driver as gd
from gpu_driver import SharedMemory
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver import OperandType as T, OperationType as O


def binary_model(op=O.ADD, operand_type=T.TENSOR_FLOAT32, dims=(1, 16), then=None):
    """out = op(x, y) (no fused activation), then the one-input operation ``then`` if given."""
    b = gd.ModelBuilder()
    x, y = b.add_input(operand_type, dims), b.add_input(operand_type, dims)
    o = b.add_operand(operand_type, dims)
    b.add_operation(op, [x, y, b.add_scalar(T.INT32, 0)], [o])
    if then is not None:
        o2 = b.add_operand(operand_type, dims)
        b.add_operation(then, [o], [o2])
        o = o2
    return b.set_outputs([o]).finish()


def add_request_model():
    return binary_model()


N = 16


def add_pools():
    """x, y and two pools holding them."""
    x, y = np.arange(N, dtype=np.float32), np.full(N, 0.25, np.float32)
    a, b = SharedMemory.from_bytes(x.tobytes()), SharedMemory.from_bytes(y.tobytes())
    return x, y, a, b


def add_request(a, b, out):
    """A request of :func:`add_request_model`: out = a + b, each a pool holding N floats."""
    arg = lambda i: RequestArgument(DataLocation(i, 0, 4 * N))  # noqa: E731
    return Request([arg(0), arg(1)], [arg(2)], [a, b, out])


def _mul_relu(rng):
    c = rng.uniform(-1, 1, (1, 64)).astype(np.float32)  # 256 bytes: a constant pool
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [1, 64])
    k = b.add_constant(T.TENSOR_FLOAT32, [1, 64], c)
    o = b.add_operand(T.TENSOR_FLOAT32, [1, 64])
    b.add_operation(O.MUL, [x, k, b.add_scalar(T.INT32, 1)], [o])  # fused RELU
    b.set_outputs([o])
    xv = rng.uniform(-2, 2, (1, 64)).astype(np.float32)
    return b.finish(), [xv], [np.maximum(xv * c, 0)]


def _fully_connected(rng):
    w = rng.uniform(-1, 1, (8, 32)).astype(np.float32)
    bias = rng.uniform(-1, 1, (8,)).astype(np.float32)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [2, 32])
    o = b.add_operand(T.TENSOR_FLOAT32, [2, 8])
    b.add_operation(O.FULLY_CONNECTED, [x, b.add_constant(T.TENSOR_FLOAT32, [8, 32], w),
                                        b.add_constant(T.TENSOR_FLOAT32, [8], bias), b.add_scalar(T.INT32, 0)], [o])
    b.set_outputs([o])
    xv = rng.uniform(-1, 1, (2, 32)).astype(np.float32)
    return b.finish(), [xv], [xv @ w.T + bias]


def _sub_tanh(rng):
    xv, yv = (rng.uniform(-2, 2, (4, 8)).astype(np.float32) for _ in range(2))
    return binary_model(O.SUB, dims=(4, 8), then=O.TANH), [xv, yv], [np.tanh(xv - yv)]


def _add_int32(rng):
    xv, yv = (rng.integers(-1000, 1000, (3, 5)).astype(np.int32) for _ in range(2))
    return binary_model(O.ADD, T.TENSOR_INT32, (3, 5)), [xv, yv], [xv + yv]


def four_models(seed=0):
    """[(model, inputs, expected outputs)] × 4."""
    rng = np.random.default_rng(seed)
    return [make(rng) for make in (_mul_relu, _fully_connected, _sub_tanh, _add_int32)]


def check(outputs, expected):
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
