"""BATCH_MATMUL on every accelerator against the reference: every type, adjoints, ranks 2–4."""
import numpy as np
import pytest

from .harness import check_op
from .models import OP, OT, In, Out, Scalar

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize("t", [OT.TENSOR_FLOAT32, F16, OT.TENSOR_INT32, Q8AS])
@pytest.mark.parametrize("adj_x, adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul(accelerator, t, adj_x, adj_y):
    m, k, n = 3, 5, 4
    xs = (2, k, m) if adj_x else (2, m, k)
    ys = (2, n, k) if adj_y else (2, k, n)
    q = {"scale": 0.25, "zp": 3} if t == Q8AS else {}
    args = [In(t, xs, q.get("scale", 0.0), q.get("zp", 0)), In(t, ys, 0.5 if q else 0.0, -7 if q else 0),
            Scalar(OT.BOOL, adj_x), Scalar(OT.BOOL, adj_y)]
    out = Out(t, 1.5, -2) if q else Out(t)
    check_op(accelerator, OP.BATCH_MATMUL, args, [out], rng=np.random.default_rng(4),
             atol=5 * 2.0 ** -10 if t == F16 else 1e-5, rtol=5 * 2.0 ** -10 if t == F16 else 1e-5,
             what=f"{t.name} adj {adj_x} {adj_y}")


@pytest.mark.parametrize("shape", [(3, 4), (2, 2, 3, 4)])
def test_batch_matmul_ranks(accelerator, shape):
    y = shape[:-2] + (shape[-1], 2)
    check_op(accelerator, OP.BATCH_MATMUL, [In(OT.TENSOR_FLOAT32, shape), In(OT.TENSOR_FLOAT32, y),
                                            Scalar(OT.BOOL, False), Scalar(OT.BOOL, False)], [Out(OT.TENSOR_FLOAT32)])
