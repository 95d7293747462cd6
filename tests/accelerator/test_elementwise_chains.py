"""Elementwise chain fusion (compiler/elementwise_chain.py fuse_elementwise_chains): float32 chains of
ADD/SUB/MUL/DIV/MAXIMUM/MINIMUM, RELU*/LOGISTIC/TANH/FLOOR and ABS/EXP/LOG/NEG/RSQRT/SIN/SQRT become
one generated kernel; branching intermediates, model outputs and quant8 chains are not fused across;
results match the reference within the CTS float tolerance and the unfused kernels bit for bit
(NaN, infinities and the ±FLT_MAX bound of ADD/SUB/MUL/DIV included)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.elementwise_chain import ElementwiseChain
from gpu_driver.compiler.codegen import generate
from gpu_driver.compiler.pipeline import lower, prepare_graph

from .helpers import opencl_device, reference_outputs
from .ops.harness import F32_ATOL, F32_RTOL

F32 = T.TENSOR_FLOAT32
SHAPE = (2, 5, 3, 4)


def _six_op_chain(rng, out_is_intermediate=False):
    """6 ops: x → ADD(const, same shape) → RELU6 → MUL(const [4] broadcast, fused RELU1) → TANH →
    ADD(input y [1,5,1,4] broadcast) → LOGISTIC; ``out_is_intermediate``: the MUL output is a model
    output too."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, SHAPE)
    y = b.add_input(F32, [1, 5, 1, 4])
    none = b.add_scalar(T.INT32, 0)
    relu1 = b.add_scalar(T.INT32, 2)

    def op(kind, ins):
        out = b.add_operand(F32, SHAPE)
        b.add_operation(kind, ins, [out])
        return out

    c = b.add_constant(F32, SHAPE, rng.uniform(-4, 4, SHAPE).astype(np.float32))
    v = op(O.ADD, [x, c, none])
    v = op(O.RELU6, [v])
    v = op(O.MUL, [b.add_constant(F32, [4], rng.uniform(-2, 2, 4).astype(np.float32)), v, relu1])
    mid = v
    v = op(O.TANH, [v])
    v = op(O.ADD, [v, y, none])
    v = op(O.LOGISTIC, [v])
    outs = [mid, v] if out_is_intermediate else [v]
    b.set_outputs(outs)
    return b.finish()


def _inputs(rng):
    return [rng.uniform(-6, 6, SHAPE).astype(np.float32), rng.uniform(-2, 2, (1, 5, 1, 4)).astype(np.float32)]


def _check(model, inputs):
    pm = opencl_device().prepare_model(model)
    for a, e in zip(pm.execute(inputs), reference_outputs(model, inputs)):
        np.testing.assert_allclose(a, e, atol=F32_ATOL, rtol=F32_RTOL)
    return pm


def test_six_op_chain_is_one_kernel():
    rng = np.random.default_rng(11)
    model = _six_op_chain(rng)
    pm = _check(model, _inputs(rng))
    assert pm.memory_plan["kernels"] == 1
    assert pm.memory_plan["peak_bytes"] == 0  # no intermediate is stored
    (node,) = prepare_graph(model).nodes
    assert isinstance(node, ElementwiseChain)
    # the RELU6 is fused into the ADD before it, which then clamps with RELU6's NaN rule
    assert [s.type for s in node.steps] == [O.ADD, O.MUL, O.TANH, O.ADD, O.LOGISTIC]
    first = node.steps[0].params
    assert (first.activation, first.nan_to_low) == (3, True)
    src = generate(lower(prepare_graph(model)).kernels, opencl_device().backend.compiler.prelude)
    assert src.count("KERNEL void gd") == 1 and "v = gd_tanh(v);" in src


