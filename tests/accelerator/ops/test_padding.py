"""PAD, PAD_V2 and MIRROR_PAD on each accelerator device vs the reference (exact: element copies and
the pad value's stored bits)."""
import numpy as np
import pytest

from .harness import check_op
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, Scalar, i32

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
QUANT = {Q8A: (0.5, 7), Q8AS: (0.25, -9)}
SHAPE = (2, 3, 4, 5)
PADDINGS = [[0, 1], [2, 0], [0, 0], [1, 3]]


def paddings(values):
    return Const(I32T, np.asarray(values, np.int32))


@pytest.mark.parametrize("ty", [F32, F16, Q8A, Q8AS])
def test_pad(accelerator, ty):
    q = QUANT.get(ty, ())
    check_op(accelerator, OP.PAD, [In(ty, SHAPE, *q), paddings(PADDINGS)], [Out(ty, *q)], what=ty.name)


@pytest.mark.parametrize("ty,value", [(F32, Scalar(OT.FLOAT32, -1.5)), (F16, Scalar(OT.FLOAT16, 0.1)),
                                      (Q8A, i32(300)), (Q8AS, i32(-5))])
def test_pad_v2(accelerator, ty, value):
    q = QUANT.get(ty, ())
    check_op(accelerator, OP.PAD_V2, [In(ty, SHAPE, *q), paddings(PADDINGS), value], [Out(ty, *q)], what=ty.name)


def test_pad_v2_special_values(accelerator):
    """Float data and pad values are copied bit for bit (NaN, infinities, signed zero)."""
    x = np.array([np.inf, -np.inf, np.nan, -0.0], np.float32)
    for value in (np.nan, -np.inf, -0.0):
        check_op(accelerator, OP.PAD_V2, [In(F32, (4,)), paddings([[1, 2]]), Scalar(OT.FLOAT32, value)], [Out(F32)],
                 data=[x], what=str(value))


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("ty", [F32, F16, I32T, Q8A, Q8AS])
def test_mirror_pad(accelerator, ty, mode):
    q = QUANT.get(ty, ())
    pads = [[1, 1], [2, 2 + mode], [0, 0], [3 + mode, 1]]  # up to dim − 1 (reflect) or dim (symmetric)
    check_op(accelerator, OP.MIRROR_PAD, [In(ty, SHAPE, *q), paddings(pads), i32(mode)], [Out(ty, *q)],
             what=f"{ty.name} mode {mode}")


def test_mirror_pad_rank6(accelerator):
    pads = [[0, 1], [1, 0], [0, 0], [1, 1], [0, 0], [2, 1]]
    check_op(accelerator, OP.MIRROR_PAD, [In(F32, (2, 2, 3, 2, 2, 3)), paddings(pads), i32(1)], [Out(F32)])
