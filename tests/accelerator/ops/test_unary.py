"""ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT on each accelerator device vs the reference: float32 (CTS
tolerance) and float16 on random data and on the IEEE special values, int32 ABS/NEG and quantized
RSQRT exactly; every valid instance is supported."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, In, Out

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
FLOAT_OPS = [OP.ABS, OP.EXP, OP.LOG, OP.NEG, OP.RSQRT, OP.SIN, OP.SQRT]
SHAPES = [(3, 5), (1, 2, 3, 2, 2)]
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-30, 88.5, -100.0, 1e30, 3.0e38]
F16_TOL = 5 * 2.0 ** -10


@pytest.mark.parametrize("op", FLOAT_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("t", [F32, F16], ids=["f32", "f16"])
def test_float(accelerator, op, t):
    rng = np.random.default_rng(3)
    tol = dict(atol=F16_TOL, rtol=F16_TOL) if t == F16 else {}
    for shape in SHAPES:
        data = [rng.uniform(-6, 6, shape).astype(np.float16 if t == F16 else np.float32)]
        check_op(accelerator, op, [In(t, shape)], [Out(t)], data=data, what=f"{shape}", **tol)


@pytest.mark.parametrize("op", FLOAT_OPS, ids=lambda o: o.name)
def test_float_special_values(accelerator, op):
    """NaN, ±inf, ±0, negative arguments, overflow: the same answers as the reference."""
    data = np.array(SPECIALS, np.float32)
    check_op(accelerator, op, [In(F32, data.shape)], [Out(F32)], data=[data], what="specials")


@pytest.mark.parametrize("op", [OP.ABS, OP.NEG], ids=lambda o: o.name)
def test_int32_wraps(accelerator, op):
    rng = np.random.default_rng(5)
    x = np.concatenate([[-2 ** 31, 2 ** 31 - 1, 0, -1], rng.integers(-2 ** 31, 2 ** 31, 60)]).astype(np.int32)
    check_op(accelerator, op, [In(I32T, x.shape)], [Out(I32T)], data=[x], what="int32")


@pytest.mark.parametrize("t, in_q, out_q", [(Q8A, (0.125, 10), (0.01, 75)), (Q8A, (0.02, 0), (0.05, 3)),
                                            (Q8AS, (0.25, -100), (0.0625, -128)), (Q8AS, (0.01, 5), (0.3, 20))])
def test_rsqrt_quantized_exact(accelerator, t, in_q, out_q):
    lo = -128 if t == Q8AS else 0
    x = np.arange(lo, lo + 256).astype(np.int8 if t == Q8AS else np.uint8).reshape(4, 64)
    check_op(accelerator, OP.RSQRT, [In(t, x.shape, *in_q)], [Out(t, *out_q)], data=[x], what=f"{in_q} {out_q}")