def test_hard_swish_in_a_chain_and_fused_into_its_add():
    """TANH → HARD_SWISH → ADD → HARD_SWISH: the second HARD_SWISH is fused into the ADD before it, and
    the chain is one kernel of three steps giving the reference's values."""
    rng = np.random.default_rng(5)
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(SHAPE))
    y = b.add_input(F32, list(SHAPE))

    def op(code, args):
        out = b.add_operand(F32, list(SHAPE))
        b.add_operation(code, args, [out])
        return out

    v = op(O.HARD_SWISH, [op(O.TANH, [x])])
    v = op(O.HARD_SWISH, [op(O.ADD, [v, y, b.add_scalar(T.INT32, 0)])])
    b.set_outputs([v])
    model = b.finish()
    pm = _check(model, [rng.uniform(-6, 6, SHAPE).astype(np.float32), rng.uniform(-6, 6, SHAPE).astype(np.float32)])
    assert pm.memory_plan["kernels"] == 1
    (node,) = prepare_graph(model).nodes
    assert [s.type for s in node.steps] == [O.TANH, O.HARD_SWISH, O.ADD] and node.steps[2].params.hard_swish


def test_floor_and_relu_chain_with_broadcast_head():
    """Head ADD broadcasts both operands; FLOOR/RELU/RELU1 follow (plain-text values checked too)."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, [3, 1])
    y = b.add_input(F32, [1, 4])
    t = b.add_operand(F32, [3, 4])
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [t])
    f = b.add_operand(F32, [3, 4])
    b.add_operation(O.FLOOR, [t], [f])
    r = b.add_operand(F32, [3, 4])
    b.add_operation(O.RELU1, [f], [r])
    o = b.add_operand(F32, [3, 4])
    b.add_operation(O.RELU, [r], [o])
    b.set_outputs([o])
    model = b.finish()
    xv = np.array([[-1.5], [0.25], [2.0]], np.float32)
    yv = np.array([[0.0, -0.5, 1.0, -3.0]], np.float32)
    pm = _check(model, [xv, yv])
    assert pm.memory_plan["kernels"] == 1
    expected = np.clip(np.floor(xv + yv), -1, 1).clip(0, None)
    np.testing.assert_array_equal(pm.execute([xv, yv])[0], expected)


def test_branching_intermediate_is_not_fused_across():
    """t = x + c feeds TANH and MUL: t is stored; TANH and MUL, each read only by the ADD, join it and
    the LOGISTIC in one kernel (a tree), the TANH's result stored while the MUL is computed."""
    rng = np.random.default_rng(12)
    b = gd.ModelBuilder()
    x = b.add_input(F32, SHAPE)
    none = b.add_scalar(T.INT32, 0)

    def op(kind, ins):
        out = b.add_operand(F32, SHAPE)
        b.add_operation(kind, ins, [out])
        return out

    t = op(O.ADD, [x, b.add_constant(F32, SHAPE, rng.uniform(-1, 1, SHAPE).astype(np.float32)), none])
    a = op(O.TANH, [t])
    m = op(O.MUL, [t, b.add_constant(F32, [1], np.array([0.5], np.float32)), none])
    s = op(O.ADD, [a, m, none])
    y = op(O.LOGISTIC, [s])
    b.set_outputs([y])
    model = b.finish()
    pm = _check(model, [rng.uniform(-3, 3, SHAPE).astype(np.float32)])
    assert pm.memory_plan["kernels"] == 2  # ADD (branching output), [TANH, MUL, ADD, LOGISTIC]
    nodes = prepare_graph(model).nodes
    chains = [n for n in nodes if isinstance(n, ElementwiseChain)]
    assert [[s.type for s in c.steps] for c in chains] == [[O.TANH, O.MUL, O.ADD, O.LOGISTIC]]
    assert chains[0].inputs[0] == t and nodes[0].outputs == [t]
    src = generate(lower(prepare_graph(model)).kernels, opencl_device().backend.compiler.prelude)
    assert "const float t0 = v;" in src and "v = t0 + v;" in src


def test_model_output_intermediate_is_not_fused_across():
    rng = np.random.default_rng(13)
    model = _six_op_chain(rng, out_is_intermediate=True)
    pm = _check(model, _inputs(rng))
    assert pm.memory_plan["kernels"] == 2


