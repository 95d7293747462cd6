"""NaN and ±inf through the activations and the pools: each accelerator device gives the reference's
answer, which is AOSP's (the C++ std::min / std::max orders of its CPU kernels)."""
import numpy as np
import pytest

from .harness import run_reference
from .models import F32, OP, In, Out, f32, i32
from .test_activation import F16, check_ops, f16, multi_op

FLT_MAX = float(np.finfo(np.float32).max)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 0.5, -0.5, 7.0, -7.0, 3e38]
_UNARY = (OP.RELU, OP.RELU1, OP.RELU6, OP.LOGISTIC, OP.TANH, OP.HARD_SWISH)


def _unary_entries(t):
    scalar = f16 if t == F16 else f32
    n = len(SPECIAL)
    return [(op, [In(t, (n,))], [Out(t)]) for op in _UNARY] + [(OP.ELU, [In(t, (n,)), scalar(0.5)], [Out(t)])]


def _unary_data(t):
    dtype = np.float16 if t == F16 else np.float32
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, dtype=np.float32).astype(dtype)
    return lambda ins: [x.copy() for _ in ins]


@pytest.mark.parametrize("t", [F32, F16])
def test_unary_special_values(accelerator, t):
    act, _ = check_ops(accelerator, _unary_entries(t), None, data=_unary_data(t))
    relu, relu1, relu6 = (a[:3] for a in act[:3])
    top = np.inf if t == F16 else FLT_MAX                # RELU(+inf) = std::min(inf, FLT_MAX)
    np.testing.assert_array_equal(relu.astype(np.float32), [0, top, 0])
    np.testing.assert_array_equal(relu1, [-1, 1, -1])
    np.testing.assert_array_equal(relu6, [0, 6, 0])
    np.testing.assert_array_equal(act[-1][:3], [0, np.inf, -0.5])   # ELU: NaN → 0, −inf → −alpha


def _pool(op, fuse):
    # 1×4×4×2 input, 2×2 windows, stride 2, VALID padding
    return (op, [In(F32, (1, 4, 4, 2)), i32(2), i32(2), i32(2), i32(2), i32(2), i32(fuse)], [Out(F32)])


def _pool_data(ins):
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2) - 10
    x[0, 0, 0, 0] = np.nan                       # window (0, 0) channel 0: NaN beside finite values
    x[0, 0:2, 2:4, 1] = np.nan                   # window (0, 1) channel 1: NaN only
    x[0, 2, 0, 0] = np.inf                       # window (1, 0) channel 0: +inf
    x[0, 2:4, 2:4, 1] = -np.inf                  # window (1, 1) channel 1: −inf only
    return [x.copy() for _ in ins]


def test_pool_special_values(accelerator):
    entries = [_pool(op, fuse) for op in (OP.MAX_POOL_2D, OP.AVERAGE_POOL_2D, OP.L2_POOL_2D) for fuse in (0, 1, 3)]
    act, _ = check_ops(accelerator, entries, None, data=_pool_data)
    max_none, max_relu = act[0], act[1]
    assert max_none[0, 0, 0, 0] == 0             # NaN never wins a max (window −8, −2, 0)
    assert max_none[0, 0, 1, 1] == -FLT_MAX      # a window of only NaN gives std::max's start value
    assert max_none[0, 1, 0, 0] == FLT_MAX       # +inf clamped to the NONE activation's FLT_MAX
    assert max_none[0, 1, 1, 1] == -FLT_MAX
    assert max_relu[0, 0, 1, 1] == 0
    assert np.isnan(act[3][0, 0, 0, 0])          # an average with a NaN is NaN, through the RELU clamp too
    assert np.isnan(act[4][0, 0, 0, 0])


def test_reference_agrees_with_itself_on_nan_positions():
    """The special-value inputs run on the reference alone (no accelerator needed)."""
    model, ins = multi_op(_unary_entries(F32))
    outs = run_reference(model, _unary_data(F32)(ins))
    assert np.isnan(outs[3][0]) and np.isnan(outs[4][0])   # LOGISTIC / TANH keep NaN


