"""RESHAPE (alias), DEPTH_TO_SPACE, SPACE_TO_DEPTH on each accelerator device vs the reference (exact)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, Q8A, Const, In, Out, i32


@pytest.mark.parametrize("quant", [False, True])
def test_depth_space(accelerator, quant):
    rng = np.random.default_rng(16)
    t = (Q8A, 0.1, 7) if quant else (F32,)
    o = Out(Q8A, 0.1, 7) if quant else Out(F32)
    for shape, b in [((1, 2, 3, 8), 2), ((2, 3, 2, 27), 3), ((1, 1, 1, 4), 2)]:
        check_op(accelerator, OP.DEPTH_TO_SPACE, [In(*t[:1], shape, *t[1:]), i32(b)], [o], rng, what=str(shape))
    for shape, b in [((1, 4, 6, 3), 2), ((2, 3, 6, 2), 3), ((1, 2, 2, 1), 2)]:
        check_op(accelerator, OP.SPACE_TO_DEPTH, [In(*t[:1], shape, *t[1:]), i32(b)], [o], rng, what=str(shape))


def test_reshape(accelerator):
    rng = np.random.default_rng(17)
    check_op(accelerator, OP.RESHAPE, [In(F32, (2, 3, 4)), Const(I32T, [4, -1])], [Out(F32)], rng)
    check_op(accelerator, OP.RESHAPE, [In(Q8A, (6, 5), 0.5, 3), Const(I32T, [3, 10])], [Out(Q8A, 0.5, 3)], rng)