def test_quant8_chain_stays_unfused():
    b = gd.ModelBuilder()
    q = T.TENSOR_QUANT8_ASYMM
    x = b.add_input(q, [2, 3], 0.5, 10)
    c = b.add_constant(q, [2, 3], np.arange(6, dtype=np.uint8), 0.5, 10)
    t = b.add_operand(q, [2, 3], 0.5, 10)
    b.add_operation(O.ADD, [x, c, b.add_scalar(T.INT32, 0)], [t])
    o = b.add_operand(q, [2, 3], 1.0 / 256, 0)
    b.add_operation(O.LOGISTIC, [t], [o])
    b.set_outputs([o])
    model = b.finish()
    assert not any(isinstance(n, ElementwiseChain) for n in prepare_graph(model).nodes)
    xv = np.arange(6, dtype=np.uint8).reshape(2, 3) * 20
    pm = opencl_device().prepare_model(model)
    np.testing.assert_array_equal(pm.execute([xv])[0], reference_outputs(model, [xv])[0])
    assert pm.memory_plan["kernels"] == 2


def _math_chain(rng, every_output=False):
    """x → SUB(const) → ABS → SQRT → DIV(y [1,5,1,4] broadcast, RELU6) →
    MAXIMUM(const [4]) → EXP → MINIMUM(const, v) → NEG → LOG → SIN → RSQRT → MUL(v, v, RELU1);
    ``every_output``: every intermediate is a model output too (nothing fuses: the unfused kernels)."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, SHAPE)
    y = b.add_input(F32, [1, 5, 1, 4])
    outs = []

    def op(kind, ins):
        out = b.add_operand(F32, SHAPE)
        b.add_operation(kind, ins, [out])
        outs.append(out)
        return out

    def const(shape, lo, hi):
        return b.add_constant(F32, shape, rng.uniform(lo, hi, shape).astype(np.float32))

    v = op(O.SUB, [x, const(SHAPE, -2, 2), b.add_scalar(T.INT32, 0)])
    v = op(O.ABS, [v])
    v = op(O.SQRT, [v])
    v = op(O.DIV, [v, y, b.add_scalar(T.INT32, 3)])
    v = op(O.MAXIMUM, [v, const([4], -1, 1)])
    v = op(O.EXP, [v])
    v = op(O.MINIMUM, [const(SHAPE, 0, 100), v])
    for kind in (O.NEG, O.LOG, O.SIN, O.RSQRT):
        v = op(kind, [v])
    op(O.MUL, [v, v, b.add_scalar(T.INT32, 2)])
    b.set_outputs(outs if every_output else outs[-1:])
    return b.finish()


def _math_inputs(rng):
    x = rng.uniform(-8, 8, SHAPE).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0e38]
    y = rng.uniform(-2, 2, (1, 5, 1, 4)).astype(np.float32)
    y.flat[:3] = [0.0, -0.0, np.nan]
    return [x, y]


def test_math_chain_is_one_kernel_and_matches_the_unfused_kernels_exactly():
    rng = np.random.default_rng(21)
    model = _math_chain(np.random.default_rng(3))
    inputs = _math_inputs(rng)
    pm = _check(model, inputs)
    assert pm.memory_plan["kernels"] == 1
    (node,) = prepare_graph(model).nodes
    assert isinstance(node, ElementwiseChain) and len(node.steps) == 12
    unfused = opencl_device().prepare_model(_math_chain(np.random.default_rng(3), every_output=True))
    assert unfused.memory_plan["kernels"] == 12
    np.testing.assert_array_equal(pm.execute(inputs)[0], unfused.execute(inputs)[-1])
    src = generate(lower(prepare_graph(model)).kernels, opencl_device().backend.compiler.prelude)
    for statement in ("v = fabs(v);", "v = 1.0f / sqrt(v);", "v = -v;", "v = v < 0.0f ? 0.0f : v;",
                      "v = 6.0f < v ? 6.0f : v;", "v = v < -3.4028234663852886e+38f ? "):
        assert statement in src, statement


def test_chain_nan_infinity_and_flt_max_bound():
    """DIV by ±0 gives ±inf, bounded to ±FLT_MAX (activation NONE) before NEG; MAXIMUM(v, c) keeps a NaN
    v, MINIMUM(c, v) keeps c; LOG of a negative value is NaN."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, [6])
    z = b.add_input(F32, [6])
    t = b.add_operand(F32, [6])
    b.add_operation(O.DIV, [x, z, b.add_scalar(T.INT32, 0)], [t])
    n = b.add_operand(F32, [6])
    b.add_operation(O.NEG, [t], [n])
    m = b.add_operand(F32, [6])
    b.add_operation(O.MAXIMUM, [n, b.add_constant(F32, [1], np.array([-5.0], np.float32))], [m])
    o = b.add_operand(F32, [6])
    b.add_operation(O.MINIMUM, [b.add_constant(F32, [1], np.array([7.0], np.float32)), m], [o])
    b.set_outputs([o])
    model = b.finish()
    xv = np.array([1.0, -1.0, 0.0, 2.0, np.nan, 100.0], np.float32)
    zv = np.array([0.0, 0.0, 0.0, -4.0, 1.0, 10.0], np.float32)
    # x/z = [inf, -inf, NaN, -0.5, NaN, 10] -> bound [FLT_MAX, -FLT_MAX, NaN, -0.5, NaN, 10]
    # -> NEG [-FLT_MAX, FLT_MAX, NaN, 0.5, NaN, -10] -> max(v, -5) [-5, FLT_MAX, NaN, 0.5, NaN, -5]
    # -> min(7, v) [-5, 7, 7, 0.5, 7, -5]
    expected = np.array([-5.0, 7.0, 7.0, 0.5, 7.0, -5.0], np.float32)
    pm = _check(model, [xv, zv])
    assert pm.memory_plan["kernels"] == 1
    np.testing.assert_array_equal(pm.execute([xv, zv])[0], expected)
    np.testing.assert_array_equal(reference_outputs(model, [xv, zv])[0], expected)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_chain_kernel_compiles_with_nvrtc(arch):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from gpu_driver.backends.cuda import CudaCompiler, compile_source
    try:
        compile_source("extern \"C\" __global__ void k() {}", arch)
    except Exception:
        pytest.skip("NVRTC library not loadable")
    for chain in (_six_op_chain, _math_chain, lambda rng: _lstm_cell()):
        src = generate(lower(prepare_graph(chain(np.random.default_rng(1)))).kernels, CudaCompiler(arch).prelude)
        assert compile_source(src, arch)[:4] == b"\x7fELF"


