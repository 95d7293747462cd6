"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D on each accelerator device vs the
reference: odd sizes, batch > 1, strides, dilation, explicit and implicit (SAME/VALID) padding, every
fused activation, zero points.  Quantized results: exact.  Every convolution runs every type
(float16, quant8 asymm and signed, per-channel filters), both layouts, and filters and biases given
as model inputs."""
import numpy as np
import pytest

import gpu_driver
from gpu_driver.hal.model import SymmPerChannelQuantParams

from .harness import check_op, compare
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, Scalar, i32, single_op

# (n, h, w, ci, co_or_multiplier, kh, kw, stride, dilation, padding, act); padding = 4-tuple or code
CASES = [
    (1, 5, 6, 3, 5, 3, 3, 1, 1, (1, 1, 1, 1), 0),
    (2, 7, 5, 4, 9, 2, 3, 2, 1, (0, 1, 1, 0), 1),
    (1, 8, 8, 5, 33, 1, 1, 1, 1, (0, 0, 0, 0), 3),      # 1x1: GEMM path, 33 channels = partial tile
    (2, 9, 9, 3, 4, 3, 3, 1, 2, (2, 2, 1, 1), 2),      # dilation
    (3, 6, 7, 2, 6, 3, 2, 2, 1, 1, 0),                 # SAME
    (1, 10, 9, 6, 7, 5, 3, 3, 1, 2, 3),                # VALID
]

#: images large enough that most register tiles of conv.cl lie inside them (its unmasked interior
#: path) beside border tiles: 3-channel first layers (channel unrolling), 5x5 stride 2, dilation,
#: partial pixel blocks, blocks of 16, 8 and 4 channels and the scalar 24-channel block
INTERIOR_CASES = [
    (2, 20, 23, 3, 16, 3, 3, 2, 1, 1, 3),
    (1, 17, 19, 3, 24, 5, 5, 2, 1, (2, 1, 2, 1), 1),
    (1, 14, 15, 12, 40, 3, 3, 1, 2, (2, 2, 2, 2), 1),
    (2, 12, 13, 20, 20, 3, 3, 1, 1, 1, 2),
    (1, 16, 16, 9, 4, 3, 2, 1, 1, 2, 0),
]


def _spatial(padding, s, act, d):
    pad = [i32(v) for v in padding] if isinstance(padding, tuple) else [i32(padding)]
    return pad, [i32(s), i32(s)], [i32(act), Scalar(OT.BOOL, False), i32(d), i32(d)]


def _weights(rng, quant, shape):
    if quant:
        return Const(Q8A, rng.integers(0, 256, shape), 0.03, 120)
    return Const(F32, rng.uniform(-1, 1, shape))


def _bias(rng, quant, n):
    return Const(I32T, rng.integers(-800, 800, (n,)), 0.5 * 0.03) if quant else Const(F32, rng.uniform(-1, 1, (n,)))


def _check_conv2d(accelerator, quant: bool, case: tuple, rng) -> None:
    """CONV_2D of ``case`` (float32 or quant8) on ``accelerator`` against the reference."""
    n, h, w, ci, co, kh, kw, s, d, padding, act = case
    x = In(Q8A, (n, h, w, ci), 0.5, 127) if quant else In(F32, (n, h, w, ci))
    pad, strides, tail = _spatial(padding, s, act, d)
    out = Out(Q8A, 0.7, 100) if quant else Out(F32)
    check_op(accelerator, OP.CONV_2D,
             [x, _weights(rng, quant, (co, kh, kw, ci)), _bias(rng, quant, co), *pad, *strides, *tail],
             [out], rng, what=str(case))


#: first layers of few input channels, whose interior tiles broadcast each filter row's inputs once
#: (conv.cl ROW_CACHE, on a device of one-register 16-lane vectors): strides 1 and 2, 3×3 and 5×5,
#: dilation, 16 and 24 output channels
ROW_CACHE_CASES = [
    (2, 20, 23, 3, 16, 3, 3, 2, 1, 1, 3),
    (1, 17, 19, 3, 24, 5, 5, 2, 1, (2, 1, 2, 1), 1),
    (1, 15, 17, 4, 16, 3, 3, 1, 2, (2, 2, 2, 2), 0),
]


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("one_register", [True, False], ids=["row_cache", "no_row_cache"])
@pytest.mark.parametrize("case", ROW_CACHE_CASES)
def test_conv2d_row_cache(accelerator, monkeypatch, quant, one_register, case):
    """With and without LaunchTuning.one_register_vectors forced, whatever the host's vectors."""
    monkeypatch.setattr(accelerator.backend.tuning, "one_register_vectors", one_register)
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", False)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    _check_conv2d(accelerator, quant, case, np.random.default_rng(17))


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("case", CASES + INTERIOR_CASES)
def test_conv2d(accelerator, quant, case):
    _check_conv2d(accelerator, quant, case, np.random.default_rng(11))


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("case", CASES + INTERIOR_CASES)
def test_depthwise(accelerator, quant, case):
    rng = np.random.default_rng(12)
    n, h, w, ci, mult, kh, kw, s, d, padding, act = case
    mult = 1 + mult % 3
    x = In(Q8A, (n, h, w, ci), 0.5, 127) if quant else In(F32, (n, h, w, ci))
    pad, strides, tail = _spatial(padding, s, act, d)
    out = Out(Q8A, 0.7, 100) if quant else Out(F32)
    check_op(accelerator, OP.DEPTHWISE_CONV_2D,
             [x, _weights(rng, quant, (1, kh, kw, ci * mult)), _bias(rng, quant, ci * mult),
              *pad, *strides, i32(mult), *tail], [out], rng, what=str(case))


