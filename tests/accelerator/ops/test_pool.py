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


def _kernel_templates(model):
    from gpu_driver.compiler.pipeline import lower, prepare_graph
    return [k.template for k in lower(prepare_graph(model)).kernels]


# (n, h, w, c): 16-channel blocks, 4-channel blocks over 37 rows in unequal chunks, one channel per block
WHOLE_IMAGES = [(2, 64, 48, 16), (1, 37, 120, 12), (1, 130, 300, 1)]


@pytest.mark.parametrize("op, type, act", [(OP.AVERAGE_POOL_2D, F32, 0), (OP.MAX_POOL_2D, F32, 3),
                                           (OP.L2_POOL_2D, F32, 1), (OP.AVERAGE_POOL_2D, F16, 0),
                                           (OP.MAX_POOL_2D, F16, 0)])
def test_whole_image_pool_in_row_chunks(accelerator, op, type, act):
    # a float window over the whole image, large enough to be summed in row chunks (pooling_global.cl),
    # against float64 numpy; a NaN cell is in the average (NaN) and never wins the max
    import gpu_driver as gd
    rng = np.random.default_rng(23)
    for n, h, w, c in WHOLE_IMAGES:
        x = rng.uniform(-4, 4, (n, h, w, c)).astype(np.float16 if type == F16 else np.float32)
        x[0, h // 2, 3, 0] = np.nan
        b = gd.ModelBuilder()
        i = b.add_input(type, [n, h, w, c])
        o = b.add_operand(type, [n, 1, 1, c])
        b.add_operation(op, [i, *(b.add_scalar(OT.INT32, v) for v in (0, 0, 0, 0, 1, 1, w, h, act))], [o])
        b.set_outputs([o])
        model = b.finish()
        assert _kernel_templates(model) == ["pooling_global.cl"] * 2
        got = accelerator.prepare_model(model).execute([x])[0].astype(np.float64)
        v = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            if op == OP.AVERAGE_POOL_2D:
                want = v.mean(axis=(1, 2), keepdims=True)
            elif op == OP.L2_POOL_2D:
                want = np.sqrt((v * v).mean(axis=(1, 2), keepdims=True))
            else:
                want = np.nanmax(v, axis=(1, 2), keepdims=True)
        want = np.clip(want, *{0: (-np.inf, np.inf), 1: (0, np.inf), 3: (0, 6)}[act])
        assert np.isnan(got[0, 0, 0, 0]) == (op != OP.MAX_POOL_2D)
        tol = dict(rtol=2e-3, atol=2e-3) if type == F16 else dict(rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("h, w, c", [(12, 10, 32), (7, 7, 1280)])
def test_whole_image_pools_that_stay_one_pass(h, w, c):
    # a small image; an image with 80 channel blocks of 16 to spread (MobileNet v2's last pool)
    import gpu_driver as gd
    b = gd.ModelBuilder()
    i = b.add_input(F32, [1, h, w, c])
    o = b.add_operand(F32, [1, 1, 1, c])
    b.add_operation(OP.AVERAGE_POOL_2D, [i, *(b.add_scalar(OT.INT32, v) for v in (0, 0, 0, 0, 1, 1, w, h, 0))], [o])
    b.set_outputs([o])
    assert _kernel_templates(b.finish()) == ["pooling.cl"]