def _lstm_cell(batch: int = 1, units: int = 3, forwarded: bool = True):
    """A Keras LSTM cell after its matrix products: z [batch, 4·units] SPLIT into i, f, g, o;
    c' = σ(f)·c + σ(i)·tanh(g), h = σ(o)·tanh(c'); outputs (h, c').  ``forwarded`` False: the SPLIT's
    last output is a model output too."""
    b = gd.ModelBuilder()
    z = b.add_input(F32, [batch, 4 * units])
    c = b.add_input(F32, [batch, units])
    none = b.add_scalar(T.INT32, 0)
    pieces = [b.add_operand(F32, [batch, units]) for _ in range(4)]
    b.add_operation(O.SPLIT, [z, b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, 4)], pieces)

    def op(kind, ins):
        out = b.add_operand(F32, [batch, units])
        b.add_operation(kind, ins, [out])
        return out

    i, f, g, o = pieces
    c_new = op(O.ADD, [op(O.MUL, [op(O.LOGISTIC, [f]), c, none]),
                       op(O.MUL, [op(O.LOGISTIC, [i]), op(O.TANH, [g]), none]), none])
    h = op(O.MUL, [op(O.LOGISTIC, [o]), op(O.TANH, [c_new]), none])
    b.set_outputs([h, c_new] + ([] if forwarded else [o]))
    return b.finish()


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_lstm_cell_reads_its_split_in_place_in_two_kernels():
    """The SPLIT is dropped: the c' tree (six operations) and the h tree (three) each read the gate
    pre-activations from z at their offsets; values against float64 numpy."""
    batch, units = 2, 3
    rng = np.random.default_rng(31)
    z = rng.uniform(-3, 3, (batch, 4 * units)).astype(np.float32)
    c = rng.uniform(-1, 1, (batch, units)).astype(np.float32)
    model = _lstm_cell(batch, units)
    pm = opencl_device().prepare_model(model)
    h, c_new = pm.execute([z, c])
    zi, zf, zg, zo = np.split(z.astype(np.float64), 4, axis=1)
    c_expected = _sigmoid(zf) * c + _sigmoid(zi) * np.tanh(zg)
    np.testing.assert_allclose(c_new, c_expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, _sigmoid(zo) * np.tanh(c_expected), rtol=1e-5, atol=1e-6)
    assert pm.memory_plan["kernels"] == 2
    nodes = prepare_graph(model).nodes
    assert all(isinstance(n, ElementwiseChain) for n in nodes) and len(nodes) == 2
    assert [len(n.steps) for n in nodes] == [6, 3]
    # row r, unit u of piece k is z[r, k·units + u]: offset k·units, strides (4·units, 1)
    assert sorted(nodes[0].views.values()) == [(0, 0, (12, 1)), (0, 3, (12, 1)), (0, 6, (12, 1))]
    src = generate(lower(prepare_graph(model)).kernels, opencl_device().backend.compiler.prelude)
    # the offsets are an int input, so every time step's cell shares one kernel
    assert "[offsets[0] + i2 * 12 + i3 * 1]" in src and "GLOBAL const int* RESTRICT offsets" in src


