"""Broadcasting binary operations (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, PRELU) on each accelerator
device vs the reference: every type the operation allows — float32 (CTS tolerance), float16, int32 and
quant8 / quant8 signed (exact) — over broadcast patterns up to rank 6 (and rows of a short innermost
axis, the kernel's row-per-work-item form), every fused activation, NaN and division by zero;
TENSOR_INT32 wraps around."""
import numpy as np
import pytest

import gpu_driver

from .harness import compare, run_model
from .models import F32, I32T, OP, OT, Q8A, In, Out, i32, random_data, single_op

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
ARITHMETIC = (OP.ADD, OP.SUB, OP.MUL, OP.DIV)
TYPES = {OP.ADD: (F32, F16, Q8A, Q8AS, I32T), OP.SUB: (F32, F16, Q8A, Q8AS, I32T), OP.MUL: (F32, F16, Q8A, Q8AS, I32T),
         OP.DIV: (F32, F16, I32T), OP.MAXIMUM: (F32, F16, Q8A, Q8AS, I32T), OP.MINIMUM: (F32, F16, Q8A, Q8AS, I32T),
         OP.POW: (F32, F16), OP.PRELU: (F32, F16, Q8A, Q8AS)}
CASES = [(op, t) for op, types in TYPES.items() for t in types]
#: same shape (flat index), broadcasts in both directions, a scalar-like side, alternating broadcast axes
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)), ((1,), (4, 3, 2, 5)), ((3, 1, 7, 1), (1, 5, 1, 3)),
          # at least 256 rows of a short innermost axis: one work item per row (binary.cl ROWS)
          ((2, 16, 8, 12), (12,)), ((16, 17, 6), (16, 17, 1)), ((1, 20, 1, 8), (15, 8))]
#: ranks above 4 (no rank limit) whose broadcast pattern merges to at most four axes
HIGH_RANK = [((2, 3, 1, 1, 4, 2), (1, 1, 5, 2, 1, 1)), ((2, 2, 2, 2, 3), (3,))]
F16_TOL = dict(atol=5 * 2.0 ** -10, rtol=5 * 2.0 ** -10)


def _operands(op, t, sa, sb):
    """Input and output specs: quantized operands get distinct scales and zero points (MUL: s_out > s1·s2)."""
    if t == Q8A:
        return In(t, sa, 0.05, 120), In(t, sb, 0.07, 3), Out(t, 0.5 if op == OP.MUL else 0.09, 100)
    if t == Q8AS:
        return In(t, sa, 0.05, -8), In(t, sb, 0.07, 30), Out(t, 0.5 if op == OP.MUL else 0.09, -20)
    return In(t, sa), In(t, sb), Out(t)


def _data(op, specs, rng):
    x, y = (random_data(s, rng) for s in specs)
    if op == OP.POW and specs[0].type in (F32, F16):
        x = np.abs(x) + x.dtype.type(0.1)  # keep results finite and away from NaN (checked separately)
    if op == OP.DIV and specs[1].type in (F32, F16):
        y = np.where(np.abs(y) < 0.25, y.dtype.type(0.5), y)
    if op == OP.DIV and specs[1].type == I32T:
        y = np.where(np.arange(y.size).reshape(y.shape) % 7 == 0, 0, y).astype(np.int32)  # some x / 0
    return [x, y]


def _side_by_side(op, instances):
    """One model running ``op`` once per (a, b, output, args) instance, each on its own inputs (one
    preparation for all of them)."""
    m = gpu_driver.ModelBuilder()
    outs = []
    for a, b, o, args in instances:
        ins = [m.add_input(s.type, s.shape, s.scale, s.zp) for s in (a, b)]
        ins += [m.add_scalar(OT.INT32, v) for v in args]
        outs.append(m.add_operand(o.type, o.shape, o.scale, o.zp))
        m.add_operation(op, ins, [outs[-1]])
    m.set_outputs(outs)
    return m.finish()


@pytest.mark.parametrize("op, t", CASES, ids=[f"{op.name}-{t.name}" for op, t in CASES])
def test_binary(accelerator, op, t):
    """Every broadcast pattern (and, for ADD/SUB/MUL/DIV, every fuse code) of one operation and type."""
    rng = np.random.default_rng(7)
    instances, data = [], []
    for k, (sa, sb) in enumerate(SHAPES + (HIGH_RANK if op not in ARITHMETIC else [])):
        a, b, o = _operands(op, t, sa, sb)
        instances.append((a, b, o, [k % 4 if t != I32T else 0] if op in ARITHMETIC else []))
        data += _data(op, [a, b], rng)
    model = _side_by_side(op, instances)
    assert all(accelerator.get_supported_operations(model)), f"{op.name} {t.name}: not supported"
    compare(accelerator, model, data, what=f"{op.name} {t.name}", **(F16_TOL if t == F16 else {}))