# float32 depthwise, multiplier 1, channels a multiple of 16: the 16-channel vector kernel
# (conv_depthwise_vector.cl); output widths not a multiple of its pixel blocks (on AVX-512 8 pixels
# on rows of at most 16, else 4)
VECTOR_DEPTHWISE_CASES = [
    (1, 9, 11, 32, 1, 3, 3, 1, 1, 1, 0),                # SAME, 11 columns: a partial pixel block
    (1, 5, 19, 16, 1, 3, 3, 1, 1, 1, 0),                # SAME, 19 columns: 4-pixel blocks, a partial one
    (2, 12, 13, 48, 1, 3, 3, 2, 1, (1, 1, 0, 1), 3),    # stride 2, uneven padding, RELU6
    (1, 10, 10, 16, 1, 3, 3, 1, 2, (2, 2, 2, 2), 1),    # dilation 2
    (1, 7, 9, 64, 1, 5, 5, 1, 1, 2, 2),                 # 5×5 VALID, RELU1
]


@pytest.mark.parametrize("lanes", [16, 4], ids=["cpu_lanes", "gpu_lanes"])
@pytest.mark.parametrize("case", VECTOR_DEPTHWISE_CASES)
def test_depthwise_vector_kernel(accelerator, monkeypatch, case, lanes):
    """With each device's widest vector (LaunchTuning.depthwise_lanes) forced: an AVX-512 CPU's 16
    channels per work item (one-register vectors: 8-pixel tiles on narrow rows), a GPU's 4."""
    monkeypatch.setattr(accelerator.backend.tuning, "depthwise_lanes", lanes)
    monkeypatch.setattr(accelerator.backend.tuning, "one_register_vectors", lanes == 16)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    rng = np.random.default_rng(13)
    n, h, w, ci, _, kh, kw, s, d, padding, act = case
    pad, strides, tail = _spatial(padding, s, act, d)
    check_op(accelerator, OP.DEPTHWISE_CONV_2D,
             [In(F32, (n, h, w, ci)), _weights(rng, False, (1, kh, kw, ci)), _bias(rng, False, ci),
              *pad, *strides, i32(1), *tail], [Out(F32)], rng, what=str(case))


@pytest.mark.parametrize("quant", [False, True])
@pytest.mark.parametrize("candidate", [0, 1, 2, 3])
@pytest.mark.parametrize("case", INTERIOR_CASES[:3] + [(1, 9, 28, 16, 16, 3, 3, 1, 1, 1, 3),
                                                      (1, 15, 26, 3, 32, 3, 3, 2, 1, 1, 3)])
