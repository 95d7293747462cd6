"""CONCATENATION on each accelerator device vs the reference: float32, quant8 copies (exact) and
requantised inputs (±1)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, Q8A, In, Out, i32


@pytest.mark.parametrize("axis", [0, 1, 3])
def test_concatenation(accelerator, axis):
    rng = np.random.default_rng(15)
    shapes = []
    for k in (2, 3, 1):
        s = [2, 3, 4, 5]
        s[axis] = k
        shapes.append(tuple(s))
    check_op(accelerator, OP.CONCATENATION, [*[In(F32, s) for s in shapes], i32(axis)], [Out(F32)], rng)
    check_op(accelerator, OP.CONCATENATION, [*[In(Q8A, s, 0.1, 10) for s in shapes], i32(axis)], [Out(Q8A, 0.1, 10)],
             rng)
    ins = [In(Q8A, shapes[0], 0.1, 10), In(Q8A, shapes[1], 0.25, 128), In(Q8A, shapes[2], 0.05, 0)]
    check_op(accelerator, OP.CONCATENATION, [*ins, i32(axis)], [Out(Q8A, 0.2, 60)], rng, quant_tol=1)


def test_concatenation_rank1(accelerator):
    check_op(accelerator, OP.CONCATENATION, [In(F32, (3,)), In(F32, (5,)), i32(0)], [Out(F32)])
