"""A float PRELU by a constant channel vector, read from a GEMM's (1×1 CONV_2D, FULLY_CONNECTED) output
alone, joins that GEMM's epilogue (compiler/fusion.py fuse_prelus): which PRELUs fuse, and that the
fused kernels give what float64 numpy computes from the same weights (MediaPipe's
convolution [+ shortcut ADD] + PReLU blocks)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.pipeline import prepare_graph

F32 = T.TENSOR_FLOAT32
SHAPE = (1, 5, 7, 24)      # 35 pixels, 24 channels
COUT = 40                  # two whole 16-column blocks and a partial one
RELU6 = 3


def _prelu_model(act=0, residual=False, alpha_shape=(1, 1, COUT), alpha_input=False, conv_is_output=False,
                 second_reader=False, filter_input=False):
    """x → CONV_2D (1×1, activation ``act``; the filter a model input with ``filter_input``) [+ r] →
    PRELU(·, alpha)."""
    rng = np.random.default_rng(11)
    w = rng.uniform(-1, 1, (COUT, 1, 1, SHAPE[3])).astype(np.float32)
    bias = rng.uniform(-1, 1, COUT).astype(np.float32)
    alpha = rng.uniform(-2, 2, alpha_shape).astype(np.float32)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(SHAPE))
    out_shape = [1, SHAPE[1], SHAPE[2], COUT]
    f = b.add_input(F32, list(w.shape)) if filter_input else b.add_constant(F32, list(w.shape), w)
    c = b.add_operand(F32, out_shape)
    b.add_operation(O.CONV_2D, [x, f, b.add_constant(F32, [COUT], bias),
                                i32(0), i32(0), i32(0), i32(0), i32(1), i32(1), i32(0 if residual else act)], [c])
    pre = c
    if residual:
        r = b.add_input(F32, out_shape)
        pre = b.add_operand(F32, out_shape)
        b.add_operation(O.ADD, [c, r, i32(act)], [pre])
    a = b.add_input(F32, list(alpha_shape)) if alpha_input else b.add_constant(F32, list(alpha_shape), alpha)
    y = b.add_operand(F32, out_shape)
    b.add_operation(O.PRELU, [pre, a], [y])
    outs = [y]
    if conv_is_output:
        outs.append(pre)
    if second_reader:
        neg = b.add_operand(F32, out_shape)
        b.add_operation(O.NEG, [pre], [neg])
        outs.append(neg)
    b.set_outputs(outs)
    return b.finish(), w, bias, alpha


def _feeds(residual=False, alpha=None):
    rng = np.random.default_rng(13)
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    x[0, 2, 3, 5] = np.nan                                   # a NaN pixel: NaN in every output channel
    feeds = [x]
    if residual:
        feeds.append(rng.uniform(-2, 2, (1, SHAPE[1], SHAPE[2], COUT)).astype(np.float32))
    if alpha is not None:
        feeds.append(alpha)
    return feeds


def _want(feeds, w, bias, alpha, act=0, residual=False):
    x = feeds[0].astype(np.float64)
    y = np.einsum("nhwc,oc->nhwo", x, w[:, 0, 0, :].astype(np.float64)) + bias
    if residual:
        y = y + feeds[1]
    if act == RELU6:
        y = np.clip(y, 0, 6)
    with np.errstate(invalid="ignore"):
        return np.where(y >= 0, y, y * alpha.astype(np.float64))


def _fused(model):
    return [n for n in prepare_graph(model).nodes if getattr(n.params, "prelu", False)]


@pytest.mark.parametrize("act, residual", [(0, False), (RELU6, False), (0, True), (RELU6, True)])
def test_prelu_joins_the_pointwise_convolution(accelerator, act, residual):
    model, w, bias, alpha = _prelu_model(act=act, residual=residual)
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D]
    conv = nodes[0]
    assert conv.params.prelu and conv.params.residual == residual and conv.params.activation == act
    assert conv.outputs == list(model.main.output_indexes)
    alpha_operand = model.main.operations[-1].inputs[1]
    assert conv.inputs[-1] == alpha_operand                  # the vector, after the residual
    if residual:
        assert conv.inputs[-2] == model.main.input_indexes[1]     # the shortcut r
    feeds = _feeds(residual)
    got = accelerator.prepare_model(model).execute(feeds)[0]
    want = _want(feeds, w, bias, alpha, act, residual)
    assert np.isnan(got[0, 2, 3]).all() and np.isnan(want[0, 2, 3]).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_channel_vector_of_rank_one_joins_too(accelerator):
    model, w, bias, alpha = _prelu_model(alpha_shape=(COUT,))
    assert len(_fused(model)) == 1
    feeds = _feeds()
    np.testing.assert_allclose(accelerator.prepare_model(model).execute(feeds)[0], _want(feeds, w, bias, alpha),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", ["alpha_input", "alpha_full", "alpha_scalar", "conv_is_output",
                                     "second_reader", "filter_input"])
def test_prelus_that_cannot_join_stay(accelerator, variant):
    kwargs = {"alpha_input": {"alpha_input": True}, "alpha_full": {"alpha_shape": (SHAPE[1], SHAPE[2], COUT)},
              "alpha_scalar": {"alpha_shape": (1,)}, "conv_is_output": {"conv_is_output": True},
              "second_reader": {"second_reader": True}, "filter_input": {"filter_input": True}}[variant]
    model, w, bias, alpha = _prelu_model(**kwargs)
    assert not _fused(model) and O.PRELU in [n.type for n in prepare_graph(model).nodes]
    feeds = _feeds(alpha=alpha if variant == "alpha_input" else None)
    if variant == "filter_input":                            # conv_general.cl, which takes no PRELU
        feeds.insert(1, w)
    got = accelerator.prepare_model(model).execute(feeds)
    want = gd.get_device("reference").prepare_model(model).execute(feeds)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], _want(feeds, w, bias, alpha), rtol=1e-5, atol=1e-5)


def _direct_conv(x, w, bias, pad, stride):
    """float64 NHWC convolution, by the definition (zero padding ``pad`` on every side)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    co, kh, kw, _ = w.shape
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, co)) + bias
    for i in range(kh):
        for j in range(kw):
            win = x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]
            out += np.einsum("nhwc,oc->nhwo", win, w[:, i, j, :].astype(np.float64))
    return out


