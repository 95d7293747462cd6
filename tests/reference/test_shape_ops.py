"""RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH on the reference device (AOSP conformance values,
hand-worked cases, and an explicit index-loop formula for random shapes)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.graph import build_graph

from .single_op import Const, In, Out, build, boolean, expect_status, i32, run1

F32, F16, I32, Q8A, Q8AS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                            T.TENSOR_QUANT8_ASYMM_SIGNED)
INVALID = ErrorStatus.INVALID_ARGUMENT


# ---- RESHAPE -------------------------------------------------------------------------------------------------

def reshape(x, shape, itype=F32, scale=0.0, zp=0, out_dims=None, oscale=None):
    x = np.asarray(x)
    shape_c = Const(I32, np.array(shape, dtype=np.int32), [len(shape)])
    out = Out(itype, out_dims if out_dims is not None else [], scale if oscale is None else oscale, zp)
    return run1(O.RESHAPE, [In(itype, list(x.shape), scale, zp), shape_c], out, x)


def test_reshape_cts():
    # reshape.mod.py: [1, 1, 3, 3] → shape [-1] → [9], same values
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    r = reshape(x, [-1], out_dims=[9])
    assert r.shape == (9,)
    np.testing.assert_array_equal(r, np.arange(1, 10))
    # reshape_quant8 variant (=in quantization), −1 in the middle
    q = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    r = reshape(q, [4, -1, 2], Q8A, 0.5, 3)
    assert r.dtype == np.uint8 and r.shape == (4, 3, 2)
    np.testing.assert_array_equal(r.ravel(), q.ravel())


def test_reshape_shape_as_model_input():
    # the output shape is unknown before execution (ShapeUnknown), known at execution
    model = build(O.RESHAPE, [In(F32, [2, 3]), In(I32, [2])], [Out(F32, [0, 0])])
    graph = build_graph(model, model.main)
    assert graph.nodes[0].params is None
    import gpu_driver
    (r,) = gpu_driver.get_device("reference").prepare_model(model).execute(
        [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([3, -1], dtype=np.int32)])
    np.testing.assert_array_equal(r, [[0, 1], [2, 3], [4, 5]])


def test_reshape_invalid():
    expect_status(INVALID, reshape, np.zeros((2, 3), np.float32), [-1, -1])
    expect_status(INVALID, reshape, np.zeros((2, 3), np.float32), [4, 2])
    expect_status(INVALID, reshape, np.zeros((2, 3), np.float32), [-1, 4])
    expect_status(INVALID, reshape, np.zeros((2, 3), np.float32), [3, -2])
    expect_status(INVALID, reshape, np.zeros(4, np.uint8), [4], Q8A, 0.5, 0, oscale=0.25)


# ---- DEPTH_TO_SPACE / SPACE_TO_DEPTH ---------------------------------------------------------------------------

def d2s_loop(x, b):
    """out[n, h·b+i, w·b+j, c] = in[n, h, w, (i·b + j)·C' + c] (operations.md op 5), by explicit loops."""
    n, h, w, c = x.shape
    oc = c // (b * b)
    out = np.zeros((n, h * b, w * b, oc), x.dtype)
    for nn in range(n):
        for hh in range(h):
            for ww in range(w):
                for i in range(b):
                    for j in range(b):
                        for cc in range(oc):
                            out[nn, hh * b + i, ww * b + j, cc] = x[nn, hh, ww, (i * b + j) * oc + cc]
    return out


def depth_space(op, x, b, itype=F32, scale=0.0, zp=0, nchw=None, oscale=None):
    x = np.asarray(x)
    ins = [In(itype, list(x.shape), scale, zp), i32(b)]
    if nchw is not None:
        ins.append(boolean(nchw))
    return run1(op, ins, Out(itype, [], scale if oscale is None else oscale, zp), x)


# depth_to_space_float_3.mod.py: [1, 2, 2, 4], b = 2 → [1, 4, 4, 1]
D2S_IN = np.array([1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16], np.float32).reshape(1, 2, 2, 4)
D2S_OUT = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)


def test_depth_to_space_cts_and_inverse():
    np.testing.assert_array_equal(depth_space(O.DEPTH_TO_SPACE, D2S_IN, 2), D2S_OUT)
    # space_to_depth_float_2.mod.py is the inverse pair
    np.testing.assert_array_equal(depth_space(O.SPACE_TO_DEPTH, D2S_OUT, 2), D2S_IN)
    # depth_to_space_float_1.mod.py: [1, 1, 1, 8], b = 2 → [1, 2, 2, 2], values unchanged in order
    x = np.array([1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1], np.float32).reshape(1, 1, 1, 8)
    r = depth_space(O.DEPTH_TO_SPACE, x, 2)
    assert r.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(r.ravel(), x.ravel())


@pytest.mark.parametrize("itype", [F32, F16, Q8A, Q8AS])
def test_depth_space_types_and_nchw(itype):
    rng = np.random.default_rng(int(itype))
    b = 3
    x = rng.integers(-100, 100, size=(2, 2, 3, 2 * b * b))
    if itype == Q8A:
        x = x + 100
    x = x.astype({F32: np.float32, F16: np.float16, Q8A: np.uint8, Q8AS: np.int8}[itype])
    scale, zp = (0.5, 3) if itype in (Q8A, Q8AS) else (0.0, 0)
    want = d2s_loop(x, b)
    r = depth_space(O.DEPTH_TO_SPACE, x, b, itype, scale, zp)
    np.testing.assert_array_equal(r, want)
    # NCHW: same data, channels-first storage in and out
    rn = depth_space(O.DEPTH_TO_SPACE, x.transpose(0, 3, 1, 2), b, itype, scale, zp, nchw=True)
    np.testing.assert_array_equal(rn, want.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(depth_space(O.SPACE_TO_DEPTH, want, b, itype, scale, zp), x)
    rs = depth_space(O.SPACE_TO_DEPTH, want.transpose(0, 3, 1, 2), b, itype, scale, zp, nchw=True)
    np.testing.assert_array_equal(rs, x.transpose(0, 3, 1, 2))


def test_depth_space_invalid():
    expect_status(INVALID, depth_space, O.DEPTH_TO_SPACE, np.zeros((1, 2, 2, 6), np.float32), 2)
    expect_status(INVALID, depth_space, O.SPACE_TO_DEPTH, np.zeros((1, 3, 2, 1), np.float32), 2)
    expect_status(INVALID, depth_space, O.SPACE_TO_DEPTH, np.zeros((1, 2, 2, 1), np.float32), 0)
    expect_status(INVALID, depth_space, O.DEPTH_TO_SPACE, np.zeros((1, 1, 1, 4), np.uint8), 2, Q8A, 0.5, 0,
                  oscale=0.25)