def test_relu_after_an_operation_with_a_fused_activation_keeps_its_nan_rule(accelerator):
    """CONV_2D (fused activation NONE) then RELU: a NaN from the convolution becomes RELU's lower bound
    (AOSP's std::max(0, NaN) = 0) on every device, also where the compiler fuses the RELU into the
    convolution's clamp (FUSED_CLAMP with ACT_NAN_LOW)."""
    import gpu_driver as gd
    from gpu_driver import OperandType as T, OperationType as O

    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    w = b.add_constant(T.TENSOR_FLOAT32, [1, 1, 1, 1], [1.0])
    bias = b.add_constant(T.TENSOR_FLOAT32, [1], [0.0])
    c = b.add_operand(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    one, none = b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, 0)
    b.add_operation(O.CONV_2D, [x, w, bias, one, one, one, none], [c])
    y = b.add_operand(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    b.add_operation(O.RELU, [c], [y])
    b.set_outputs([y])
    model = b.finish()
    feed = [np.array([np.nan, -1.0, 2.0, np.inf], np.float32).reshape(1, 2, 2, 1)]
    for device in (gd.get_device("reference"), accelerator):
        out = device.prepare_model(model).execute(feed)[0].reshape(-1)
        assert out[0] == 0.0 and out[1] == 0.0 and out[2] == 2.0, (device.name, out)


def _producer(b, op, x, shape, act: int = 0):
    """(output, input shapes) of ``op`` with fused activation ``act`` (NONE: a producer a following
    RELU can be fused into) on input ``x`` of ``shape`` (NHWC; ones for weights, zero bias)."""
    import gpu_driver as gd
    from gpu_driver import OperandType as T, OperationType as O

    T32 = T.TENSOR_FLOAT32
    n, h, w, c = shape
    one, none = b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, act)

    def const(dims):
        return b.add_constant(T32, dims, np.ones(int(np.prod(dims)), np.float32))

    bias = b.add_constant(T32, [c], np.zeros(c, np.float32))
    if op == "ADD":
        y = b.add_input(T32, list(shape))
        args, out_shape, code = [x, y, none], list(shape), O.ADD
    elif op == "FULLY_CONNECTED":
        args, out_shape, code = [x, const([c, h * w * c]), bias, none], [n, c], O.FULLY_CONNECTED
    elif op in ("CONV_2D 1x1", "CONV_2D 3x3"):
        k = 1 if op.endswith("1x1") else 3
        args, out_shape, code = [x, const([c, k, k, c]), bias, one, one, one, none], list(shape), O.CONV_2D
    elif op == "DEPTHWISE_CONV_2D":
        args, out_shape, code = [x, const([1, 3, 3, c]), bias, one, one, one, one, none], list(shape), \
            O.DEPTHWISE_CONV_2D
    elif op == "GROUPED_CONV_2D":
        args, out_shape, code = [x, const([c, 3, 3, 1]), bias, one, one, one, b.add_scalar(T.INT32, c), none,
                                 b.add_scalar(T.BOOL, False)], list(shape), O.GROUPED_CONV_2D
    else:
        assert op == "TRANSPOSE_CONV_2D", op
        dims = b.add_constant(T.TENSOR_INT32, [4], np.array(shape, np.int32))
        args, out_shape, code = [x, const([c, 3, 3, c]), bias, dims, one, one, one, none,
                                 b.add_scalar(T.BOOL, False)], list(shape), O.TRANSPOSE_CONV_2D
    out = b.add_operand(T32, out_shape)
    b.add_operation(code, args, [out])
    assert isinstance(b, gd.ModelBuilder)
    return out, out_shape


_PRODUCERS = ["ADD", "FULLY_CONNECTED", "CONV_2D 1x1", "CONV_2D 3x3", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D",
              "TRANSPOSE_CONV_2D"]


@pytest.mark.parametrize("channels", [2, 16])
@pytest.mark.parametrize("relu", ["RELU", "RELU1", "RELU6", "HARD_SWISH"])
@pytest.mark.parametrize("producer", _PRODUCERS)
def test_relu_fused_into_each_producer_keeps_its_nan_rule(accelerator, producer, relu, channels):
    """A float RELU / RELU1 / RELU6 / HARD_SWISH after each kind of producer with a fused activation:
    the compiler fuses it (no such node is left), and NaNs, infinities and values beyond the bounds come
    out as the reference device computes them unfused: a NaN gives a RELU's lower bound; HARD_SWISH
    gets finite values across its three pieces.  16 channels: the epilogues that store whole vectors."""
    import gpu_driver as gd
    from gpu_driver import OperandType as T, OperationType as O
    from gpu_driver.compiler.pipeline import prepare_graph

    shape = (1, 3, 3, channels)
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, list(shape))
    mid, out_shape = _producer(b, producer, x, shape)
    y = b.add_operand(T.TENSOR_FLOAT32, out_shape)
    b.add_operation(O[relu], [mid], [y])
    b.set_outputs([y])
    model = b.finish()
    assert O[relu] not in [node.type for node in prepare_graph(model).nodes]
    if relu == "HARD_SWISH":   # its three pieces: 0 below -3, x·(x + 3)/6 between, x above 3
        values = np.array([-4.0, -2.5, -1.0, 0.0, 0.5, 2.0, 3.5, 5.0, -0.25], np.float32) / 2
    else:
        values = np.array([np.nan, 0.25, -3.0, np.inf, -np.inf, 9.0, -0.5, 2.0, 0.75], np.float32)
    feed = [np.resize(values, shape).astype(np.float32)]
    if producer == "ADD":
        feed.append(np.resize(values[::-1], shape).astype(np.float32))
    got = accelerator.prepare_model(model).execute(feed)[0]
    want = gd.get_device("reference").prepare_model(model).execute(feed)[0]
    if relu == "HARD_SWISH":
        assert np.isfinite(want).all()
    else:
        lo = {"RELU": 0.0, "RELU1": -1.0, "RELU6": 0.0}[relu]
        assert not np.isnan(want).any() and (want == lo).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("act", [1, 2, 3])
@pytest.mark.parametrize("producer", ["FULLY_CONNECTED", "CONV_2D 1x1", "CONV_2D 3x3", "DEPTHWISE_CONV_2D"])
def test_a_producers_own_activation_lets_nan_through(accelerator, producer, act):
    """The producer's own fused RELU / RELU1 / RELU6 (std::min(std::max(x, lo), hi)) keeps a NaN NaN and
    clamps infinities, in the scalar and the whole-vector epilogues (2 and 16 channels), as the
    reference device computes it."""
    import gpu_driver as gd
    from gpu_driver import OperandType as T

    values = np.array([np.nan, 0.25, -3.0, np.inf, -np.inf, 9.0, -0.5, 2.0, 0.75], np.float32)
    for channels in (2, 16):
        shape = (1, 3, 3, channels)
        b = gd.ModelBuilder()
        x = b.add_input(T.TENSOR_FLOAT32, list(shape))
        out, _ = _producer(b, producer, x, shape, act)
        b.set_outputs([out])
        model = b.finish()
        feed = [np.resize(values, shape).astype(np.float32)]
        got = accelerator.prepare_model(model).execute(feed)[0]
        want = gd.get_device("reference").prepare_model(model).execute(feed)[0]
        assert np.isnan(want).any(), (producer, channels)
        np.testing.assert_array_equal(got, want)
