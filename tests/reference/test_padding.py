"""PAD, PAD_V2 and MIRROR_PAD on the reference device: hand-worked values, AOSP spec examples, an
explicit index-loop oracle, and invalid instances."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperationType as O, get_device
from gpu_driver.ops.catalog import lookup
from gpu_driver.ops.definition import TensorInfo

from .nnref import F16, F32, I32, Q8A, Q8AS
from .single_op import F16S, F32S, Const, In, Out, build, expect_status, i32, run1

INVALID = ErrorStatus.INVALID_ARGUMENT


def pads_const(paddings) -> Const:
    p = np.asarray(paddings, np.int32).reshape(-1, 2)
    return Const(I32, p, list(p.shape))


def pad(op, x, paddings, ty=F32, scale=0.0, zp=0, extra=()):
    x = np.asarray(x)
    return run1(op, [In(ty, list(x.shape), scale, zp), pads_const(paddings), *extra], Out(ty, [], scale, zp), x)


# ---- PAD / PAD_V2 -------------------------------------------------------------------------------------------

def test_pad_spec_float():
    # pad.mod.py: [1, 2, 2, 1] padded by one row and column on each side with 0.0
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    r = pad(O.PAD, x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    assert r.shape == (1, 4, 4, 1)
    np.testing.assert_array_equal(r.ravel(), [0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("ty,zp", [(Q8A, 7), (Q8AS, -3)])
def test_pad_quantized_fills_the_zero_point(ty, zp):
    # the logical zero of (0.5, zp) is the stored zp
    x = np.array([[1, 2], [3, 4]], np.uint8 if ty == Q8A else np.int8)
    r = pad(O.PAD, x, [[1, 0], [0, 2]], ty, 0.5, zp)
    np.testing.assert_array_equal(r, [[zp, zp, zp, zp], [1, 2, zp, zp], [3, 4, zp, zp]])


def test_pad_float16():
    x = np.array([1.5, -2.25], np.float16)
    r = pad(O.PAD, x, [[2, 1]], F16)
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, [0, 0, 1.5, -2.25, 0])


def test_pad_v2_spec_quant8():
    # pad_v2_1_quant8.mod.py: the INT32 pad value 9 is the stored value
    x = np.arange(1, 7, dtype=np.uint8).reshape(1, 2, 3, 1)
    r = pad(O.PAD_V2, x, [[0, 0], [0, 2], [1, 3], [0, 0]], Q8A, 2.3, 4, [i32(9)])
    assert r.shape == (1, 4, 7, 1)
    np.testing.assert_array_equal(r.ravel(), [9, 1, 2, 3, 9, 9, 9, 9, 4, 5, 6, 9, 9, 9] + [9] * 14)


@pytest.mark.parametrize("ty,value,stored", [(Q8A, 300, 44), (Q8A, -1, 255), (Q8AS, 200, -56), (Q8AS, -5, -5)])
def test_pad_v2_quantized_value_is_truncated(ty, value, stored):
    x = np.array([1, 2], np.uint8 if ty == Q8A else np.int8)
    r = pad(O.PAD_V2, x, [[1, 1]], ty, 1.0, 0, [i32(value)])
    np.testing.assert_array_equal(r, [stored, 1, 2, stored])


def test_pad_v2_float_values():
    x = np.array([[1.0]], np.float32)
    r = pad(O.PAD_V2, x, [[1, 0], [0, 1]], F32, extra=[Const(F32S, -np.inf)])
    np.testing.assert_array_equal(r, [[-np.inf, -np.inf], [1.0, -np.inf]])
    h = pad(O.PAD_V2, np.array([2.0], np.float16), [[0, 2]], F16, extra=[Const(F16S, 0.1)])
    np.testing.assert_array_equal(h, np.array([2.0, 0.1, 0.1], np.float16))


def test_pad_paddings_as_model_input():
    model = build(O.PAD, [In(F32, [2]), In(I32, [1, 2])], [Out(F32, [0])])
    (r,) = get_device("reference").prepare_model(model).execute(
        [np.array([1, 2], np.float32), np.array([[2, 1]], np.int32)])
    np.testing.assert_array_equal(r, [0, 0, 1, 2, 0])


# ---- MIRROR_PAD ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,expected", [(0, [3, 2, 1, 2, 3, 2, 1]), (1, [2, 1, 1, 2, 3, 3, 2])])
def test_mirror_pad_hand(mode, expected):
    # reflect does not repeat the edge, symmetric does
    r = pad(O.MIRROR_PAD, np.array([1, 2, 3], np.float32), [[2, 2]], extra=[i32(mode)])
    np.testing.assert_array_equal(r, expected)


def test_mirror_pad_spec_summary():
    # mirror_pad_tensorflow.mod.py "summary" (SYMMETRIC), int32 variation
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    r = pad(O.MIRROR_PAD, x, [[1, 1], [2, 2]], I32, extra=[i32(1)])
    np.testing.assert_array_equal(r, [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2],
                                      [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]])


def mirror_index(c: int, d: int, reflect: int) -> int:
    """Index-loop oracle: fold a padded coordinate back into [0, d)."""
    if c < 0:
        return -c - 1 + reflect
    if c >= d:
        return 2 * d - 1 - reflect - c
    return c


@pytest.mark.parametrize("mode", [0, 1])
def test_mirror_pad_rank5_against_index_loops(mode):
    rng = np.random.default_rng(mode)
    dims = (2, 1, 3, 2, 4)
    x = rng.integers(-50, 50, dims).astype(np.int8)
    paddings = [(min(int(rng.integers(0, 3)), d - 1 + mode), min(int(rng.integers(0, 3)), d - 1 + mode)) for d in dims]
    r = pad(O.MIRROR_PAD, x, paddings, Q8AS, 0.25, -9, [i32(mode)])
    expected = np.zeros(r.shape, np.int8)
    for out_index in itertools.product(*(range(n) for n in r.shape)):
        src = tuple(mirror_index(o - b, d, 1 - mode) for o, (b, _), d in zip(out_index, paddings, dims))
        expected[out_index] = x[src]
    np.testing.assert_array_equal(r, expected)


# ---- invalid instances --------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,paddings,extra", [
    (O.PAD, [[-1, 0], [0, 0]], []),                       # negative padding
    (O.PAD, [[0, 0]], []),                                # paddings not [rank, 2]
    (O.PAD_V2, [[0, 0], [0, 0], [0, 0]], [Const(F32S, 0.0)]),
    (O.MIRROR_PAD, [[0, 0], [0, 3]], [i32(0)]),            # reflect: at most dim − 1 = 2
    (O.MIRROR_PAD, [[4, 0], [0, 0]], [i32(1)]),            # symmetric: at most dim = 3
    (O.MIRROR_PAD, [[0, 0], [0, 0]], [i32(2)]),            # unknown mode
])
def test_invalid_arguments(op, paddings, extra):
    expect_status(INVALID, pad, op, np.zeros((3, 3), np.float32), paddings, F32, extra=extra)


def test_invalid_types_and_ranks():
    x = np.zeros((2, 2), np.float32)
    # PAD_V2: a FLOAT32 tensor takes a FLOAT32 pad value, a quantized one an INT32
    expect_status(INVALID, pad, O.PAD_V2, x, [[0, 0], [0, 0]], F32, extra=[i32(1)])
    expect_status(INVALID, pad, O.PAD_V2, x, [[0, 0], [0, 0]], F32, extra=[Const(F16S, 1.0)])
    expect_status(INVALID, pad, O.PAD_V2, x.astype(np.uint8), [[0, 0], [0, 0]], Q8A, 1.0, 0, [Const(F32S, 1.0)])
    # PAD: rank ≤ 4; no TENSOR_INT32
    expect_status(INVALID, pad, O.PAD, np.zeros((1,) * 5, np.float32), [[0, 0]] * 5)
    expect_status(INVALID, pad, O.PAD, x.astype(np.int32), [[0, 0], [0, 0]], I32)
    # "=in" output quantization
    expect_status(INVALID, run1, O.PAD, [In(Q8A, [2], 0.5, 1), pads_const([[1, 1]])], Out(Q8A, [], 0.5, 2),
                  np.zeros(2, np.uint8))


def test_zero_sized_input_fails_at_execution():
    entry = lookup(O.PAD)
    inputs = [TensorInfo(F32, (0, 2), value=np.zeros((0, 2), np.float32)),
              TensorInfo(I32, (2, 2), value=np.array([[1, 1], [0, 0]], np.int32))]
    outs = [TensorInfo(F32, None, known_shape=False)]
    with pytest.raises(Exception) as info:
        entry.define(inputs, outs)
    assert info.value.status == ErrorStatus.GENERAL_FAILURE
