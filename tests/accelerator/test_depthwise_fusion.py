"""A float DEPTHWISE_CONV_2D read only by a 1×1 CONV_2D lowered as a GEMM joins that GEMM
(compiler/fusion.py fuse_depthwise_inputs; gemm.cl DW): which pairs fuse, and that the fused kernel
gives what float64 numpy computes from the same weights, through both of its paths (row blocks
inside the image and at its border), with the GEMM's own epilogue (residual, PReLU) behind it (a
MobileNet / BlazeFace block)."""
import copy

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler import autotune
from gpu_driver.compiler.pipeline import prepare_graph

F32 = T.TENSOR_FLOAT32
RELU, RELU6 = 1, 3


def _block(shape, k, stride=1, dilation=1, pads=None, dw_act=0, cout=32, act=0, residual=False, prelu=False,
           multiplier=1, dw_is_output=False, second_reader=False, seed=3):
    """x [N, H, W, C] → DEPTHWISE_CONV_2D (k × k, ``stride``, ``dilation``; explicit ``pads`` (top,
    bottom, left, right) or SAME; activation ``dw_act``) → CONV_2D 1×1 to ``cout`` (activation
    ``act``) [+ r] [→ PRELU].  Returns the model and its weights."""
    n, h, w, c = shape
    rng = np.random.default_rng(seed)
    dww = rng.uniform(-1, 1, (1, k, k, c * multiplier)).astype(np.float32)
    dwb = rng.uniform(-1, 1, c * multiplier).astype(np.float32)
    pw = rng.uniform(-1, 1, (cout, 1, 1, c * multiplier)).astype(np.float32)
    pwb = rng.uniform(-1, 1, cout).astype(np.float32)
    alpha = rng.uniform(-2, 2, cout).astype(np.float32)
    if pads is None:                                    # SAME, as TF Lite places it
        ph = max((-(-h // stride) - 1) * stride + (k - 1) * dilation + 1 - h, 0)
        pw_ = max((-(-w // stride) - 1) * stride + (k - 1) * dilation + 1 - w, 0)
        pads = (ph // 2, ph - ph // 2, pw_ // 2, pw_ - pw_ // 2)
    top, bottom, left, right = pads
    oh = (h + top + bottom - (k - 1) * dilation - 1) // stride + 1
    ow = (w + left + right - (k - 1) * dilation - 1) // stride + 1
    b = gd.ModelBuilder()
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    x = b.add_input(F32, [n, h, w, c])
    d = b.add_operand(F32, [n, oh, ow, c * multiplier])
    b.add_operation(O.DEPTHWISE_CONV_2D, [x, b.add_constant(F32, list(dww.shape), dww),
                                          b.add_constant(F32, [c * multiplier], dwb),
                                          i32(left), i32(right), i32(top), i32(bottom), i32(stride), i32(stride),
                                          i32(multiplier), i32(dw_act), b.add_scalar(T.BOOL, False),
                                          i32(dilation), i32(dilation)], [d])
    out_shape = [n, oh, ow, cout]
    y = b.add_operand(F32, out_shape)
    b.add_operation(O.CONV_2D, [d, b.add_constant(F32, list(pw.shape), pw), b.add_constant(F32, [cout], pwb),
                                i32(0), i32(0), i32(0), i32(0), i32(1), i32(1), i32(0 if residual else act)], [y])
    if residual:
        r = b.add_input(F32, out_shape)
        s = b.add_operand(F32, out_shape)
        b.add_operation(O.ADD, [y, r, i32(act)], [s])
        y = s
    if prelu:
        p = b.add_operand(F32, out_shape)
        b.add_operation(O.PRELU, [y, b.add_constant(F32, [cout], alpha)], [p])
        y = p
    outs = [y] + ([d] if dw_is_output else [])
    if second_reader:
        neg = b.add_operand(F32, [n, oh, ow, c * multiplier])
        b.add_operation(O.NEG, [d], [neg])
        outs.append(neg)
    b.set_outputs(outs)
    return b.finish(), dict(dww=dww, dwb=dwb, pw=pw, pwb=pwb, alpha=alpha, pads=pads, stride=stride,
                            dilation=dilation, k=k, dw_act=dw_act, act=act, residual=residual, prelu=prelu)


def _clamp(y, act):
    return np.clip(y, 0, 6) if act == RELU6 else np.maximum(y, 0) if act == RELU else y


def _want(feeds, m):
    """float64 numpy: the depthwise convolution by its definition (zero padding, every tap), then the
    1×1 convolution as a matrix product."""
    x = feeds[0].astype(np.float64)
    top, bottom, left, right = m["pads"]
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    k, s, dl = m["k"], m["stride"], m["dilation"]
    oh = (xp.shape[1] - (k - 1) * dl - 1) // s + 1
    ow = (xp.shape[2] - (k - 1) * dl - 1) // s + 1
    d = np.zeros((x.shape[0], oh, ow, x.shape[3])) + m["dwb"]
    for i in range(k):
        for j in range(k):
            win = xp[:, i * dl:i * dl + s * (oh - 1) + 1:s, j * dl:j * dl + s * (ow - 1) + 1:s, :]
            d += win * m["dww"][0, i, j].astype(np.float64)
    d = _clamp(d, m["dw_act"])
    y = np.einsum("nhwc,oc->nhwo", d, m["pw"][:, 0, 0, :].astype(np.float64)) + m["pwb"]
    if m["residual"]:
        y = y + feeds[1]
    y = _clamp(y, m["act"])
    if m["prelu"]:
        y = np.where(y >= 0, y, y * m["alpha"])
    return y


def _feeds(model, seed=5):
    rng = np.random.default_rng(seed)
    ops = model.main.operands
    return [rng.uniform(-2, 2, ops[i].dimensions).astype(np.float32) for i in model.main.input_indexes]


def _fused(model):
    return [n for n in prepare_graph(model).nodes if getattr(n.params, "depthwise", None) is not None]


CASES = {
    # 16-wide rows in blocks of 8: interior and border row blocks; 40 outputs: a partial column block
    "3x3 SAME relu6, 24 channels": dict(shape=(1, 16, 16, 24), k=3, dw_act=RELU6, cout=40, act=RELU6),
    # 10-wide rows in blocks of 5; two images
    "5x5 stride 2, two images": dict(shape=(2, 19, 20, 32), k=5, stride=2, cout=16),
    # dilation 2, uneven explicit padding, a residual behind the GEMM; 12 channels: 4-lane vectors
    "dilated, explicit padding, residual": dict(shape=(1, 14, 14, 12), k=3, dilation=2, pads=(1, 3, 2, 2),
                                               cout=64, act=RELU, residual=True),
    # a 3-wide output: a whole row per block
    "3x3 map": dict(shape=(1, 5, 5, 16), k=3, stride=2, cout=24),
    # 7-wide rows (blocks of 7), 96 channels, a PReLU behind the GEMM
    "7x7 map, 96 channels, PReLU": dict(shape=(1, 7, 7, 96), k=3, cout=96, prelu=True),
    # the most channels that fuse: 1024 (private memory of 8 × 1024 floats), 56-wide rows
    "1024 channels": dict(shape=(1, 2, 56, 1024), k=3, cout=40),
    # a valid window wider than the image's border: every row block at the border
    "5x5 on a 6x6 map, 40 channels": dict(shape=(1, 6, 6, 40), k=5, dw_act=RELU, cout=8),
    # 16 outputs on 28-wide rows: blocks of 14 pixels
    "16 outputs, blocks of 14": dict(shape=(1, 6, 28, 32), k=3, cout=16),
    # a 7×7 map (7 row blocks) of 600 outputs: each row block's 19 column blocks in 3 shares, the last
    # share's last block partial
    "7x7 map, 600 outputs in shares": dict(shape=(1, 7, 7, 32), k=3, dw_act=RELU6, cout=600),
    # 144 outputs: three weight vectors per tile row (a 48-column tile on AVX-512)
    "144 outputs": dict(shape=(1, 8, 16, 48), k=3, dw_act=RELU6, cout=144, act=RELU6),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_depthwise_joins_the_pointwise_gemm(accelerator, case):
    model, m = _block(**CASES[case])
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D], [n.type for n in nodes]
    (conv,) = nodes
    assert conv.params.depthwise is not None and conv.params.residual == m["residual"]
    assert conv.inputs[0] == model.main.input_indexes[0]            # reads the depthwise's input
    dw_op = model.main.operations[0]
    assert conv.inputs[-2:] == dw_op.inputs[1:3]                     # its filter and bias, last
    feeds = _feeds(model)
    prepared = accelerator.prepare_model(model)
    assert [k.template for k in prepared._static.compiled.plan.kernels] == ["gemm.cl"]
    got = prepared.execute(feeds)[0]
    np.testing.assert_allclose(got, _want(feeds, m), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", ["dw_is_output", "second_reader", "multiplier", "odd_channels",
                                     "many_channels", "prime_width", "gpu_kernels"])
def test_depthwise_that_cannot_join_stays(accelerator, variant):
    kwargs = {"dw_is_output": dict(dw_is_output=True), "second_reader": dict(second_reader=True),
              "multiplier": dict(shape=(1, 8, 8, 8), multiplier=2),
              "odd_channels": dict(shape=(1, 8, 8, 42)), "many_channels": dict(shape=(1, 4, 4, 1028)),
              "prime_width": dict(shape=(1, 11, 11, 16)),         # no whole tile divides 11 pixels
              "gpu_kernels": {}}[variant]
    kwargs.setdefault("shape", (1, 9, 9, 16))
    model, m = _block(k=3, cout=24, **kwargs)
    if variant == "gpu_kernels":        # a GPU's GEMM stages tiles through local memory: no fusion
        tuning = copy.copy(autotune.target_tuning())
        tuning.choose_gpu_kernels(8)
        with autotune.lowering_for(tuning):
            nodes = prepare_graph(model).nodes
    else:
        nodes = prepare_graph(model).nodes
    assert O.DEPTHWISE_CONV_2D in [n.type for n in nodes]
    assert all(getattr(n.params, "depthwise", None) is None for n in nodes)
    feeds = _feeds(model)
    got = accelerator.prepare_model(model).execute(feeds)
    want = gd.get_device("reference").prepare_model(model).execute(feeds)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
    if variant != "multiplier":
        np.testing.assert_allclose(got[0], _want(feeds, m), rtol=1e-4, atol=1e-4)
