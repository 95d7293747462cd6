"""BATCH_MATMUL on the reference device: hand-worked products (the AOSP spec's examples), adjoints,
int32 wrap-around, quant8 signed requantization (independent oracle in nnref.py), invalid shapes."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import DriverError, ErrorStatus, OperationType as OP

from .nnref import F16, F32, I32, Q8AS, T, assert_exact, assert_float, f32, mbqm, q_multiplier, run

X = [[1, 2, 3], [4, 5, 6]]
Y = [[7, 8, 9, 10], [11, 12, 13, 14], [15, 16, 17, 18]]
#: X·Y worked by hand: row 1 = [1·7+2·11+3·15, …] = [74, 80, 86, 92]; row 2 = [173, 188, 203, 218]
XY = [[74, 80, 86, 92], [173, 188, 203, 218]]


@pytest.mark.parametrize("t", [F32, F16, I32])
def test_product_hand(t):
    out = run(OP.BATCH_MATMUL, [T(t, [X]), T(t, [Y]), False, False], t, (1, 2, 4))
    assert_float(out, [XY], f16=t == F16) if t != I32 else assert_exact(out, XY)


def test_adjoints_transpose_the_last_two_dimensions():
    xt, yt = np.transpose(X), np.transpose(Y)
    out = run(OP.BATCH_MATMUL, [T(F32, [xt, xt]), T(F32, [yt, yt]), True, True], F32, (2, 2, 4))
    assert_float(out, [XY, XY])


def test_int32_wraps():
    # (2^16)·(2^16) = 2^32 ≡ 0 and 2^16·2^16 + 5·1 ≡ 5 in int32
    out = run(OP.BATCH_MATMUL, [T(I32, [[65536, 5]]), T(I32, [[65536], [1]]), False, False], I32, (1, 1))
    assert_exact(out, [5])


def test_quant8_signed_requantization():
    # the AOSP spec's quantization: X (0.25, 0), Y (0.5, -64), out (1.0, -128)
    xq = np.round(np.asarray(X) / 0.25).astype(int)
    yq = np.round(np.asarray(Y) / 0.5).astype(int) - 64
    out = run(OP.BATCH_MATMUL, [T(Q8AS, xq, 0.25, 0), T(Q8AS, yq, 0.5, -64), False, False], Q8AS, (2, 4), 1.0, -128)
    m, e = q_multiplier(f32(np.float32(0.25) * np.float32(0.5)) / 1.0)
    expected = [[max(-128, min(127, mbqm(sum(int(xq[i, k]) * (int(yq[k, j]) + 64) for k in range(3)), m, e) - 128))
                 for j in range(4)] for i in range(2)]
    assert_exact(out, expected)
    assert_exact(out, np.clip(np.asarray(XY) - 128, -128, 127))  # exact products, scale 1


@pytest.mark.parametrize("x, y", [([[1, 2]], [[1, 2]]),            # contraction 2 vs 1
                                  ([[[1.0]]], [[1.0]])])           # ranks differ
def test_invalid_shapes_are_rejected(x, y):
    with pytest.raises(DriverError) as err:
        run(OP.BATCH_MATMUL, [T(F32, x, const=True), T(F32, y, const=True), False, False], F32, (1, 1))
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
