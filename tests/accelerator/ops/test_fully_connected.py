"""FULLY_CONNECTED on each accelerator device vs the reference: ranks 2–4, every fused activation,
float32, float16 and quant8 asymm / signed (quant8 exact), weights and bias constant or model inputs."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, i32

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED
# per 8-bit type: (input, weights, output) (scale, zero point)
QUANT = {Q8A: ((0.5, 127), (0.03, 120), (0.9, 100)), Q8AS: ((0.5, -3), (0.03, 4), (0.9, -20))}


@pytest.mark.parametrize("type", [F32, F16, Q8A, Q8AS])
@pytest.mark.parametrize("weights_as_inputs", [False, True])
def test_fully_connected(accelerator, type, weights_as_inputs):
    rng = np.random.default_rng(14)
    dtype = {F32: np.float32, F16: np.float16, Q8A: np.uint8, Q8AS: np.int8}[type]

    def tensor(value, t, scale=0.0, zp=0):
        return In(t, value.shape, scale, zp) if weights_as_inputs else Const(t, value, scale, zp)

    for shape, units, act in [((1, 7), 5, 0), ((5, 16), 9, 1), ((2, 3, 4), 3, 2), ((3, 2, 2, 10), 13, 3)]:
        size = 10 if len(shape) == 4 else shape[-1]
        if type in QUANT:
            (sx, zx), (sw, zw), (so, zo) = QUANT[type]
            lo = -128 if type == Q8AS else 0
            xv = rng.integers(lo, lo + 256, shape).astype(dtype)
            wv = rng.integers(lo, lo + 256, (units, size)).astype(dtype)
            bv = rng.integers(-800, 800, (units,)).astype(np.int32)
            x, w, b, out = In(type, shape, sx, zx), tensor(wv, type, sw, zw), tensor(bv, I32T, sx * sw), Out(type, so, zo)
        else:
            xv = rng.uniform(-2, 2, shape).astype(dtype)
            wv, bv = rng.uniform(-1, 1, (units, size)).astype(dtype), rng.uniform(-1, 1, (units,)).astype(dtype)
            x, w, b, out = In(type, shape), tensor(wv, type), tensor(bv, type), Out(type)
        data = [xv, wv, bv] if weights_as_inputs else [xv]
        tol = dict(atol=1e-2, rtol=1e-2) if type == F16 else {}
        check_op(accelerator, OP.FULLY_CONNECTED, [x, w, b, i32(act)], [out], data=data,
                 what=f"{shape} {units} {act}", **tol)


def test_float16_hand_worked(accelerator):
    # [[1, 2], [3, 4]] · [[1, 0], [1, 1], [0.5, -1]]ᵀ + [0, 1, 0.25] = [[1, 4, -1.25], [3, 8, -2.25]]
    x = np.array([[1, 2], [3, 4]], np.float16)
    args = [In(F16, x.shape), Const(F16, [[1, 0], [1, 1], [0.5, -1]]), Const(F16, [0, 1, 0.25]), i32(0)]
    act, _ = check_op(accelerator, OP.FULLY_CONNECTED, args, [Out(F16)], data=[x])
    np.testing.assert_array_equal(act[0], np.array([[1, 4, -1.25], [3, 8, -2.25]], np.float16))
