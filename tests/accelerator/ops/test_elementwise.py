"""ADD / MUL on each accelerator device vs the reference: float32 (CTS tolerance), quant8_asymm (exact);
TENSOR_INT32 wraps around."""
import numpy as np
import pytest

from .harness import check_op, run_model
from .models import F32, I32T, OP, Q8A, In, Out, i32, single_op

SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)), ((1,), (4, 3, 2, 5)), ((3, 1, 7, 1), (1, 5, 1, 3))]


@pytest.mark.parametrize("op", [OP.ADD, OP.MUL])
@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary(accelerator, op, quant, shapes):
    rng = np.random.default_rng(7)
    sa, sb = shapes
    for act in range(4):
        if quant:
            a, b, o = In(Q8A, sa, 0.05, 120), In(Q8A, sb, 0.07, 3), Out(Q8A, 0.09 if op == OP.ADD else 0.5, 100)
        else:
            a, b, o = In(F32, sa), In(F32, sb), Out(F32)
        check_op(accelerator, op, [a, b, i32(act)], [o], rng, what=f"{sa} {sb} act={act}")   # quant: exact


@pytest.mark.parametrize("op", [OP.ADD, OP.MUL])
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_int32_wraps(accelerator, op, shapes):
    """TENSOR_INT32 ADD/MUL (HAL 1.3): two's-complement wrap-around, computed here with Python ints."""
    rng = np.random.default_rng(11)
    sa, sb = shapes
    model, _ = single_op(op, [In(I32T, sa), In(I32T, sb), i32(0)], [Out(I32T)])
    assert accelerator.get_supported_operations(model) == [True]
    x = rng.integers(-2**31, 2**31, sa, dtype=np.int64).astype(np.int32)
    y = rng.integers(-2**31, 2**31, sb, dtype=np.int64).astype(np.int32)
    exact = (x.astype(object) + y.astype(object)) if op == OP.ADD else (x.astype(object) * y.astype(object))
    wrapped = np.vectorize(lambda v: (v + 2**31) % 2**32 - 2**31)(exact).astype(np.int32)
    (out,) = run_model(accelerator, model, [x, y])
    np.testing.assert_array_equal(out, wrapped)
