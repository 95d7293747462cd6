"""RESIZE_BILINEAR on each accelerator device vs the reference: up/down scaling, align_corners,
half_pixel_centers.  Quant8 results match exactly in these cases (tolerance ±1 allowed by the spec)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, OT, Q8A, In, Out, Scalar, i32


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("flags", [(), (False, False), (True, False), (False, True)])
def test_resize_bilinear(accelerator, quant, flags):
    rng = np.random.default_rng(18)
    extra = [Scalar(OT.BOOL, False), *[Scalar(OT.BOOL, f) for f in flags]] if flags else []
    for shape, (ow, oh) in [((1, 3, 4, 2), (7, 5)), ((2, 8, 7, 3), (3, 4)), ((1, 2, 2, 1), (3, 3))]:
        x = In(Q8A, shape, 0.1, 3) if quant else In(F32, shape)
        o = Out(Q8A, 0.1, 3) if quant else Out(F32)
        check_op(accelerator, OP.RESIZE_BILINEAR, [x, i32(ow), i32(oh), *extra], [o], rng, quant_tol=1,
                 what=f"{shape} {flags}")
