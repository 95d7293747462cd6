"""EQUAL … LESS_EQUAL on each accelerator device vs the reference: every input type, broadcasting,
quantized inputs with different quantizations, NaN and infinities (exact)."""
import numpy as np
import pytest

from .harness import check_op
from .models import OP, OT, In, Out

B8, F16, F32 = OT.TENSOR_BOOL8, OT.TENSOR_FLOAT16, OT.TENSOR_FLOAT32
TYPES = [F32, F16, OT.TENSOR_INT32, OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED, B8]
COMPARISONS = [OP.EQUAL, OP.NOT_EQUAL, OP.GREATER, OP.GREATER_EQUAL, OP.LESS, OP.LESS_EQUAL]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)), ((1,), (4, 3, 2, 5)), ((3, 1, 7, 1), (1, 5, 1, 3))]


def _quant(t, k):
    """Different (scale, zero point) per side, chosen so that some real values coincide."""
    if t == OT.TENSOR_QUANT8_ASYMM:
        return ((0.5, 128), (1.0, 120))[k]
    if t == OT.TENSOR_QUANT8_ASYMM_SIGNED:
        return ((0.25, -3), (0.5, 0))[k]
    return (0.0, 0)


def _data(t, shape, rng):
    """Small value sets so that equal pairs occur."""
    if t in (F32, F16):
        return rng.choice(np.array([-1.5, 0.0, -0.0, 2.0, 7.25], np.float32), shape).astype(
            np.float16 if t == F16 else np.float32)
    if t == B8:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if t == OT.TENSOR_INT32:
        return rng.integers(-3, 3, shape).astype(np.int32)
    lo = -128 if t == OT.TENSOR_QUANT8_ASYMM_SIGNED else 0
    return rng.integers(lo, lo + 256, shape).astype(np.uint8 if lo == 0 else np.int8)


def _check(accelerator, op, t, shapes, rng):
    for sa, sb in shapes:
        a, b = In(t, sa, *_quant(t, 0)), In(t, sb, *_quant(t, 1))
        data = [_data(t, sa, rng), _data(t, sb, rng)]
        check_op(accelerator, op, [a, b], [Out(B8)], data=data, what=f"{t.name} {sa} {sb}")


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.name)
def test_comparison(accelerator, op, t):
    _check(accelerator, op, t, [SHAPES[0], SHAPES[-1]], np.random.default_rng(3))


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.name)
def test_comparison_broadcast_shapes(accelerator, t):
    _check(accelerator, OP.GREATER_EQUAL, t, SHAPES[1:-1], np.random.default_rng(4))


@pytest.mark.parametrize("t", [F32, F16], ids=lambda t: t.name)
def test_comparison_special_values(accelerator, t):
    dtype = np.float16 if t == F16 else np.float32
    x = np.array([np.nan, np.inf, -np.inf, 0.0, np.nan, 1.0], dtype)
    y = np.array([np.nan, np.inf, 5.0, -0.0, 1.0, np.nan], dtype)
    for op in COMPARISONS:
        (out,), _ = check_op(accelerator, op, [In(t, (6,)), In(t, (6,))], [Out(B8)], data=[x, y], what="nan/inf")
        np.testing.assert_array_equal(out, {OP.EQUAL: x == y, OP.NOT_EQUAL: x != y, OP.GREATER: x > y,
                                            OP.GREATER_EQUAL: x >= y, OP.LESS: x < y, OP.LESS_EQUAL: x <= y}[op])
