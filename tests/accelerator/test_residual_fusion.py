"""A float ADD after a 1×1 convolution joins the convolution's GEMM epilogue (compiler/fusion.py
fuse_residual_adds): which ADDs fuse, and that the fused kernels give the values numpy computes
independently from the same weights (or the reference device's, for NaN and infinities)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.pipeline import prepare_graph

SHAPE = (1, 4, 5, 8)          # N, H, W, C: 20 pixels, 8 channels in
COUT = 12
NONE, RELU, RELU6 = 0, 1, 3


def _weights(seed: int, cin: int = SHAPE[3], cout: int = COUT, k: int = 1):
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1, 1, (cout, k, k, cin)).astype(np.float32)
    bias = rng.uniform(-1, 1, cout).astype(np.float32)
    return w, bias


def _conv(b, x, w, bias, act: int = NONE, pad: int = 0):
    """CONV_2D with explicit padding ``pad`` on every side, stride 1; its output operand."""
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    k = w.shape[1]
    out = b.add_operand(T.TENSOR_FLOAT32, [1, SHAPE[1] + 2 * pad - k + 1, SHAPE[2] + 2 * pad - k + 1, w.shape[0]])
    b.add_operation(O.CONV_2D, [x, b.add_constant(T.TENSOR_FLOAT32, list(w.shape), w),
                                b.add_constant(T.TENSOR_FLOAT32, [w.shape[0]], bias),
                                i32(pad), i32(pad), i32(pad), i32(pad), i32(1), i32(1), i32(act)], [out])
    return out


def _add(b, p, q, act: int = NONE, shape=None):
    out = b.add_operand(T.TENSOR_FLOAT32, list(shape or (1, SHAPE[1], SHAPE[2], COUT)))
    b.add_operation(O.ADD, [p, q, b.add_scalar(T.INT32, act)], [out])
    return out


def _pointwise(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """A 1×1 convolution in float64: every pixel's channels times the filter, plus the bias."""
    return np.einsum("nhwc,oc->nhwo", x.astype(np.float64), w[:, 0, 0, :].astype(np.float64)) + bias


def _fused(model) -> list:
    return [n for n in prepare_graph(model).nodes if getattr(n.params, "residual", False)]


def _inputs(seed: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, SHAPE).astype(np.float32) for _ in range(count - 1)] + \
        [rng.uniform(-2, 2, (1, SHAPE[1], SHAPE[2], COUT)).astype(np.float32)]


@pytest.mark.parametrize("act, swap", [(NONE, False), (RELU6, False), (RELU, True)])
def test_residual_add_joins_the_pointwise_convolution(accelerator, act, swap):
    w, bias = _weights(1)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    r = b.add_input(T.TENSOR_FLOAT32, [1, SHAPE[1], SHAPE[2], COUT])
    c = _conv(b, x, w, bias)
    y = _add(b, *((r, c) if swap else (c, r)), act=act)
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D] and nodes[0].params.residual
    xv, rv = _inputs(2, 2)
    want = _pointwise(xv, w, bias) + rv
    want = {NONE: want, RELU: np.maximum(want, 0), RELU6: np.clip(want, 0, 6)}[act]
    got = accelerator.prepare_model(model).execute([xv, rv])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_later_of_two_convolutions_takes_the_add(accelerator):
    (w1, b1), (w2, b2) = _weights(3), _weights(4)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    first, second = _conv(b, x, w1, b1), _conv(b, x, w2, b2)
    y = _add(b, first, second, act=RELU)
    b.set_outputs([y])
    model = b.finish()
    fused = _fused(model)
    assert len(fused) == 1 and fused[0].inputs[-1] == first   # the second conv reads the first's output
    xv = _inputs(5, 2)[0]
    want = np.maximum(_pointwise(xv, w1, b1) + _pointwise(xv, w2, b2), 0)
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv])[0], want, rtol=1e-5, atol=1e-5)


