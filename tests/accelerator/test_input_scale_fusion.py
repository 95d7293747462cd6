"""A float MUL by a channel vector read only by a GEMM (1×1 CONV_2D, FULLY_CONNECTED) joins it
(compiler/fusion.py fuse_input_scales): which MULs fuse, and that the fused kernels give what float64
numpy computes from the same weights (a squeeze-and-excitation block's scaled projection)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.pipeline import prepare_graph

F32 = T.TENSOR_FLOAT32
SHAPE = (1, 6, 7, 24)      # 42 pixels, 24 channels
COUT = 40
RELU6 = 3


def _se_model(swap=False, act=0, residual=False, mul_is_output=False, second_reader=False, full=False,
              kernel=1):
    """x · sigmoid(z) (MUL activation ``act``) → CONV_2D (``kernel``², RELU6) [+ r]."""
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (COUT, kernel, kernel, SHAPE[3])).astype(np.float32)
    bias = rng.uniform(-1, 1, COUT).astype(np.float32)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(SHAPE))
    z = b.add_input(F32, list(SHAPE) if full else [1, 1, 1, SHAPE[3]])
    s = b.add_operand(F32, list(SHAPE) if full else [1, 1, 1, SHAPE[3]])
    b.add_operation(O.LOGISTIC, [z], [s])
    xs = b.add_operand(F32, list(SHAPE))
    b.add_operation(O.MUL, [s, x, i32(act)] if swap else [x, s, i32(act)], [xs])
    pad = (kernel - 1) // 2
    c = b.add_operand(F32, [1, SHAPE[1], SHAPE[2], COUT])
    b.add_operation(O.CONV_2D, [xs, b.add_constant(F32, list(w.shape), w), b.add_constant(F32, [COUT], bias),
                                i32(pad), i32(pad), i32(pad), i32(pad), i32(1), i32(1), i32(RELU6 if not residual else 0)],
                    [c])
    outs = [c]
    if residual:
        r = b.add_input(F32, [1, SHAPE[1], SHAPE[2], COUT])
        y = b.add_operand(F32, [1, SHAPE[1], SHAPE[2], COUT])
        b.add_operation(O.ADD, [c, r, i32(RELU6)], [y])
        outs = [y]
    if mul_is_output:
        outs.append(xs)
    if second_reader:
        neg = b.add_operand(F32, list(SHAPE))
        b.add_operation(O.NEG, [xs], [neg])
        outs.append(neg)
    b.set_outputs(outs)
    return b.finish(), w, bias


def _feeds(residual=False, full=False):
    rng = np.random.default_rng(9)
    feeds = [rng.uniform(-2, 2, SHAPE).astype(np.float32),
             rng.uniform(-3, 3, SHAPE if full else (1, 1, 1, SHAPE[3])).astype(np.float32)]
    if residual:
        feeds.append(rng.uniform(-2, 2, (1, SHAPE[1], SHAPE[2], COUT)).astype(np.float32))
    return feeds


def _want(feeds, w, bias, residual=False):
    x, z = (f.astype(np.float64) for f in feeds[:2])
    scaled = x / (1 + np.exp(-z))
    out = np.einsum("nhwc,oc->nhwo", scaled, w[:, 0, 0, :].astype(np.float64)) + bias
    if residual:
        out = out + feeds[2]
    return np.clip(out, 0, 6)


def _scaled(model):
    return [n for n in prepare_graph(model).nodes if getattr(n.params, "input_scale", False)]


@pytest.mark.parametrize("swap, residual", [(False, False), (True, False), (False, True)])
def test_channel_scale_joins_the_pointwise_convolution(accelerator, swap, residual):
    model, w, bias = _se_model(swap=swap, residual=residual)
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.LOGISTIC, O.CONV_2D]
    conv = nodes[1]
    assert conv.params.input_scale and conv.params.residual == residual
    assert conv.inputs[0] == 0                                   # reads x itself
    scale_at = -2 if residual else -1
    assert conv.inputs[scale_at] == nodes[0].outputs[0]          # the vector, before the residual
    feeds = _feeds(residual)
    got = accelerator.prepare_model(model).execute(feeds)[0]
    np.testing.assert_allclose(got, _want(feeds, w, bias, residual), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", ["act", "mul_is_output", "second_reader", "full", "kernel"])
def test_muls_that_cannot_join_stay(accelerator, variant):
    kwargs = {"act": {"act": 1}, "mul_is_output": {"mul_is_output": True}, "second_reader": {"second_reader": True},
              "full": {"full": True}, "kernel": {"kernel": 3}}[variant]
    model, w, bias = _se_model(**kwargs)
    assert not _scaled(model) and O.MUL in [n.type for n in prepare_graph(model).nodes]
    feeds = _feeds(full=variant == "full")
    got = accelerator.prepare_model(model).execute(feeds)
    want = gd.get_device("reference").prepare_model(model).execute(feeds)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_group_tiles_scale_the_slices_they_copy(accelerator, monkeypatch):
    # a GPU's work-group tiles (forced here on every device) scale a's slice as they copy it
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", True)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    model, w, bias = _se_model()
    feeds = _feeds()
    got = accelerator.prepare_model(model).execute(feeds)[0]
    np.testing.assert_allclose(got, _want(feeds, w, bias), rtol=1e-5, atol=1e-5)


def test_vector_scale_joins_fully_connected(accelerator):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (21, 37)).astype(np.float32)
    bias = rng.uniform(-1, 1, 21).astype(np.float32)
    b = gd.ModelBuilder()
    x = b.add_input(F32, [3, 37])
    s = b.add_input(F32, [37])
    xs = b.add_operand(F32, [3, 37])
    b.add_operation(O.MUL, [x, s, b.add_scalar(T.INT32, 0)], [xs])
    y = b.add_operand(F32, [3, 21])
    b.add_operation(O.FULLY_CONNECTED, [xs, b.add_constant(F32, [21, 37], w), b.add_constant(F32, [21], bias),
                                        b.add_scalar(T.INT32, 0)], [y])
    b.set_outputs([y])
    model = b.finish()
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.FULLY_CONNECTED] and nodes[0].params.input_scale
    xv = rng.uniform(-2, 2, (3, 37)).astype(np.float32)
    sv = rng.uniform(-2, 2, 37).astype(np.float32)
    want = (xv.astype(np.float64) * sv) @ w.T.astype(np.float64) + bias
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([xv, sv])[0], want, rtol=1e-5, atol=1e-5)
