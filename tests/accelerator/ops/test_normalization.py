"""L2_NORMALIZATION (float32; quant8 within ±1) and LOCAL_RESPONSE_NORMALIZATION on each accelerator
device vs the reference, default and explicit axes."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, Q8A, In, Out, f32, i32


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 9), None), ((3, 5), 0), ((2, 6, 3), 1)])
def test_l2_normalization(accelerator, shape, axis):
    rng = np.random.default_rng(19)
    extra = [] if axis is None else [i32(axis)]
    check_op(accelerator, OP.L2_NORMALIZATION, [In(F32, shape), *extra], [Out(F32)], rng)
    check_op(accelerator, OP.L2_NORMALIZATION, [In(Q8A, shape, 0.1, 120), *extra], [Out(Q8A, 1 / 128, 128)], rng,
             quant_tol=1)


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 9), None), ((2, 7, 3), 1)])
def test_lrn(accelerator, shape, axis):
    rng = np.random.default_rng(20)
    extra = [] if axis is None else [i32(axis)]
    for radius, bias, alpha, beta in [(2, 1.0, 0.5, 0.75), (0, 0.5, 1.0, 0.5), (20, 2.0, 0.1, 1.3)]:
        check_op(accelerator, OP.LOCAL_RESPONSE_NORMALIZATION,
                 [In(F32, shape), i32(radius), f32(bias), f32(alpha), f32(beta), *extra], [Out(F32)], rng)
