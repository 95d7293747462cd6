"""A PAD adding only zero rows and columns around an NHWC image, read only by convolutions, folds into
their explicit padding (compiler/fusion.py fold_spatial_pads): which PADs fold, and that the
convolutions then give what float64 numpy computes on the padded image (TF Lite's stride-2 layers,
written as PAD + VALID convolution)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.pipeline import prepare_graph

F32, Q8A = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM
SHAPE = (1, 10, 13, 8)


def _direct_conv(x, w, bias, stride, depthwise=False):
    """float64 NHWC VALID convolution by the definition; ``w`` [CO, KH, KW, CI] ([1, KH, KW, C] depthwise)."""
    kh, kw = w.shape[1:3]
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[0] if not depthwise else w.shape[3])) + bias
    for i in range(kh):
        for j in range(kw):
            win = x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :].astype(np.float64)
            out += win * w[0, i, j] if depthwise else np.einsum("nhwc,oc->nhwo", win, w[:, i, j, :].astype(np.float64))
    return out


def _model(paddings, kind="conv", kernel=3, stride=2, fill=None, pad_is_output=False, second=None):
    """x → PAD(paddings) [PAD_V2 with ``fill``] → ``kind`` (conv: 12 channels; depthwise; pool) VALID
    [and ``second``, another reader of the padded image]."""
    rng = np.random.default_rng(31)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(SHAPE))
    padded_shape = [d + lo + hi for d, (lo, hi) in zip(SHAPE, paddings)]
    p = b.add_operand(F32, padded_shape)
    pads = b.add_constant(T.TENSOR_INT32, [4, 2], np.array(paddings, np.int32))
    if fill is None:
        b.add_operation(O.PAD, [x, pads], [p])
    else:
        b.add_operation(O.PAD_V2, [x, pads, b.add_scalar(T.FLOAT32, fill)], [p])
    oh = (padded_shape[1] - kernel) // stride + 1
    ow = (padded_shape[2] - kernel) // stride + 1
    consts = {}

    def reader(kind):
        if kind == "pool":
            y = b.add_operand(F32, [padded_shape[0], oh, ow, padded_shape[3]])
            b.add_operation(O.MAX_POOL_2D, [p, i32(2), i32(stride), i32(stride), i32(kernel), i32(kernel), i32(0)], [y])
            return y
        depthwise = kind == "depthwise"
        co = padded_shape[3] if depthwise else 12
        w = rng.uniform(-1, 1, (1, kernel, kernel, co) if depthwise else (co, kernel, kernel, padded_shape[3]))
        bias = rng.uniform(-1, 1, co)
        consts[kind] = (w, bias)
        y = b.add_operand(F32, [padded_shape[0], oh, ow, co])
        args = [p, b.add_constant(F32, list(w.shape), w.astype(np.float32)), b.add_constant(F32, [co], bias.astype(np.float32)),
                i32(2), i32(stride), i32(stride)]
        b.add_operation(O.DEPTHWISE_CONV_2D if depthwise else O.CONV_2D, args + ([i32(1)] if depthwise else []) + [i32(0)],
                        [y])
        return y

    outs = [reader(kind)]
    if second:
        outs.append(reader(second))
    if pad_is_output:
        outs.append(p)
    b.set_outputs(outs)
    return b.finish(), consts


def _pads_left(model):
    return [n for n in prepare_graph(model).nodes if n.type in (O.PAD, O.PAD_V2)]


@pytest.mark.parametrize("kind, paddings, stride", [
    ("conv", ((0, 0), (0, 1), (0, 1), (0, 0)), 2),          # TF Lite's stride-2 SAME as PAD + VALID
    ("conv", ((0, 0), (2, 1), (1, 3), (0, 0)), 1),
    ("depthwise", ((0, 0), (1, 1), (1, 1), (0, 0)), 2),
    ("depthwise", ((0, 0), (0, 2), (3, 0), (0, 0)), 1)])
def test_zero_pad_folds_into_the_convolution(accelerator, kind, paddings, stride):
    model, consts = _model(paddings, kind, stride=stride)
    nodes = prepare_graph(model).nodes
    assert [n.type for n in nodes] == [O.CONV_2D if kind == "conv" else O.DEPTHWISE_CONV_2D]
    p = nodes[0].params
    assert nodes[0].inputs[0] == model.main.input_indexes[0]
    assert (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) == (*paddings[1], *paddings[2])
    assert (p.in_h, p.in_w) == SHAPE[1:3]
    x = np.random.default_rng(37).uniform(-2, 2, SHAPE).astype(np.float32)
    w, bias = consts[kind]
    want = _direct_conv(np.pad(x.astype(np.float64), paddings), w, bias, stride, kind == "depthwise")
    np.testing.assert_allclose(accelerator.prepare_model(model).execute([x])[0], want, rtol=1e-5, atol=1e-5)


def test_a_pad_read_by_two_convolutions_folds_into_both(accelerator):
    paddings = ((0, 0), (1, 1), (0, 2), (0, 0))
    model, consts = _model(paddings, "conv", second="depthwise")
    assert not _pads_left(model)
    x = np.random.default_rng(41).uniform(-2, 2, SHAPE).astype(np.float32)
    got = accelerator.prepare_model(model).execute([x])
    xp = np.pad(x.astype(np.float64), paddings)
    for g, kind in zip(got, ("conv", "depthwise")):
        np.testing.assert_allclose(g, _direct_conv(xp, *consts[kind], 2, kind == "depthwise"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", ["fill", "channels", "batch", "pointwise", "pool", "second_pool", "pad_is_output"])
def test_pads_that_cannot_fold_stay(accelerator, variant):
    paddings = {"channels": ((0, 0), (1, 1), (1, 1), (0, 2)), "batch": ((1, 0), (1, 1), (1, 1), (0, 0))}.get(
        variant, ((0, 0), (0, 1), (0, 1), (0, 0)))
    kwargs = {"fill": {"fill": 1.5}, "pointwise": {"kernel": 1, "stride": 1}, "pool": {"kind": "pool"},
              "second_pool": {"second": "pool"}, "pad_is_output": {"pad_is_output": True}}.get(variant, {})
    model, _ = _model(paddings, **kwargs)
    assert len(_pads_left(model)) == 1
    x = np.random.default_rng(43).uniform(-2, 2, SHAPE).astype(np.float32)
    got = accelerator.prepare_model(model).execute([x])
    want = gd.get_device("reference").prepare_model(model).execute([x])
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_quant8_pad_of_the_zero_point_folds(accelerator):
    # the PAD fills with the input's zero point (real 0), as the convolution's own padding does
    rng = np.random.default_rng(47)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    b = gd.ModelBuilder()
    x = b.add_input(Q8A, list(SHAPE), scale=0.05, zero_point=121)
    paddings = ((0, 0), (0, 1), (0, 1), (0, 0))
    p = b.add_operand(Q8A, [1, 11, 14, 8], scale=0.05, zero_point=121)
    b.add_operation(O.PAD, [x, b.add_constant(T.TENSOR_INT32, [4, 2], np.array(paddings, np.int32))], [p])
    w = b.add_constant(Q8A, [6, 3, 3, 8], rng.integers(0, 256, (6, 3, 3, 8)).astype(np.uint8), scale=0.02,
                       zero_point=128)
    bias = b.add_constant(T.TENSOR_INT32, [6], rng.integers(-500, 500, 6).astype(np.int32), scale=0.001)
    y = b.add_operand(Q8A, [1, 5, 6, 6], scale=0.1, zero_point=100)
    b.add_operation(O.CONV_2D, [p, w, bias, i32(2), i32(2), i32(2), i32(0)], [y])
    b.set_outputs([y])
    model = b.finish()
    assert not _pads_left(model)
    xv = rng.integers(0, 256, SHAPE).astype(np.uint8)
    got = accelerator.prepare_model(model).execute([xv])[0]
    want = gd.get_device("reference").prepare_model(model).execute([xv])[0]
    np.testing.assert_array_equal(got, want)