EVERY_ACTIVATION = [(op, t) for op in ARITHMETIC for t in (F32, Q8A, Q8AS) if t in TYPES[op]]


@pytest.mark.parametrize("op, t", EVERY_ACTIVATION, ids=[f"{op.name}-{t.name}" for op, t in EVERY_ACTIVATION])
def test_every_activation(accelerator, op, t):
    """Each fuse code on one broadcast pattern (the quantized bounds come from the output's quantization)."""
    rng = np.random.default_rng(3)
    instances, data = [], []
    for act in range(4):
        a, b, o = _operands(op, t, (3, 1, 4), (5, 1))
        instances.append((a, b, o, [act]))
        data += _data(op, [a, b], rng)
    compare(accelerator, _side_by_side(op, instances), data, what=f"{op.name} {t.name}")


@pytest.mark.parametrize("op", [OP.ADD, OP.SUB, OP.MUL])
def test_int32_wraps(accelerator, op):
    """TENSOR_INT32 ADD/SUB/MUL (HAL 1.3): two's-complement wrap-around, computed here with Python ints."""
    rng = np.random.default_rng(11)
    sa, sb = (2, 1, 5), (3, 1)
    model, _ = single_op(op, [In(I32T, sa), In(I32T, sb), i32(0)], [Out(I32T)])
    assert accelerator.get_supported_operations(model) == [True]
    x = rng.integers(-2**31, 2**31, sa, dtype=np.int64).astype(np.int32)
    y = rng.integers(-2**31, 2**31, sb, dtype=np.int64).astype(np.int32)
    f = {OP.ADD: lambda u, v: u + v, OP.SUB: lambda u, v: u - v, OP.MUL: lambda u, v: u * v}[op]
    exact = f(x.astype(object), y.astype(object))
    wrapped = np.vectorize(lambda v: (v + 2**31) % 2**32 - 2**31)(exact).astype(np.int32)
    (out,) = run_model(accelerator, model, [x, y])
    np.testing.assert_array_equal(out, wrapped)


def test_int32_floor_division(accelerator):
    """Floor division, x / 0 = 0 and INT32_MIN / −1 = INT32_MIN, as the reference."""
    x = np.array([7, -7, 7, -7, 6, 5, 0, -2**31, -2**31, 2**31 - 1], np.int32)
    y = np.array([2, 2, -2, -2, -3, 0, 3, -1, 2, -1], np.int32)
    model, _ = single_op(OP.DIV, [In(I32T, x.shape), In(I32T, y.shape), i32(0)], [Out(I32T)])
    act, _ = compare(accelerator, model, [x, y])
    np.testing.assert_array_equal(act[0], [3, -4, -4, 3, -2, 0, 0, -2**31, -2**30, -(2**31 - 1)])


@pytest.mark.parametrize("t", [F32, F16])
def test_special_values(accelerator, t):
    """NaN through MAXIMUM/MINIMUM (the first operand wins a comparison with NaN), the activation clamp
    (NaN passes, ±∞ become ±FLT_MAX) and POW of a negative base."""
    dtype = np.float16 if t == F16 else np.float32
    x = np.array([np.nan, 1.0, np.inf, -np.inf, 0.0, -8.0, 2.0], dtype)
    y = np.array([1.0, np.nan, 1.0, 0.0, 0.0, 0.5, -1.0], dtype)
    for op in (OP.MAXIMUM, OP.MINIMUM, OP.POW, OP.PRELU, OP.ADD, OP.DIV):
        act = [i32(0)] if op in ARITHMETIC else []
        model, _ = single_op(op, [In(t, x.shape), In(t, y.shape), *act], [Out(t)])
        assert all(accelerator.get_supported_operations(model)), op.name
        got, exp = compare(accelerator, model, [x, y], what=op.name)
        np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(exp[0]))


def test_relu_fused_into_sub(accelerator):
    """A RELU after SUB runs inside the SUB kernel (its fused activation)."""
    m = gpu_driver.ModelBuilder()
    a, b = m.add_input(F32, (4, 3)), m.add_input(F32, (3,))
    act = m.add_scalar(OT.INT32, 0)
    mid, out = m.add_operand(F32, (4, 3)), m.add_operand(F32, (4, 3))
    m.add_operation(OP.SUB, [a, b, act], [mid])
    m.add_operation(OP.RELU, [mid], [out])
    m.set_outputs([out])
    model = m.finish()
    assert accelerator.get_supported_operations(model) == [True, True]
    rng = np.random.default_rng(5)
    compare(accelerator, model, [random_data(In(F32, (4, 3)), rng), random_data(In(F32, (3,)), rng)])
