"""The shape operations on the reference device (RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CHANNEL_SHUFFLE,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, FILL, RANK): AOSP conformance
values, hand-worked cases, explicit index-loop formulas for random shapes, and invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import ErrorStatus, ModelBuilder, OperandType as T, OperationType as O
from gpu_driver.graph import build_graph
from gpu_driver.ops.catalog import define, lookup
from gpu_driver.ops.definition import TensorInfo

from .single_op import F16S, F32S, I32S, Const, In, Out, build, boolean, expect_status, i32, run1, run_op

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


def test_reshape_int32_and_float16():
    # reshape_int32.mod.py (FL6): [1, 1, 3, 3] int32 → [-1] → [9]
    x = np.arange(1, 10, dtype=np.int32).reshape(1, 1, 3, 3)
    r = reshape(x, [-1], I32)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, np.arange(1, 10))
    h = np.arange(6, dtype=np.float16).reshape(2, 3)
    np.testing.assert_array_equal(reshape(h, [3, 2], F16), h.reshape(3, 2))


# ---- SQUEEZE / EXPAND_DIMS -------------------------------------------------------------------------------------

def with_axes(op, x, values, itype=F32, scale=0.0):
    """SQUEEZE / TRANSPOSE of ``x`` with the constant int32 vector ``values`` as input 1, or input 1
    omitted (a NO_VALUE operand) when ``values`` is None."""
    x = np.asarray(x)
    b = ModelBuilder()
    xi = b.add_input(itype, list(x.shape), scale)
    arg = b.add_no_value(I32) if values is None else b.add_constant(I32, [len(values)], np.array(values, np.int32))
    oi = b.add_operand(itype, [], scale)
    b.add_operation(op, [xi, arg], [oi])
    b.set_outputs([oi])
    return gpu_driver.get_device("reference").prepare_model(b.finish()).execute([x])[0]


def squeeze(x, axes, itype=F32, scale=0.0):
    return with_axes(O.SQUEEZE, x, axes, itype, scale)


def test_squeeze():
    x = np.arange(24, dtype=np.float32).reshape(1, 24, 1)
    assert squeeze(x, [2]).shape == (1, 24)
    assert squeeze(x, [-1, 0]).shape == (24,)
    assert squeeze(x, None).shape == (24,)                       # omitted axes: every size-1 dim
    assert squeeze(np.zeros((1, 1, 1), np.float32), None).shape == (1,)   # all removed → [1]
    np.testing.assert_array_equal(squeeze(x.astype(np.int8), [0], Q8AS, 0.5).ravel(), x.ravel().astype(np.int8))
    expect_status(INVALID, squeeze, x, [1])                      # dimension 1 has size 24
    expect_status(INVALID, squeeze, x, [3])                      # out of range


def expand_dims(x, axis, itype=F32):
    x = np.asarray(x)
    return run1(O.EXPAND_DIMS, [In(itype, list(x.shape)), i32(axis)], Out(itype), x)


def test_expand_dims():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert expand_dims(x, 0).shape == (1, 2, 3)
    assert expand_dims(x, 1).shape == (2, 1, 3)
    assert expand_dims(x, -1).shape == (2, 3, 1)                 # −1 + rank + 1 = 2
    assert expand_dims(x, -3).shape == (1, 2, 3)
    r = expand_dims(x.astype(np.int32), 2, I32)
    assert r.dtype == np.int32 and r.shape == (2, 3, 1)
    np.testing.assert_array_equal(r.ravel(), np.arange(6))
    expect_status(INVALID, expand_dims, x, 3)
    expect_status(INVALID, expand_dims, x, -4)


# ---- TRANSPOSE -------------------------------------------------------------------------------------------------

def transpose(x, perm, itype=F32, scale=0.0):
    return with_axes(O.TRANSPOSE, x, perm, itype, scale)


def test_transpose():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(transpose(x, [1, 0]), [[1, 4], [2, 5], [3, 6]])
    np.testing.assert_array_equal(transpose(x, None), [[1, 4], [2, 5], [3, 6]])   # omitted perm, rank 2
    y = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    r = transpose(y, [2, 0, 1], Q8A, 0.5)
    assert r.shape == (4, 2, 3)
    assert r[3, 1, 2] == y[1, 2, 3]                            # out[i, j, k] = in[j, k, i]
    # zero-sized input (FL3, produced inside a model): a zero-sized output
    ins = [TensorInfo(F32, (0, 3), value=np.zeros((0, 3), np.float32)),
           TensorInfo(I32, (2,), value=np.array([1, 0], np.int32))]
    outs = [TensorInfo(F32, None)]
    params = define(O.TRANSPOSE, ins, outs)
    assert params.output_shapes == [(3, 0)]
    assert lookup(O.TRANSPOSE).reference(params, ins, outs)[0].shape == (3, 0)
    expect_status(INVALID, transpose, y, None, Q8A, 0.5)          # omitted perm needs rank 2
    expect_status(INVALID, transpose, x, [0, 0])             # not a permutation
    expect_status(INVALID, transpose, x, [0, 1, 2])          # wrong length


# ---- CHANNEL_SHUFFLE -------------------------------------------------------------------------------------------

def channel_shuffle(x, groups, axis, itype=F32):
    x = np.asarray(x)
    return run1(O.CHANNEL_SHUFFLE, [In(itype, list(x.shape)), i32(groups), i32(axis)], Out(itype), x)


def test_channel_shuffle():
    # channel_shuffle.mod.py, one row: 12 channels in 3 groups of S = 4: out[k·3 + g] = in[g·4 + k]
    x = np.arange(2 * 12, dtype=np.float32).reshape(2, 12)
    want = [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
    r = channel_shuffle(x, 3, -1)
    np.testing.assert_array_equal(r[0], want)
    np.testing.assert_array_equal(r[1], np.array(want) + 12)
    # along axis 0 of a [12, 2] tensor: the same permutation of rows
    np.testing.assert_array_equal(channel_shuffle(x.T.copy(), 3, 0)[:, 0], want)
    expect_status(INVALID, channel_shuffle, x, 5, -1)          # 5 does not divide 12
    expect_status(INVALID, channel_shuffle, x, 3, 2)           # axis out of range


# ---- BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND -----------------------------------------------------------------------

def batch_space(op, x, block, paddings=None, itype=F32, scale=0.0, zp=0, nchw=None):
    x = np.asarray(x)
    ins = [In(itype, list(x.shape), scale, zp), Const(I32, np.array(block, np.int32), [2])]
    if paddings is not None:
        ins.append(Const(I32, np.array(paddings, np.int32), list(np.shape(paddings))))
    if nchw is not None:
        ins.append(boolean(nchw))
    return run1(op, ins, Out(itype, [], scale, zp), x)


def test_batch_to_space_cts():
    # batch_to_space_float_1.mod.py: [4, 2, 2, 1], block [2, 2] → [1, 4, 4, 1]
    x = np.arange(1, 17, dtype=np.float32).reshape(4, 2, 2, 1)
    r = batch_space(O.BATCH_TO_SPACE_ND, x, [2, 2])
    assert r.shape == (1, 4, 4, 1)
    np.testing.assert_array_equal(r.ravel(), [1, 5, 2, 6, 9, 13, 10, 14, 3, 7, 4, 8, 11, 15, 12, 16])
    # NCHW: the same data stored channels first
    rn = batch_space(O.BATCH_TO_SPACE_ND, x.transpose(0, 3, 1, 2), [2, 2], nchw=True)
    np.testing.assert_array_equal(rn, r.transpose(0, 3, 1, 2))
    expect_status(INVALID, batch_space, O.BATCH_TO_SPACE_ND, x, [3, 1])   # 4 not a multiple of 3
    expect_status(INVALID, batch_space, O.BATCH_TO_SPACE_ND, x, [0, 1])


def test_space_to_batch_cts():
    # space_to_batch_float_2.mod.py: [1, 5, 2, 1], block [3, 2], paddings [[1, 0], [2, 0]] → [6, 2, 2, 1]
    x = np.arange(1, 11, dtype=np.float32).reshape(1, 5, 2, 1)
    want = [0, 0, 0, 5, 0, 0, 0, 6, 0, 1, 0, 7, 0, 2, 0, 8, 0, 3, 0, 9, 0, 4, 0, 10]
    r = batch_space(O.SPACE_TO_BATCH_ND, x, [3, 2], [[1, 0], [2, 0]])
    assert r.shape == (6, 2, 2, 1)
    np.testing.assert_array_equal(r.ravel(), want)
    # space_to_batch_quant8_nonzero.mod.py: the padding is the zero point (9)
    q = batch_space(O.SPACE_TO_BATCH_ND, x.astype(np.uint8), [3, 2], [[1, 0], [2, 0]], Q8A, 1.0, 9)
    np.testing.assert_array_equal(q.ravel(), [9 if v == 0 else v for v in want])
    # NCHW and the inverse BATCH_TO_SPACE_ND without padding
    y = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    s = batch_space(O.SPACE_TO_BATCH_ND, y, [2, 3], [[0, 0], [0, 0]])
    assert s.shape == (12, 2, 2, 3)
    np.testing.assert_array_equal(batch_space(O.BATCH_TO_SPACE_ND, s, [2, 3]), y)
    sn = batch_space(O.SPACE_TO_BATCH_ND, y.transpose(0, 3, 1, 2), [2, 3], [[0, 0], [0, 0]], nchw=True)
    np.testing.assert_array_equal(sn, s.transpose(0, 3, 1, 2))
    expect_status(INVALID, batch_space, O.SPACE_TO_BATCH_ND, x, [3, 2], [[0, 0], [0, 0]])   # 5 % 3
    expect_status(INVALID, batch_space, O.SPACE_TO_BATCH_ND, x, [1, 1], [[-1, 1], [0, 0]])
    expect_status(INVALID, batch_space, O.SPACE_TO_BATCH_ND, x, [1, 1], [0, 0, 0, 0])       # shape [4]


def s2b_loop(x, bh, bw, pt, pl, oh, ow, pad):
    """out[(a·bw + b)·N + n, y, x, c] = padded[n, y·bh + a, x·bw + b, c] by explicit loops."""
    n, h, w, c = x.shape
    out = np.full((n * bh * bw, oh, ow, c), pad, x.dtype)
    for a in range(bh):
        for b in range(bw):
            for nn in range(n):
                for yy in range(oh):
                    for xx in range(ow):
                        hh, ww = yy * bh + a - pt, xx * bw + b - pl
                        if 0 <= hh < h and 0 <= ww < w:
                            out[(a * bw + b) * n + nn, yy, xx] = x[nn, hh, ww]
    return out


@pytest.mark.parametrize("itype", [F32, F16, Q8A, Q8AS])
def test_space_to_batch_types(itype):
    rng = np.random.default_rng(int(itype) + 40)
    x = rng.integers(0, 100, size=(2, 3, 5, 2)).astype({F32: np.float32, F16: np.float16, Q8A: np.uint8,
                                                        Q8AS: np.int8}[itype])
    scale, zp = (0.5, -3 if itype == Q8AS else 3) if itype in (Q8A, Q8AS) else (0.0, 0)
    r = batch_space(O.SPACE_TO_BATCH_ND, x, [2, 3], [[1, 0], [0, 1]], itype, scale, zp)
    np.testing.assert_array_equal(r, s2b_loop(x, 2, 3, 1, 0, 2, 2, zp))


# ---- FILL / RANK -----------------------------------------------------------------------------------------------

def test_fill():
    dims = In(I32, [3])
    (r,) = run_op(O.FILL, [dims, Const(F32S, 3.5)], [Out(F32, [0, 0, 0])], [np.array([2, 3, 4], np.int32)])
    assert r.shape == (2, 3, 4) and r.dtype == np.float32 and (r == 3.5).all()
    (r,) = run_op(O.FILL, [dims, Const(I32S, -7)], [Out(I32, [0, 0, 0])], [np.array([1, 2, 1], np.int32)])
    assert r.dtype == np.int32 and r.shape == (1, 2, 1) and (r == -7).all()
    (r,) = run_op(O.FILL, [In(I32, [1]), Const(F16S, 0.1)], [Out(F16, [0])], [np.array([5], np.int32)])
    assert r.dtype == np.float16 and (r == np.float16(0.1)).all()
    # the value type must match the output type
    expect_status(INVALID, run_op, O.FILL, [dims, Const(F32S, 1.0)], [Out(I32, [0, 0, 0])],
                  [np.array([1, 2, 1], np.int32)])


def test_rank():
    (r,) = run_op(O.RANK, [In(F32, [2, 3])], [Out(I32S)], [np.zeros((2, 3), np.float32)])
    assert int(r) == 2
    (r,) = run_op(O.RANK, [In(Q8AS, [3], 0.1, 0)], [Out(I32S)], [np.zeros(3, np.int8)])
    assert int(r) == 1
    # the output must be an INT32 scalar
    expect_status(INVALID, run_op, O.RANK, [In(F32, [2, 3])], [Out(I32, [1])], [np.zeros((2, 3), np.float32)])