def test_split_with_another_reader_is_kept():
    """A SPLIT output that is a model output is written by the SPLIT's own kernels, and the cell's
    values are unchanged."""
    rng = np.random.default_rng(32)
    z = rng.uniform(-3, 3, (1, 12)).astype(np.float32)
    c = rng.uniform(-1, 1, (1, 3)).astype(np.float32)
    model = _lstm_cell(forwarded=False)
    pm = opencl_device().prepare_model(model)
    h, c_new, o = pm.execute([z, c])
    np.testing.assert_array_equal(o, z[:, 9:])
    fused = opencl_device().prepare_model(_lstm_cell())
    for a, e in zip((h, c_new), fused.execute([z, c])):
        np.testing.assert_array_equal(a, e)
    assert pm.memory_plan["kernels"] == 2 + 4
    assert not any(n.views for n in prepare_graph(model).nodes if isinstance(n, ElementwiseChain))


def test_strided_and_broadcast_slices_read_in_place():
    """STRIDED_SLICE (every second column from 1, the first axis shrunk away) read by a lone
    LOGISTIC, and a [1, 3] SLICE broadcast over [2, 3] by an ADD: both slices dropped, the lone
    LOGISTIC a one-step kernel; hand-worked values."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, [1, 2, 6])
    y = b.add_input(F32, [2, 3])
    vec = lambda v: b.add_constant(T.TENSOR_INT32, [len(v)], np.array(v, np.int32))
    s = b.add_operand(F32, [2, 3])
    b.add_operation(O.STRIDED_SLICE, [x, vec([0, 0, 1]), vec([1, 2, 6]), vec([1, 1, 2]),
                                      b.add_scalar(T.INT32, 0), b.add_scalar(T.INT32, 0),
                                      b.add_scalar(T.INT32, 1)], [s])
    lg = b.add_operand(F32, [2, 3])
    b.add_operation(O.LOGISTIC, [s], [lg])
    r = b.add_operand(F32, [1, 3])
    b.add_operation(O.SLICE, [y, vec([1, 0]), vec([1, 3])], [r])
    out = b.add_operand(F32, [2, 3])
    b.add_operation(O.ADD, [y, r, b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([lg, out])
    model = b.finish()
    xv = np.array([[[0, 0, 1, 0, 2, 0], [0, -1, 0, -2, 0, 3]]], np.float32)
    yv = np.array([[1, 2, 3], [10, 20, 30]], np.float32)
    pm = opencl_device().prepare_model(model)
    lg_v, out_v = pm.execute([xv, yv])
    np.testing.assert_allclose(lg_v, _sigmoid(np.array([[0, 0, 0], [-1, -2, 3]], np.float64)), rtol=1e-6)
    np.testing.assert_array_equal(out_v, np.array([[11, 22, 33], [20, 40, 60]], np.float32))
    assert pm.memory_plan["kernels"] == 2
    nodes = prepare_graph(model).nodes
    assert [n.views for n in nodes] == [{s: (x, 1, (6, 2))}, {r: (y, 3, (0, 1))}]


def test_a_split_of_a_row_slice_reads_the_first_source():
    """x [3, 4] → SLICE row 1 → SPLIT in two halves → ADD: both dropped, the ADD reads x at offsets
    4 and 6 (one kernel); hand-worked values."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, [3, 4])
    row = b.add_operand(F32, [1, 4])
    vec = lambda v: b.add_constant(T.TENSOR_INT32, [len(v)], np.array(v, np.int32))
    b.add_operation(O.SLICE, [x, vec([1, 0]), vec([1, 4])], [row])
    halves = [b.add_operand(F32, [1, 2]) for _ in range(2)]
    b.add_operation(O.SPLIT, [row, b.add_scalar(T.INT32, 1), b.add_scalar(T.INT32, 2)], halves)
    out = b.add_operand(F32, [1, 2])
    b.add_operation(O.ADD, [*halves, b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([out])
    model = b.finish()
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    pm = opencl_device().prepare_model(model)
    np.testing.assert_array_equal(pm.execute([xv])[0], [[4 + 6, 5 + 7]])
    assert pm.memory_plan["kernels"] == 1
    (node,) = prepare_graph(model).nodes
    assert sorted(node.views.values()) == [(x, 4, (0, 1)), (x, 6, (0, 1))] and node.inputs == [x]


def _normalise_model(shape, stats_shape):
    """out = (x + NEG(m)) · RSQRT(v), m and v of ``stats_shape`` broadcast over x's ``shape``."""
    b = gd.ModelBuilder()
    x = b.add_input(F32, list(shape))
    m = b.add_input(F32, list(stats_shape))
    v = b.add_input(F32, list(stats_shape))
    none = b.add_scalar(T.INT32, 0)
    neg = b.add_operand(F32, list(stats_shape))
    b.add_operation(O.NEG, [m], [neg])
    centred = b.add_operand(F32, list(shape))
    b.add_operation(O.ADD, [x, neg, none], [centred])
    r = b.add_operand(F32, list(stats_shape))
    b.add_operation(O.RSQRT, [v], [r])
    out = b.add_operand(F32, list(shape))
    b.add_operation(O.MUL, [centred, r, none], [out])
    b.set_outputs([out])
    return b.finish()


def test_small_broadcast_results_join_their_reader():
    """A layer norm's tail on [2, 3, 4] with statistics [2, 3, 1]: NEG and RSQRT are recomputed per
    element inside the one kernel; above BROADCAST_JOIN_ELEMENTS ([1, 64, 64, 8]) or broadcast more
    than BROADCAST_JOIN_FACTOR times ([1, 2, 64] from [1, 2, 1]) they stay kernels of their own.
    Values against float64 numpy."""
    rng = np.random.default_rng(61)
    for shape, stats, kernels in (((2, 3, 4), (2, 3, 1), 1), ((1, 64, 64, 8), (1, 64, 64, 1), 3),
                                  ((1, 2, 64), (1, 2, 1), 3)):
        xv = rng.uniform(-2, 2, shape).astype(np.float32)
        mv = rng.uniform(-1, 1, stats).astype(np.float32)
        vv = rng.uniform(0.5, 2, stats).astype(np.float32)
        pm = opencl_device().prepare_model(_normalise_model(shape, stats))
        want = (xv.astype(np.float64) - mv) / np.sqrt(vv.astype(np.float64))
        np.testing.assert_allclose(pm.execute([xv, mv, vv])[0], want, rtol=1e-5, atol=1e-6)
        assert pm.memory_plan["kernels"] == kernels, shape