def _wide(xv: np.ndarray, w3: np.ndarray, b3: np.ndarray) -> np.ndarray:
    """A 3×3 convolution, padding 1, stride 1, in float64."""
    padded = np.pad(xv.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    return sum(np.einsum("nhwc,oc->nhwo", padded[:, i:i + SHAPE[1], j:j + SHAPE[2]], w3[:, i, j, :])
               for i in range(3) for j in range(3)) + b3


def test_residual_computed_later_moves_before_the_convolution(accelerator):
    """ADD(1×1 conv, 3×3 conv) with the 3×3 one later in the model: its input is ready before the 1×1
    kernel runs, so it moves before it and the 1×1 convolution takes the ADD."""
    (w1, b1), (w3, b3) = _weights(6), _weights(7, k=3)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    pointwise = _conv(b, x, w1, b1)
    wide = _conv(b, x, w3, b3, pad=1)
    y = _add(b, pointwise, wide)
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D, O.CONV_2D]
    assert nodes[0].outputs == [wide] and nodes[1].params.residual and nodes[1].inputs[-1] == wide
    xv = _inputs(8, 2)[0]
    want = _pointwise(xv, w1, b1) + _wide(xv, w3, b3)
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv])[0], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("b_is_output", [False, True], ids=["b-internal", "b-model-output"])
def test_residual_that_cannot_be_computed_in_time_is_not_fused(accelerator, b_is_output):
    """ADD(1×1 conv A, 3×3 conv B) where B reads a 1×1 conv E that comes after A: B cannot move before
    A, and B takes no residual itself, so the ADD stays a kernel of its own; also when B is a model
    output too (it is still computed after A)."""
    (w1, b1), (we, be), (w3, b3) = _weights(13), _weights(14, cout=SHAPE[3]), _weights(15, k=3)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    a = _conv(b, x, w1, b1)
    e = _conv(b, x, we, be)
    wide = _conv(b, e, w3, b3, pad=1)
    y = _add(b, a, wide)
    b.set_outputs([y, wide] if b_is_output else [y])
    model = b.finish()
    assert not _fused(model) and O.ADD in [n.type for n in prepare_graph(model).nodes]
    xv = _inputs(16, 2)[0]
    wide_want = _wide(_pointwise(xv, we, be).astype(np.float32), w3, b3)
    want = _pointwise(xv, w1, b1) + wide_want
    got = accelerator.prepare_model(model).execute([xv])
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-4)
    if b_is_output:
        np.testing.assert_allclose(got[1], wide_want, rtol=1e-5, atol=1e-4)


def test_adds_that_cannot_join_stay_kernels(accelerator):
    """Not fused: a convolution with an activation of its own (it applies before the sum), one whose
    output has another consumer, and a broadcast ADD."""
    w, bias = _weights(9)
    cases = {}
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    r = b.add_input(T.TENSOR_FLOAT32, [1, SHAPE[1], SHAPE[2], COUT])
    y = _add(b, _conv(b, x, w, bias, act=RELU), r)
    b.set_outputs([y])
    cases["own activation"] = (b.finish(), lambda xv, rv: np.maximum(_pointwise(xv, w, bias), 0) + rv)

    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    r = b.add_input(T.TENSOR_FLOAT32, [1, SHAPE[1], SHAPE[2], COUT])
    c = _conv(b, x, w, bias)
    b.set_outputs([_add(b, c, r), c])
    cases["shared output"] = (b.finish(), lambda xv, rv: _pointwise(xv, w, bias) + rv)

    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    r = b.add_input(T.TENSOR_FLOAT32, [1, 1, 1, COUT])
    b.set_outputs([_add(b, _conv(b, x, w, bias), r)])
    cases["broadcast"] = (b.finish(), lambda xv, rv: _pointwise(xv, w, bias) + rv)

    for name, (model, expect) in cases.items():
        assert not _fused(model), name
        xv, rv = _inputs(10, 2)
        if name == "broadcast":
            rv = rv[:, :1, :1, :]
        got = accelerator.prepare_model(model).execute([xv, rv])[0]
        np.testing.assert_allclose(got, expect(xv, rv), rtol=1e-5, atol=1e-5, err_msg=name)


def test_fused_relu_keeps_the_relu_operations_nan_rule(accelerator):
    """conv → ADD → RELU6 operation: the RELU6 joins the ADD and the ADD the convolution; a NaN in the
    residual comes out as the RELU6 operation gives it (its lower bound), infinities clamp."""
    w, bias = _weights(11)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    r = b.add_input(T.TENSOR_FLOAT32, [1, SHAPE[1], SHAPE[2], COUT])
    s = _add(b, _conv(b, x, w, bias), r)
    y = b.add_operand(T.TENSOR_FLOAT32, [1, SHAPE[1], SHAPE[2], COUT])
    b.add_operation(O.RELU6, [s], [y])
    b.set_outputs([y])
    model = b.finish()
    assert [n.type for n in prepare_graph(model).nodes] == [O.CONV_2D]
    xv, rv = _inputs(12, 2)
    rv.flat[::7] = np.nan
    rv.flat[3::11] = np.inf
    rv.flat[5::13] = -np.inf
    got = accelerator.prepare_model(model).execute([xv, rv])[0]
    want = gd.get_device("reference").prepare_model(model).execute([xv, rv])[0]
    assert not np.isnan(want).any() and (want[np.isnan(rv)] == 0).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_residual_add_joins_fully_connected(accelerator):
    """FULLY_CONNECTED [3, 8] → [3, 12], then ADD of a model input and RELU: one GEMM kernel."""
    rng = np.random.default_rng(17)
    w = rng.uniform(-1, 1, (COUT, 8)).astype(np.float32)
    bias = rng.uniform(-1, 1, COUT).astype(np.float32)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [3, 8])
    r = b.add_input(T.TENSOR_FLOAT32, [3, COUT])
    h = b.add_operand(T.TENSOR_FLOAT32, [3, COUT])
    b.add_operation(O.FULLY_CONNECTED, [x, b.add_constant(T.TENSOR_FLOAT32, [COUT, 8], w),
                                        b.add_constant(T.TENSOR_FLOAT32, [COUT], bias), b.add_scalar(T.INT32, NONE)], [h])
    y = _add(b, r, h, act=RELU, shape=(3, COUT))
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.FULLY_CONNECTED] and nodes[0].params.residual
    xv = rng.uniform(-2, 2, (3, 8)).astype(np.float32)
    rv = rng.uniform(-2, 2, (3, COUT)).astype(np.float32)
    want = np.maximum(xv.astype(np.float64) @ w.T.astype(np.float64) + bias + rv, 0)
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv, rv])[0], want, rtol=1e-5, atol=1e-5)


