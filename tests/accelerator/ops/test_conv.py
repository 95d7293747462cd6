"""CONV_2D and DEPTHWISE_CONV_2D on each accelerator device vs the reference: odd sizes, batch > 1,
strides, dilation, explicit and implicit (SAME/VALID) padding, every fused activation, zero points.
Quant8: exact.  NCHW layout is refused."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, Scalar, i32, single_op

# (n, h, w, ci, co_or_multiplier, kh, kw, stride, dilation, padding, act); padding = 4-tuple or code
CASES = [
    (1, 5, 6, 3, 5, 3, 3, 1, 1, (1, 1, 1, 1), 0),
    (2, 7, 5, 4, 9, 2, 3, 2, 1, (0, 1, 1, 0), 1),
    (1, 8, 8, 5, 33, 1, 1, 1, 1, (0, 0, 0, 0), 3),      # 1x1: GEMM path, 33 channels = partial tile
    (2, 9, 9, 3, 4, 3, 3, 1, 2, (2, 2, 1, 1), 2),      # dilation
    (3, 6, 7, 2, 6, 3, 2, 2, 1, 1, 0),                 # SAME
    (1, 10, 9, 6, 7, 5, 3, 3, 1, 2, 3),                # VALID
]


def _spatial(padding, s, act, d):
    pad = [i32(v) for v in padding] if isinstance(padding, tuple) else [i32(padding)]
    return pad, [i32(s), i32(s)], [i32(act), Scalar(OT.BOOL, False), i32(d), i32(d)]


def _weights(rng, quant, shape):
    if quant:
        return Const(Q8A, rng.integers(0, 256, shape), 0.03, 120)
    return Const(F32, rng.uniform(-1, 1, shape))


def _bias(rng, quant, n):
    return Const(I32T, rng.integers(-800, 800, (n,)), 0.5 * 0.03) if quant else Const(F32, rng.uniform(-1, 1, (n,)))


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_conv2d(accelerator, quant, case):
    rng = np.random.default_rng(11)
    n, h, w, ci, co, kh, kw, s, d, padding, act = case
    x = In(Q8A, (n, h, w, ci), 0.5, 127) if quant else In(F32, (n, h, w, ci))
    pad, strides, tail = _spatial(padding, s, act, d)
    out = Out(Q8A, 0.7, 100) if quant else Out(F32)
    check_op(accelerator, OP.CONV_2D,
             [x, _weights(rng, quant, (co, kh, kw, ci)), _bias(rng, quant, co), *pad, *strides, *tail],
             [out], rng, what=str(case))


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_depthwise(accelerator, quant, case):
    rng = np.random.default_rng(12)
    n, h, w, ci, mult, kh, kw, s, d, padding, act = case
    mult = 1 + mult % 3
    x = In(Q8A, (n, h, w, ci), 0.5, 127) if quant else In(F32, (n, h, w, ci))
    pad, strides, tail = _spatial(padding, s, act, d)
    out = Out(Q8A, 0.7, 100) if quant else Out(F32)
    check_op(accelerator, OP.DEPTHWISE_CONV_2D,
             [x, _weights(rng, quant, (1, kh, kw, ci * mult)), _bias(rng, quant, ci * mult),
              *pad, *strides, i32(mult), *tail], [out], rng, what=str(case))


def test_nchw_refused(accelerator):
    x = In(F32, (1, 3, 5, 5))
    args = [x, Const(F32, np.ones((2, 3, 3, 3))), Const(F32, np.zeros(2)), i32(1), i32(1), i32(1), i32(0),
            Scalar(OT.BOOL, True)]
    model, _ = single_op(OP.CONV_2D, args, [Out(F32)])
    assert accelerator.get_supported_operations(model) == [False]
