"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on each accelerator device vs the reference: up/down
scaling, by size and by scale, align_corners, half_pixel_centers, NHWC and NCHW, every type.
Nearest neighbour copies elements: exact.  Bilinear quant8 results match exactly in these cases
(tolerance ±1 allowed by the spec)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, OP, OT, Q8A, In, Out, Scalar, i32

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED
SHAPES = [((1, 3, 4, 2), (7, 5)), ((2, 8, 7, 3), (3, 4)), ((1, 2, 2, 1), (3, 3))]


def _image(shape, nchw):
    n, h, w, c = shape
    return (n, c, h, w) if nchw else shape


def _spec(t, shape):
    """Input and output specs of type ``t`` (quantized: scale 0.1, zero point 3)."""
    q = (0.1, 3) if t in (Q8A, Q8AS) else ()
    return In(t, shape, *q), Out(t, *q)


FLAGS = [(), (False, False), (True, False), (False, True)]   # after the layout: align_corners, half_pixel_centers


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("flags", FLAGS)
def test_resize_bilinear(accelerator, quant, flags):
    rng = np.random.default_rng(18)
    extra = [Scalar(OT.BOOL, False), *[Scalar(OT.BOOL, f) for f in flags]] if flags else []
    shape, (ow, oh) = SHAPES[(FLAGS.index(flags) + quant) % len(SHAPES)]
    x, o = _spec(Q8A if quant else F32, shape)
    check_op(accelerator, OP.RESIZE_BILINEAR, [x, i32(ow), i32(oh), *extra], [o], rng, quant_tol=1,
             what=f"{shape} {flags}")


@pytest.mark.parametrize("t", [F16, Q8AS])
def test_resize_bilinear_nchw_types(accelerator, t):
    rng = np.random.default_rng(19)
    shape, (ow, oh) = SHAPES[0]
    x, o = _spec(t, _image(shape, True))
    tol = dict(atol=1e-2, rtol=1e-2) if t == F16 else {}
    check_op(accelerator, OP.RESIZE_BILINEAR, [x, i32(ow), i32(oh), Scalar(OT.BOOL, True), Scalar(OT.BOOL, False),
                                               Scalar(OT.BOOL, True)], [o], rng, quant_tol=1, **tol)


@pytest.mark.parametrize("t,nchw,flags,shape", [
    (F32, False, (), 0), (F32, True, (True, False), 1), (F32, False, (False, True), 2),
    (F16, True, (False, True), 0), (F16, False, (True, False), 1),
    (Q8A, False, (), 1), (Q8A, True, (False, True), 2),
    (Q8AS, True, (), 0), (Q8AS, False, (True, False), 2)])
def test_resize_nearest_neighbor(accelerator, t, nchw, flags, shape):
    rng = np.random.default_rng(20)
    shape, (ow, oh) = SHAPES[shape]
    x, o = _spec(t, _image(shape, nchw))
    check_op(accelerator, OP.RESIZE_NEAREST_NEIGHBOR,
             [x, i32(ow), i32(oh), Scalar(OT.BOOL, nchw), *[Scalar(OT.BOOL, f) for f in flags]], [o], rng,
             what=f"{shape} {flags}")


@pytest.mark.parametrize("t", [F32, F16])
def test_resize_nearest_neighbor_by_scale(accelerator, t):
    rng = np.random.default_rng(21)
    x, o = _spec(t, (1, 5, 3, 2))
    scale = OT.FLOAT16 if t == F16 else OT.FLOAT32
    check_op(accelerator, OP.RESIZE_NEAREST_NEIGHBOR,
             [x, Scalar(scale, 1.7), Scalar(scale, 0.6), Scalar(OT.BOOL, False)], [o], rng)
