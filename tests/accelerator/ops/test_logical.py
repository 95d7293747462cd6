"""LOGICAL_AND / LOGICAL_OR (broadcasting), LOGICAL_NOT and SELECT on each accelerator device vs the
reference, exact: SELECT for every type, quantized x and y requantized to the output."""
import numpy as np
import pytest

from .harness import check_op
from .models import OP, OT, In, Out

B8 = OT.TENSOR_BOOL8
Q8A, Q8AS = OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)), ((1,), (4, 3, 2, 5))]


@pytest.mark.parametrize("op", [OP.LOGICAL_AND, OP.LOGICAL_OR])
@pytest.mark.parametrize("shapes", SHAPES)
def test_logical_binary(accelerator, op, shapes):
    sa, sb = shapes
    check_op(accelerator, op, [In(B8, sa), In(B8, sb)], [Out(B8)], rng=np.random.default_rng(5))


def test_logical_not(accelerator):
    check_op(accelerator, OP.LOGICAL_NOT, [In(B8, (3, 1, 4, 5))], [Out(B8)], rng=np.random.default_rng(6))


#: (x quantization, y quantization, output quantization) per quantized type: one side equal to the
#: output's (a plain copy), one rescaled with saturation
SELECT_QUANT = {Q8A: ((0.5, 128), (0.125, 3), (0.25, 100)), Q8AS: ((1.0, -10), (0.25, 0), (1.0, -10))}


@pytest.mark.parametrize("t", [OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_INT32, Q8A, Q8AS],
                         ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(7,), (2, 3, 5), (2, 1, 3, 2, 2)])
def test_select(accelerator, t, shape):
    qx, qy, qo = SELECT_QUANT.get(t, ((0.0, 0),) * 3)
    check_op(accelerator, OP.SELECT, [In(B8, shape), In(t, shape, *qx), In(t, shape, *qy)], [Out(t, *qo)],
             rng=np.random.default_rng(8), what=f"{t.name} {shape}")