def test_conv2d_register_tiles(accelerator, monkeypatch, case, candidate, quant):
    """Where a vector block's accumulators are one register each (forced here on every device),
    conv.cl's vector tiles take 8 pixels or 4, and with more than 16 output channels also two
    16-channel vectors per pixel: each forced in turn (partial pixel blocks: 12, 10 and 13 output
    columns, 7 for 14 and 28; 24 and 40 channels: a partial second vector or block)."""
    from gpu_driver.compiler import autotune

    counts = []

    def forced(key, count, flops, trial):
        counts.append(count)
        return min(candidate, count - 1)

    monkeypatch.setattr(autotune, "choose", forced)
    monkeypatch.setattr(accelerator.backend.tuning, "one_register_vectors", True)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    _check_conv2d(accelerator, quant, case, np.random.default_rng(17))
    assert counts == [4 if case[4] > 16 else 2]


def test_nchw_dilated_hand_worked(accelerator):
    # 3x3 image 1..9 (NCHW), 2x2 filter of ones dilated by 2 taps the four corners: 1 + 3 + 7 + 9 = 20,
    # + bias 0.5; depthwise with multiplier 2 (filter 1 and 2 everywhere) gives 20.5 and 40.5
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    layout = [i32(0), Scalar(OT.BOOL, True), i32(2), i32(2)]
    conv = [In(F32, x.shape), Const(F32, np.ones((1, 2, 2, 1))), Const(F32, [0.5]), *[i32(0)] * 4, i32(1), i32(1),
            *layout]
    act, _ = check_op(accelerator, OP.CONV_2D, conv, [Out(F32)], data=[x])
    np.testing.assert_array_equal(act[0], np.full((1, 1, 1, 1), 20.5, np.float32))
    dw = [In(F32, x.shape), Const(F32, np.tile([1.0, 2.0], 4).reshape(1, 2, 2, 2)), Const(F32, [0.5, 0.5]),
          *[i32(0)] * 4, i32(1), i32(1), i32(2), *layout]
    act, _ = check_op(accelerator, OP.DEPTHWISE_CONV_2D, dw, [Out(F32)], data=[x])
    np.testing.assert_array_equal(act[0], np.array([20.5, 40.5], np.float32).reshape(1, 2, 1, 1))


# ---- GROUPED_CONV_2D and TRANSPOSE_CONV_2D: every type ------------------------------------------------

F16, Q8AS, PC8 = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_QUANT8_SYMM_PER_CHANNEL
KINDS = ["float32", "float16", "quant8", "quant8_signed", "perchannel", "perchannel_signed"]
# (input, filter, output) quantization of the 8-bit kinds: (scale, zero point)
QUANT = {Q8A: ((0.5, 127), (0.03, 120), (0.7, 100)), Q8AS: ((0.5, -1), (0.03, 5), (0.7, -20))}


