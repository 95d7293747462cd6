"""FULLY_CONNECTED on each accelerator device vs the reference: ranks 2–4, every fused activation
(quant8 exact)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, Q8A, Const, In, Out, i32


@pytest.mark.parametrize("quant", [False, True])
def test_fully_connected(accelerator, quant):
    rng = np.random.default_rng(14)
    for shape, units, act in [((1, 7), 5, 0), ((5, 16), 9, 1), ((2, 3, 4), 3, 2), ((3, 2, 2, 10), 13, 3)]:
        size = 10 if len(shape) == 4 else shape[-1]
        if quant:
            x, out = In(Q8A, shape, 0.5, 127), Out(Q8A, 0.9, 100)
            w = Const(Q8A, rng.integers(0, 256, (units, size)), 0.03, 120)
            b = Const(I32T, rng.integers(-800, 800, (units,)), 0.015)
        else:
            x, out = In(F32, shape), Out(F32)
            w, b = Const(F32, rng.uniform(-1, 1, (units, size))), Const(F32, rng.uniform(-1, 1, (units,)))
        check_op(accelerator, OP.FULLY_CONNECTED, [x, w, b, i32(act)], [out], rng, what=f"{shape} {units} {act}")