def _pad(b, x, paddings, shape):
    out = b.add_operand(T.TENSOR_FLOAT32, list(shape))
    b.add_operation(O.PAD, [x, b.add_constant(T.TENSOR_INT32, [4, 2], np.array(paddings, np.int32))], [out])
    return out


def test_a_channel_padded_shortcut_is_read_unpadded(accelerator):
    # BlazeFace's block: conv(x) + PAD(x, zero channels at the end) -> the PAD folds into the fused
    # ADD (the epilogue adds zeros past the shortcut's 8 channels); a PAD of the spatial axes stays
    w, bias = _weights(7)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(SHAPE))
    c = _conv(b, x, w, bias)
    shortcut = _pad(b, x, [[0, 0], [0, 0], [0, 0], [0, COUT - SHAPE[3]]], (1, SHAPE[1], SHAPE[2], COUT))
    y = _add(b, c, shortcut, act=RELU)
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D] and nodes[0].params.residual and nodes[0].inputs[-1] == x
    (xv,) = _inputs(8, 2)[:1]
    padded = np.concatenate([xv, np.zeros(SHAPE[:3] + (COUT - SHAPE[3],), np.float32)], axis=3)
    want = np.maximum(_pointwise(xv, w, bias) + padded, 0)
    got = accelerator.prepare_model(model).execute([xv])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [1, SHAPE[1] - 1, SHAPE[2], COUT])
    c = _conv(b, b.add_input(T.TENSOR_FLOAT32, list(SHAPE)), w, bias)
    y = _add(b, c, _pad(b, x, [[0, 0], [1, 0], [0, 0], [0, 0]], (1, SHAPE[1], SHAPE[2], COUT)))
    b.set_outputs([y])
    assert O.PAD in [n.type for n in prepare_graph(b.finish()).nodes]


@pytest.mark.parametrize("cin, cout, padded", [(24, 40, True), (32, 48, True), (16, 32, False), (24, 40, False)])
def test_wide_epilogues_with_whole_and_partial_column_blocks(accelerator, cin, cout, padded):
    # column blocks of 16 (8, 4): blocks inside the output's and the shortcut's channels are stored as
    # vectors, a block past the shortcut's channels adds nothing, a block straddling either end goes
    # output by output; 7x5 pixels leave a partial row block
    rng = np.random.default_rng(cin + cout)
    w = rng.uniform(-1, 1, (cout, 1, 1, cin)).astype(np.float32)
    bias = rng.uniform(-1, 1, cout).astype(np.float32)
    shape = (1, 7, 5, cin)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(shape))
    c = b.add_operand(T.TENSOR_FLOAT32, [1, 7, 5, cout])
    b.add_operation(O.CONV_2D, [x, b.add_constant(T.TENSOR_FLOAT32, list(w.shape), w),
                                b.add_constant(T.TENSOR_FLOAT32, [cout], bias),
                                i32(0), i32(0), i32(0), i32(0), i32(1), i32(1), i32(NONE)], [c])
    if padded:
        shortcut = _pad(b, x, [[0, 0], [0, 0], [0, 0], [0, cout - cin]], (1, 7, 5, cout))
    else:
        shortcut = b.add_input(T.TENSOR_FLOAT32, [1, 7, 5, cout])
    y = _add(b, c, shortcut, act=RELU6, shape=(1, 7, 5, cout))
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D] and nodes[0].params.residual
    xv = rng.uniform(-2, 2, shape).astype(np.float32)
    feeds = [xv]
    if padded:
        res = np.concatenate([xv, np.zeros(shape[:3] + (cout - cin,), np.float32)], axis=3)
    else:
        res = rng.uniform(-2, 2, (1, 7, 5, cout)).astype(np.float32)
        feeds.append(res)
    want = np.clip(_pointwise(xv, w, bias) + res, 0, 6)
    got = accelerator.prepare_model(model).execute(feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