def _general_model(op, kind, x_shape, w_shape, scalars, rng, weights_as_inputs=False, channel_dim=0):
    """A one-op model (input, filter, bias, ``scalars``) and its random feeds.  ``scalars``: ints (INT32),
    bools (BOOL) or a list (a TENSOR_INT32 constant: TRANSPOSE_CONV_2D's output shape).  The filter's
    output channels are its dimension ``channel_dim`` (3 for DEPTHWISE_CONV_2D)."""
    m = gpu_driver.ModelBuilder()
    feeds = []

    def tensor(type, value, scale=0.0, zp=0, cq=None, as_input=True):
        if as_input:
            feeds.append(value)
            return m.add_input(type, value.shape, scale, zp, cq)
        return m.add_constant(type, value.shape, value, scale, zp, cq)

    co = w_shape[channel_dim]
    if kind.startswith("float"):
        t = F16 if kind == "float16" else F32
        dtype = np.float16 if t == F16 else np.float32
        args = [tensor(t, rng.uniform(-1, 1, x_shape).astype(dtype)),
                tensor(t, rng.uniform(-1, 1, w_shape).astype(dtype), as_input=weights_as_inputs),
                tensor(t, rng.uniform(-1, 1, co).astype(dtype), as_input=weights_as_inputs)]
        out = m.add_operand(t, ())
    else:
        t = Q8AS if kind.endswith("signed") else Q8A
        (s_in, z_in), (s_w, z_w), (s_out, z_out) = QUANT[t]
        lo, dtype = (-128, np.int8) if t == Q8AS else (0, np.uint8)
        x = tensor(t, rng.integers(lo, lo + 256, x_shape).astype(dtype), s_in, z_in)
        if kind.startswith("perchannel"):
            scales = [float(v) for v in rng.uniform(0.01, 0.05, co)]
            w = tensor(PC8, rng.integers(-127, 128, w_shape).astype(np.int8), cq=SymmPerChannelQuantParams(scales, channel_dim),
                       as_input=weights_as_inputs)
            b_scale = 0.0
        else:
            w = tensor(t, rng.integers(lo, lo + 256, w_shape).astype(dtype), s_w, z_w, as_input=weights_as_inputs)
            b_scale = s_in * s_w
        b = tensor(I32T, rng.integers(-800, 800, co).astype(np.int32), b_scale, as_input=weights_as_inputs)
        args = [x, w, b]
        out = m.add_operand(t, (), s_out, z_out)
    for v in scalars:
        if isinstance(v, list):
            args.append(m.add_constant(I32T, (len(v),), np.array(v, np.int32)))
        else:
            args.append(m.add_scalar(OT.BOOL if isinstance(v, bool) else OT.INT32, v))
    m.add_operation(op, args, [out])
    m.set_outputs([out])
    return m.finish(), feeds


def _check_general(accelerator, op, kind, x_shape, w_shape, scalars, rng, weights_as_inputs=False, what="",
                   channel_dim=0):
    model, feeds = _general_model(op, kind, x_shape, w_shape, scalars, rng, weights_as_inputs, channel_dim)
    assert all(accelerator.get_supported_operations(model)), f"{op.name} {kind} {what}: not supported"
    tol = dict(atol=1e-2, rtol=1e-2) if kind == "float16" else dict(atol=1e-4)
    compare(accelerator, model, feeds, what=f"{op.name} {kind} {what}", **tol)


def _image(n, h, w, c, nchw):
    return (n, c, h, w) if nchw else (n, h, w, c)


GROUPED_CASES = [
    # (n, h, w, ci, co, groups, kh, kw, stride (w, h), padding: 4-tuple or code, act, nchw)
    (1, 5, 6, 4, 6, 2, 3, 3, (1, 1), (1, 1, 1, 1), 0, False),
    (2, 7, 5, 6, 9, 3, 2, 3, (2, 1), 1, 1, True),
    (1, 6, 6, 3, 3, 3, 3, 2, (2, 2), 2, 3, False),
]


def _breadth(cases):
    """(case, kind) pairs: every kind on the first case, one quantized kind on the others; the rest slow."""
    return [pytest.param(c, k, marks=() if i == 0 or k == "quant8_signed" else pytest.mark.slow)
            for i, c in enumerate(cases) for k in KINDS]


