"""ADD / MUL on the OpenCL device vs the reference: float32 (CTS tolerance) and quant8_asymm (exact)."""
import numpy as np
import pytest

from .harness import F32, OP, Q8A, In, Out, check_op, i32, requires_opencl

pytestmark = requires_opencl

SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)), ((1,), (4, 3, 2, 5)), ((3, 1, 7, 1), (1, 5, 1, 3))]


@pytest.mark.parametrize("op", [OP.ADD, OP.MUL])
@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary(op, quant, shapes):
    rng = np.random.default_rng(7)
    sa, sb = shapes
    for act in range(4):
        if quant:
            a, b, o = In(Q8A, sa, 0.05, 120), In(Q8A, sb, 0.07, 3), Out(Q8A, 0.09 if op == OP.ADD else 0.5, 100)
        else:
            a, b, o = In(F32, sa), In(F32, sb), Out(F32)
        check_op(op, [a, b, i32(act)], [o], rng, what=f"{sa} {sb} act={act}")   # quant: exact
