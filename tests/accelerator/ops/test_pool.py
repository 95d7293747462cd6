"""AVERAGE/MAX/L2 pools on each accelerator device vs the reference: explicit and implicit padding,
strides, fused activations (quant8 exact)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, Q8A, In, Out, i32

# (n, h, w, c, kh, kw, stride, padding (code or 4-tuple), act)
CASES = [(1, 5, 6, 3, 3, 3, 1, 1, 0), (2, 7, 5, 9, 2, 3, 2, (0, 1, 1, 0), 1), (1, 9, 8, 4, 3, 2, 2, 2, 3),
         (3, 4, 4, 5, 4, 4, 1, 1, 2), (1, 6, 7, 17, 2, 2, 2, (1, 1, 1, 1), 0)]


# L2_POOL_2D has no quantized types, so it pairs with float32 only
@pytest.mark.parametrize("op,quant", [(op, q) for op in (OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D, OP.L2_POOL_2D)
                                      for q in (False, True) if not (q and op == OP.L2_POOL_2D)])
def test_pool(accelerator, op, quant):
    rng = np.random.default_rng(13)
    for n, h, w, c, kh, kw, s, padding, act in CASES:
        pad = [i32(v) for v in padding] if isinstance(padding, tuple) else [i32(padding)]
        x = In(Q8A, (n, h, w, c), 0.05, 120) if quant else In(F32, (n, h, w, c))
        out = Out(Q8A, 0.05, 120) if quant else Out(F32)
        check_op(accelerator, op, [x, *pad, i32(s), i32(s), i32(kw), i32(kh), i32(act)], [out], rng,
                 what=str((n, h, w, c, kh, kw, s, padding, act)))