@pytest.mark.parametrize("case,kind", _breadth(GROUPED_CASES))
def test_grouped_conv2d(accelerator, kind, case):
    n, h, w, ci, co, g, kh, kw, (sw, sh), padding, act, nchw = case
    pad = list(padding) if isinstance(padding, tuple) else [padding]
    _check_general(accelerator, OP.GROUPED_CONV_2D, kind, _image(n, h, w, ci, nchw), (co, kh, kw, ci // g),
                   [*pad, sw, sh, g, act, nchw], np.random.default_rng(21), what=str(case))


CONV_KIND_CASES = [
    # (n, h, w, ci, co (depthwise: multiplier), kh, kw, stride (w, h), padding: 4-tuple or code, act, nchw,
    #  dilation (w, h), filter and bias as model inputs)
    (1, 6, 7, 3, 4, 3, 3, (1, 1), (1, 1, 1, 1), 0, True, (1, 1), False),
    (2, 7, 5, 2, 2, 2, 3, (2, 1), 1, 1, False, (2, 1), True),
    (1, 9, 8, 4, 3, 3, 2, (1, 2), 2, 3, True, (2, 3), True),
]


@pytest.mark.parametrize("case,kind", _breadth(CONV_KIND_CASES))
def test_conv2d_every_kind(accelerator, kind, case):
    n, h, w, ci, co, kh, kw, (sw, sh), padding, act, nchw, (dw, dh), as_inputs = case
    pad = list(padding) if isinstance(padding, tuple) else [padding]
    _check_general(accelerator, OP.CONV_2D, kind, _image(n, h, w, ci, nchw), (co, kh, kw, ci),
                   [*pad, sw, sh, act, nchw, dw, dh], np.random.default_rng(24), as_inputs, what=str(case))


@pytest.mark.parametrize("case,kind", _breadth(CONV_KIND_CASES))
def test_depthwise_every_kind(accelerator, kind, case):
    n, h, w, ci, mult, kh, kw, (sw, sh), padding, act, nchw, (dw, dh), as_inputs = case
    pad = list(padding) if isinstance(padding, tuple) else [padding]
    _check_general(accelerator, OP.DEPTHWISE_CONV_2D, kind, _image(n, h, w, ci, nchw), (1, kh, kw, ci * mult),
                   [*pad, sw, sh, mult, act, nchw, dw, dh], np.random.default_rng(25), as_inputs, what=str(case),
                   channel_dim=3)


TRANSPOSE_CASES = [
    # (n, h, w, ci, co, kh, kw, stride (w, h), padding: (l, r, t, b) or (code, out_h, out_w), act, nchw)
    (1, 3, 4, 2, 3, 3, 3, (2, 2), (1, 1, 0, 2), 0, False),
    (2, 2, 3, 3, 5, 2, 3, (3, 2), (1, 5, 7), 1, True),
    (1, 4, 3, 1, 4, 3, 2, (1, 1), (2, 6, 4), 3, False),
    (1, 3, 3, 2, 2, 4, 4, (2, 3), (2, -1, 0, 1), 2, True),
]


def _transpose_scalars(case):
    n, h, w, ci, co, kh, kw, (sw, sh), padding, act, nchw = case
    if len(padding) == 3:
        code, oh, ow = padding
        pad = [list(_image(n, oh, ow, co, nchw)), code]
    else:
        pad = list(padding)
    return [*pad, sw, sh, act, nchw]


@pytest.mark.parametrize("case,kind", _breadth(TRANSPOSE_CASES))
def test_transpose_conv2d(accelerator, kind, case):
    n, h, w, ci, co, kh, kw, _, _, _, nchw = case
    _check_general(accelerator, OP.TRANSPOSE_CONV_2D, kind, _image(n, h, w, ci, nchw), (co, kh, kw, ci),
                   _transpose_scalars(case), np.random.default_rng(22), what=str(case))


UPSAMPLING_CASES = [
    # (n, h, w, ci, co, kh, kw, act): stride = kernel, no padding, at most 2 output channels
    # (conv_transpose_upsample.cl), as a segmentation model's last layer (selfie_segmentation: 16 → 1)
    (1, 4, 5, 16, 1, 2, 2, 0),
    (2, 3, 4, 5, 2, 3, 2, 1),
]


@pytest.mark.parametrize("case", UPSAMPLING_CASES)
def test_transpose_conv_upsampling(accelerator, case):
    n, h, w, ci, co, kh, kw, act = case
    _check_general(accelerator, OP.TRANSPOSE_CONV_2D, "float32", (n, h, w, ci), (co, kh, kw, ci),
                   [0, 0, 0, 0, kw, kh, act, False], np.random.default_rng(26), what=str(case))


@pytest.mark.parametrize("kind", ["perchannel_signed", pytest.param("float16", marks=pytest.mark.slow)])
def test_weights_as_inputs(accelerator, kind):
    rng = np.random.default_rng(23)
    _check_general(accelerator, OP.GROUPED_CONV_2D, kind, (1, 5, 5, 4), (4, 3, 3, 2), [1, 1, 1, 2, 1, False], rng,
                   weights_as_inputs=True)
    case = TRANSPOSE_CASES[0]
    _check_general(accelerator, OP.TRANSPOSE_CONV_2D, kind, (1, 3, 4, 2), (3, 3, 3, 2), _transpose_scalars(case),
                   rng, weights_as_inputs=True)


def test_transpose_conv_float_range(accelerator):
    # activation NONE clamps to ±FLT_MAX as AOSP; NaN stays NaN (reference and kernel alike)
    x = np.array([3e38, -3e38, np.nan, 1.0], np.float32).reshape(1, 1, 4, 1)
    args = [In(F32, x.shape), Const(F32, np.full((1, 1, 1, 1), 2.0)), Const(F32, [0.0]), i32(0), i32(0), i32(0),
            i32(0), i32(1), i32(1), i32(0), Scalar(OT.BOOL, False)]
    act, exp = check_op(accelerator, OP.TRANSPOSE_CONV_2D, args, [Out(F32)], data=[x])
    fmax = np.finfo(np.float32).max
    assert act[0].ravel()[0] == fmax and act[0].ravel()[1] == -fmax and np.isnan(act[0].ravel()[2])


# quant8 depthwise, multiplier 1, channels a multiple of 4: the vector kernel over the input centred on
# its zero point (sums exact in float), then conv_requantize.cl; every 8-bit kind, padding read as the
# zero point, stride 2 with uneven padding, dilation
QUANT_VECTOR_DEPTHWISE_CASES = [
    # (n, h, w, c, kh, kw, stride (w, h), padding: 4-tuple or code, act, dilation (w, h))
    (1, 9, 11, 32, 3, 3, (1, 1), 1, 0, (1, 1)),
    (2, 12, 13, 48, 3, 3, (2, 2), (1, 1, 0, 1), 3, (1, 1)),
    (1, 10, 10, 8, 3, 3, (1, 1), (2, 2, 2, 2), 1, (2, 2)),
]


@pytest.mark.parametrize("kind", ["quant8", "quant8_signed", "perchannel", "perchannel_signed"])
@pytest.mark.parametrize("case", QUANT_VECTOR_DEPTHWISE_CASES)
def test_quantized_depthwise_vector_kernel(accelerator, kind, case):
    n, h, w, c, kh, kw, (sw, sh), padding, act, (dw, dh) = case
    pad = list(padding) if isinstance(padding, tuple) else [padding]
    _check_general(accelerator, OP.DEPTHWISE_CONV_2D, kind, (n, h, w, c), (1, kh, kw, c),
                   [*pad, sw, sh, 1, act, False, dw, dh], np.random.default_rng(26), what=str(case), channel_dim=3)


def test_quantized_convolution_chain_reads_the_requantization_centred(accelerator):
    # quant8 1x1 conv -> depthwise -> 1x1 conv -> 3x3 conv: each requantisation (conv_requantize.cl
    # after the depthwise and 3x3 kernels, the GEMM's epilogue for the 1x1 ones) also writes its output
    # centred for the next convolution, so only the model input is centred by conv_centre.cl; every
    # value equals the reference device's
    from gpu_driver.trace import trace_execution

    rng = np.random.default_rng(31)
    b = gpu_driver.ModelBuilder()

    def q8(shape, scale, zp):
        return b.add_operand(Q8A, list(shape), scale=scale, zero_point=zp)

    def conv(x, cin, cout, k, scale_in, out, depthwise=False):
        w_shape = (1, k, k, cout) if depthwise else (cout, k, k, cin)
        w = b.add_constant(Q8A, list(w_shape), rng.integers(0, 256, w_shape).astype(np.uint8), scale=0.02,
                           zero_point=128)
        bias = b.add_constant(I32T, [cout], rng.integers(-2000, 2000, cout).astype(np.int32), scale=scale_in * 0.02)
        pad = b.add_scalar(OT.INT32, 1)
        one = b.add_scalar(OT.INT32, 1)
        relu6 = b.add_scalar(OT.INT32, 3)
        if depthwise:
            b.add_operation(OP.DEPTHWISE_CONV_2D, [x, w, bias, pad, one, one, b.add_scalar(OT.INT32, 1), relu6], [out])
        else:
            b.add_operation(OP.CONV_2D, [x, w, bias, pad, one, one, relu6], [out])
        return out

    x = b.add_input(Q8A, [1, 9, 9, 8], scale=0.05, zero_point=120)
    h1 = conv(x, 8, 16, 1, 0.05, q8((1, 9, 9, 16), 0.03, 3))
    h2 = conv(h1, 16, 16, 3, 0.03, q8((1, 9, 9, 16), 0.04, 0), depthwise=True)
    h3 = conv(h2, 16, 8, 1, 0.04, q8((1, 9, 9, 8), 0.06, 10))
    y = conv(h3, 8, 4, 3, 0.06, q8((1, 9, 9, 4), 0.05, 7))
    b.set_outputs([y])
    model = b.finish()
    data = [rng.integers(0, 256, (1, 9, 9, 8)).astype(np.uint8)]
    act, exp = compare(accelerator, model, data, what="quant8 convolution chain")
    assert 10 < len(np.unique(exp[0])) and exp[0].min() < exp[0].max()  # not saturated
    prepared = accelerator.prepare_model(model)
    templates = [e["args"]["template"] for e in trace_execution(prepared, data)["traceEvents"]
                 if e.get("ph") == "X" and e.get("tid") == 2]
    assert templates.count("gemm.cl") == 2 and templates.count("conv_requantize.cl") == 2, templates
    assert templates.count("conv_centre.cl") == 1, templates


def _conv_params(h, k, s, pad_code):
    """The params CONV_2D's definition derives for a 1×h×h×3 input, 24 filters k×k, stride s."""
    from gpu_driver import ModelBuilder, OperandType as T, OperationType as O
    from gpu_driver.compiler.pipeline import prepare_graph

    b = ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [1, h, h, 3])
    oh = -(-h // s) if pad_code == 1 else (h - k) // s + 1
    out = b.add_operand(T.TENSOR_FLOAT32, [1, oh, oh, 24])
    b.add_operation(O.CONV_2D, [x, b.add_constant(T.TENSOR_FLOAT32, [24, k, k, 3], np.ones((24, k, k, 3), np.float32)),
                                b.add_constant(T.TENSOR_FLOAT32, [24], np.zeros(24, np.float32)),
                                b.add_scalar(T.INT32, pad_code), b.add_scalar(T.INT32, s), b.add_scalar(T.INT32, s),
                                b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([out])
    return prepare_graph(b.finish()).nodes[0].params


def test_border_share_of_the_tiles():
    from gpu_driver.ops.conv import PREPAD_BORDER_SHARE, _border_share

    # BlazeFace's first layer: 128², 5×5, stride 2, SAME (1 before, 2 after): rows 1-62 of 64 and
    # pixel blocks 1-6 of 8 lie inside, 1 − 62·6 / (64·8)
    face = _conv_params(128, 5, 2, 1)
    assert (face.pad_top, face.pad_left) == (1, 1)
    assert _border_share(face, 8) == pytest.approx(1 - 62 * 6 / (64 * 8)) and _border_share(face, 8) >= PREPAD_BORDER_SHARE
    # 224², 3×3, stride 2, SAME pads only after: rows 0-110 of 112, blocks 0-12 of 14
    hand = _conv_params(224, 3, 2, 1)
    assert (hand.pad_top, hand.pad_left) == (0, 0)
    assert _border_share(hand, 8) == pytest.approx(1 - 111 * 13 / (112 * 14)) and _border_share(hand, 8) < PREPAD_BORDER_SHARE
    assert _border_share(_conv_params(131, 5, 2, 2), 8) == 0.0      # VALID, whole blocks
