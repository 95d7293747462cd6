"""REDUCE_*, MEAN, ARGMAX, ARGMIN, TOPK_V2 on each accelerator device vs the reference: every type, several
axis lists (negative, repeated, all axes, keep_dims), ties, NaN and infinities.  The kernels fold in the
reference's order, so every result is compared exactly."""
import numpy as np
import pytest

from .harness import check_op
from .models import OP, OT, Const, In, Out, Scalar, i32

F32, F16, I32 = OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_INT32
Q8A, Q8AS, B8 = OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_BOOL8
QUANT = {Q8A: (0.5, 120), Q8AS: (0.25, -7)}
SHAPE = (2, 3, 4, 5)


def _reduce(accelerator, op, t, axes, keep, shape=SHAPE, data=None, what=""):
    scale, zp = QUANT.get(t, (0.0, 0))
    keep_arg = i32(int(keep)) if op == OP.MEAN else Scalar(OT.BOOL, bool(keep))
    args = [In(t, shape, scale, zp), Const(I32, np.array(axes, np.int32)), keep_arg]
    return check_op(accelerator, op, args, [Out(t, scale, zp)], rng=np.random.default_rng(7), atol=0, rtol=0,
                    data=data, what=f"{t.name} axes {axes} keep {keep} {what}")


@pytest.mark.parametrize("op", [OP.REDUCE_SUM, OP.REDUCE_PROD, OP.REDUCE_MAX, OP.REDUCE_MIN, OP.MEAN])
@pytest.mark.parametrize("t", [F32, F16], ids=lambda t: t.name)
def test_reduce_float(accelerator, op, t):
    _reduce(accelerator, op, t, [1, -1], False)


@pytest.mark.parametrize("axes,keep", [([0], True), ([2, 2, -4], False), ([3, 0, 1, 2], False), ([0, 1, 2, 3], True)])
def test_reduce_axis_lists(accelerator, axes, keep):
    _reduce(accelerator, OP.REDUCE_SUM, F32, axes, keep)


@pytest.mark.parametrize("op", [OP.REDUCE_MAX, OP.REDUCE_MIN, OP.MEAN])
@pytest.mark.parametrize("t", [Q8A, Q8AS], ids=lambda t: t.name)
def test_reduce_quant8(accelerator, op, t):
    _reduce(accelerator, op, t, [0, 2], True)


@pytest.mark.parametrize("op", [OP.REDUCE_ALL, OP.REDUCE_ANY])
def test_reduce_bool(accelerator, op):
    rng = np.random.default_rng(3)
    data = [rng.random(SHAPE) < (0.9 if op == OP.REDUCE_ALL else 0.1)]
    _reduce(accelerator, op, B8, [-1, 1], False, data=data)


@pytest.mark.parametrize("op", [OP.REDUCE_SUM, OP.REDUCE_PROD, OP.REDUCE_MAX, OP.REDUCE_MIN])
def test_reduce_special_values(accelerator, op):
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 0.0, 3.0], [np.nan, np.nan, np.nan], [-np.inf, -np.inf, -np.inf],
                  [0.0, np.nan, np.inf], [1e-30, 1e-30, np.inf]], np.float32)
    _reduce(accelerator, op, F32, [1], False, shape=x.shape, data=[x], what="nan/inf")


def _small_values(t, shape, rng):
    """Few distinct values, so ties occur."""
    v = rng.integers(-3, 3, shape)
    if t == Q8A:
        v = v + 128
    return v.astype({F32: np.float32, F16: np.float16, I32: np.int32, Q8A: np.uint8, Q8AS: np.int8}[t])


@pytest.mark.parametrize("op", [OP.ARGMAX, OP.ARGMIN])
@pytest.mark.parametrize("t", [F32, F16, I32, Q8A, Q8AS], ids=lambda t: t.name)
def test_argmax_argmin(accelerator, op, t):
    scale, zp = QUANT.get(t, (0.0, 0))
    rng = np.random.default_rng(5)
    for shape, axis in (((3, 7, 4), 1), ((6,), -1)):
        data = [_small_values(t, shape, rng)]
        check_op(accelerator, op, [In(t, shape, scale, zp), i32(axis)], [Out(I32)], data=data,
                 what=f"{t.name} {shape} axis {axis}")