@pytest.mark.parametrize("kernel, stride, cout, cin", [(3, 1, COUT, SHAPE[3]), (2, 2, 32, SHAPE[3]),
                                                       (5, 2, 24, 3), (3, 1, 24, 17), (3, 1, 20, 17)])
def test_prelu_joins_the_tiled_convolution(accelerator, kernel, stride, cout, cin):
    # conv.cl: 16-channel vector blocks, whole (32) or with a partial last one written channel by channel
    # (40, 24 from 3 channels, 20), and one scalar block of 24 channels (24 from 17)
    rng = np.random.default_rng(kernel * 10 + cout)
    w = rng.uniform(-1, 1, (cout, kernel, kernel, cin)).astype(np.float32)
    bias = rng.uniform(-1, 1, cout).astype(np.float32)
    alpha = rng.uniform(-2, 2, (1, 1, 1, cout)).astype(np.float32)
    pad = (kernel - 1) // 2
    shape = (1, 9, 11, cin)
    oh, ow = (shape[1] + 2 * pad - kernel) // stride + 1, (shape[2] + 2 * pad - kernel) // stride + 1
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(shape))
    c = b.add_operand(F32, [1, oh, ow, cout])
    b.add_operation(O.CONV_2D, [x, b.add_constant(F32, list(w.shape), w), b.add_constant(F32, [cout], bias),
                                i32(pad), i32(pad), i32(pad), i32(pad), i32(stride), i32(stride), i32(0)], [c])
    y = b.add_operand(F32, [1, oh, ow, cout])
    b.add_operation(O.PRELU, [c, b.add_constant(F32, list(alpha.shape), alpha)], [y])
    b.set_outputs([y])
    model = b.finish()
    assert [n.type for n in prepare_graph(model).nodes] == [O.CONV_2D] and len(_fused(model)) == 1
    xv = rng.uniform(-2, 2, shape).astype(np.float32)
    pre = _direct_conv(xv, w, bias, pad, stride)
    want = np.where(pre >= 0, pre, pre * alpha.astype(np.float64))
    assert (pre < 0).any() and (pre > 0).any()
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv])[0], want, rtol=1e-5, atol=1e-5)


def test_group_tiles_apply_the_prelu(accelerator, monkeypatch):
    # a GPU's work-group tiles (forced here on every device) apply it output by output
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", True)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    model, w, bias, alpha = _prelu_model(residual=True)
    feeds = _feeds(residual=True)
    got = accelerator.prepare_model(model).execute(feeds)[0]
    np.testing.assert_allclose(got, _want(feeds, w, bias, alpha, residual=True), rtol=1e-5, atol=1e-5)


def test_prelu_joins_fully_connected(accelerator):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (21, 37)).astype(np.float32)
    bias = rng.uniform(-1, 1, 21).astype(np.float32)
    alpha = rng.uniform(-2, 2, 21).astype(np.float32)
    b = gd.ModelBuilder()
    x = b.add_input(F32, [3, 37])
    y = b.add_operand(F32, [3, 21])
    b.add_operation(O.FULLY_CONNECTED, [x, b.add_constant(F32, [21, 37], w), b.add_constant(F32, [21], bias),
                                        b.add_scalar(T.INT32, 0)], [y])
    z = b.add_operand(F32, [3, 21])
    b.add_operation(O.PRELU, [y, b.add_constant(F32, [1, 21], alpha)], [z])
    b.set_outputs([z])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.FULLY_CONNECTED] and nodes[0].params.prelu
    xv = rng.uniform(-2, 2, (3, 37)).astype(np.float32)
    pre = xv.astype(np.float64) @ w.T.astype(np.float64) + bias
    want = np.where(pre >= 0, pre, pre * alpha)
    assert (pre < 0).any() and (pre > 0).any()
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv])[0], want, rtol=1e-5, atol=1e-5)
