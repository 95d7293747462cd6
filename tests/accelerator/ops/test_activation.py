"""RELU/RELU1/RELU6/LOGISTIC/TANH/FLOOR/DEQUANTIZE/SOFTMAX on each accelerator device vs the reference.

Exact for every quantized op except SOFTMAX (±1); float32 within the CTS tolerance."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, Q8A, In, Out, f32, i32


@pytest.mark.parametrize("op", [OP.RELU, OP.RELU1, OP.RELU6, OP.LOGISTIC, OP.TANH])
@pytest.mark.parametrize("shape", [(7,), (2, 3, 5, 3)])
def test_unary(accelerator, op, shape):
    rng = np.random.default_rng(3)
    check_op(accelerator, op, [In(F32, shape)], [Out(F32)], rng, data=[rng.uniform(-8, 8, shape).astype(np.float32)])
    out = {OP.LOGISTIC: Out(Q8A, 1 / 256, 0), OP.TANH: Out(Q8A, 1 / 128, 128)}.get(op, Out(Q8A, 0.05, 100))
    for scale, zp in [(0.05, 100), (0.1, 0), (0.02, 255)]:
        o = out if op in (OP.LOGISTIC, OP.TANH) else Out(Q8A, scale, zp)
        x = In(Q8A, shape, scale, zp)
        check_op(accelerator, op, [x], [o], rng,
                 data=[(np.arange(np.prod(shape)).reshape(shape) * 3 % 256).astype(np.uint8)], what=f"q {scale} {zp}")


def test_floor_dequantize(accelerator):
    rng = np.random.default_rng(4)
    check_op(accelerator, OP.FLOOR, [In(F32, (3, 4, 5))], [Out(F32)], rng)
    check_op(accelerator, OP.DEQUANTIZE, [In(Q8A, (2, 3, 43), 0.37, 11)], [Out(F32)], rng)


@pytest.mark.parametrize("shape,axis", [((2, 10), None), ((2, 3, 4, 17), None), ((3, 7, 5), 1), ((4, 6), 0)])
def test_softmax(accelerator, shape, axis):
    rng = np.random.default_rng(5)
    extra = [] if axis is None else [i32(axis)]
    for beta in (1.0, 0.35):
        check_op(accelerator, OP.SOFTMAX, [In(F32, shape), f32(beta), *extra], [Out(F32)], rng,
                 data=[rng.uniform(-6, 6, shape).astype(np.float32)])
        check_op(accelerator, OP.SOFTMAX, [In(Q8A, shape, 0.1, 128), f32(beta), *extra], [Out(Q8A, 1 / 256, 0)],
                 rng, quant_tol=1)