@pytest.mark.parametrize("op", [OP.ARGMAX, OP.ARGMIN])
def test_argmax_argmin_special_values(accelerator, op):
    x = np.array([[np.nan, 5.0, 1.0], [1.0, np.nan, 5.0], [np.nan, np.nan, np.nan], [-np.inf, np.inf, 0.0]],
                 np.float32)
    check_op(accelerator, op, [In(F32, x.shape), i32(1)], [Out(I32)], data=[x], what="nan/inf")


@pytest.mark.parametrize("t", [F32, F16, I32, Q8A, Q8AS], ids=lambda t: t.name)
def test_topk(accelerator, t):
    scale, zp = QUANT.get(t, (0.0, 0))
    shape = (3, 2, 9)
    data = [_small_values(t, shape, np.random.default_rng(9))]
    check_op(accelerator, OP.TOPK_V2, [In(t, shape, scale, zp), i32(4)], [Out(t, scale, zp), Out(I32)], data=data,
             what=t.name)


def test_topk_special_values(accelerator):
    x = np.array([[1.0, np.nan, np.inf, np.nan, -np.inf, 0.0, -0.0]], np.float32)
    (values, indices), _ = check_op(accelerator, OP.TOPK_V2, [In(F32, x.shape), i32(7)], [Out(F32), Out(I32)],
                                    data=[x], what="nan/inf")
    np.testing.assert_array_equal(indices, [[3, 1, 2, 0, 6, 5, 4]])


@pytest.mark.slow
@pytest.mark.parametrize("op", [OP.REDUCE_SUM, OP.REDUCE_PROD, OP.REDUCE_MAX, OP.REDUCE_MIN, OP.MEAN])
@pytest.mark.parametrize("t", [F32, F16, Q8A, Q8AS], ids=lambda t: t.name)
def test_reduce_every_axis_subset(accelerator, op, t):
    if t in QUANT and op in (OP.REDUCE_SUM, OP.REDUCE_PROD):
        pytest.skip("float-only reduction")
    for mask in range(1, 16):
        axes = [a for a in range(4) if mask >> a & 1]
        _reduce(accelerator, op, t, axes, mask % 2 == 0, shape=(3, 2, 5, 4))


@pytest.mark.parametrize("t, keep", [(OT.TENSOR_FLOAT32, True), (OT.TENSOR_FLOAT32, False),
                                     (OT.TENSOR_FLOAT16, False)])
def test_mean_over_the_pixels_of_a_large_image_in_row_chunks(accelerator, t, keep):
    # MEAN over axes 1 and 2 of an NHWC image large enough to be summed in row chunks (the global
    # average pool's pooling_global.cl), against float64 numpy; an infinity stays unclamped
    import gpu_driver as gd
    from gpu_driver.compiler.pipeline import lower, prepare_graph
    rng = np.random.default_rng(29)
    x = rng.uniform(-4, 4, (2, 72, 128, 16)).astype(np.float16 if t == OT.TENSOR_FLOAT16 else np.float32)
    x[1, 5, 6, 7] = np.inf
    b = gd.ModelBuilder()
    i = b.add_input(t, list(x.shape))
    o = b.add_operand(t, [2, 1, 1, 16] if keep else [2, 16])
    b.add_operation(OP.MEAN, [i, b.add_constant(OT.TENSOR_INT32, [2], np.array([1, 2], np.int32)),
                              b.add_scalar(OT.INT32, int(keep))], [o])
    b.set_outputs([o])
    model = b.finish()
    assert [k.template for k in lower(prepare_graph(model)).kernels] == ["pooling_global.cl"] * 2
    got = accelerator.prepare_model(model).execute([x])[0]
    want = x.astype(np.float64).mean(axis=(1, 2), keepdims=keep)
    assert np.isposinf(got.reshape(2, 16)[1, 7])
    tol = dict(rtol=2e-3, atol=2e-3) if t == OT.TENSOR_FLOAT16 else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want, **tol)
