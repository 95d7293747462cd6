"""AVERAGE/MAX/L2 pools on each accelerator device vs the reference: explicit and implicit padding,
strides, fused activations, both layouts, float32, float16 and quant8 asymm / signed (quant8 exact)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, OT, Q8A, In, Out, Scalar, i32

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED
# (n, h, w, c, kh, kw, stride, padding (code or 4-tuple), act)
CASES = [(1, 5, 6, 3, 3, 3, 1, 1, 0), (2, 7, 5, 9, 2, 3, 2, (0, 1, 1, 0), 1), (1, 9, 8, 4, 3, 2, 2, 2, 3),
         (3, 4, 4, 5, 4, 4, 1, 1, 2), (1, 6, 7, 17, 2, 2, 2, (1, 1, 1, 1), 0),
         # a global pool (one output cell: on a GPU one channel per work item, on PoCL every channel
         # in one) and a pool with enough output cells to keep 16 channels per work item
         (1, 12, 10, 32, 12, 10, 1, 2, 0), (1, 20, 20, 16, 2, 2, 1, 2, 1)]
QUANT = {Q8A: (0.05, 120), Q8AS: (0.05, -7)}


# L2_POOL_2D has no quantized types
@pytest.mark.parametrize("op,type,nchw", [
    (op, t, nchw) for op in (OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D, OP.L2_POOL_2D) for t in (F32, F16, Q8A, Q8AS)
    for nchw in (False, True) if not (t in QUANT and op == OP.L2_POOL_2D)])
def test_pool(accelerator, op, type, nchw):
    rng = np.random.default_rng(13)
    for n, h, w, c, kh, kw, s, padding, act in CASES:
        pad = [i32(v) for v in padding] if isinstance(padding, tuple) else [i32(padding)]
        q = QUANT.get(type, (0.0, 0))
        x = In(type, (n, c, h, w) if nchw else (n, h, w, c), *q)
        tol = dict(atol=2e-3, rtol=2e-3) if type == F16 else {}
        check_op(accelerator, op, [x, *pad, i32(s), i32(s), i32(kw), i32(kh), i32(act), Scalar(OT.BOOL, nchw)],
                 [Out(type, *q)], rng, what=str((n, h, w, c, kh, kw, s, padding, act)), **tol)


def test_signed_average_rounds_half_away_hand_worked(accelerator):
    # a 1x2 window over stored int8 values: (-3 + -4) / 2 = -3.5 -> -4, (3 + 4) / 2 -> 4, (-1 + 2) / 2 -> 1;
    # NCHW with one channel, so the layouts coincide except for the layout flag itself
    x = np.array([-3, -4, 3, 4, -1, 2], np.int8).reshape(1, 1, 1, 6)
    args = [In(Q8AS, x.shape, 0.5, 0), i32(0), i32(0), i32(0), i32(0), i32(2), i32(1), i32(2), i32(1), i32(0),
            Scalar(OT.BOOL, True)]
    act, _ = check_op(accelerator, OP.AVERAGE_POOL_2D, args, [Out(Q8AS, 0.5, 0)], data=[x])
    np.testing.assert_array_equal(act[0].ravel(), [-4, 4, 1])


def test_global_pool_split_for_a_gpu(accelerator, monkeypatch):
    # the GPU choice (a launch of few work items split down to one channel per work item) run on
    # whichever device this is, against the reference
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    for backend in (accelerator.backend, getattr(accelerator.backend, "inline", None)):
        if backend is not None:
            monkeypatch.setattr(backend.tuning, "min_work_items", 256)
    rng = np.random.default_rng(17)
    for op in (OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D):
        x = In(F32, (1, 9, 7, 32))
        check_op(accelerator, op, [x, i32(2), i32(1), i32(1), i32(7), i32(9), i32(0)], [Out(F32)], rng)
