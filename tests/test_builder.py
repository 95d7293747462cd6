"""ModelBuilder: operand placement (the 128-byte rule), alignment, subgraphs, misuse."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.hal import OperandLifeTime as L


def _add_model(constant_values):
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [len(constant_values)])
    c = b.add_constant(T.TENSOR_FLOAT32, [len(constant_values)], constant_values)
    act = b.add_scalar(T.INT32, 0)
    y = b.add_operand(T.TENSOR_FLOAT32, [len(constant_values)])
    b.add_operation(O.ADD, [x, c, act], [y]).set_outputs([y])
    return b.finish(), c


def test_small_constant_is_copied_large_is_referenced():
    small, c = _add_model(np.arange(32, dtype=np.float32))      # 128 bytes: copied
    assert small.main.operands[c].lifetime == L.CONSTANT_COPY
    assert small.pools == []
    large, c = _add_model(np.arange(33, dtype=np.float32))      # 132 bytes: referenced
    op = large.main.operands[c]
    assert op.lifetime == L.CONSTANT_REFERENCE
    assert op.location.length == 132 and len(large.pools) == 1
    assert np.frombuffer(large.pools[0].read(op.location.offset, 132), np.float32).tolist() == list(range(33))


def test_constant_copy_alignment():
    b = gd.ModelBuilder()
    u8 = b.add_constant(T.TENSOR_QUANT8_ASYMM, [1], [7], scale=1.0)   # 1 byte at 0
    i32 = b.add_scalar(T.INT32, 5)                                     # aligned to 4
    ops = b._subgraph.operands
    assert ops[u8].location.offset == 0
    assert ops[i32].location.offset % 4 == 0 and ops[i32].location.offset >= 1


def test_reference_executes_builder_model_with_both_constant_kinds():
    model, _ = _add_model(np.arange(40, dtype=np.float32))
    out, = gd.get_device("reference").prepare_model(model).execute([np.ones(40, np.float32)])
    assert out.tolist() == [i + 1.0 for i in range(40)]


def test_subgraph_operands_are_referenced_and_constants_rebased():
    then_b = gd.ModelBuilder()
    a = then_b.add_input(T.TENSOR_FLOAT32, [2])
    k = then_b.add_constant(T.TENSOR_FLOAT32, [2], [100.0, 200.0])
    z = then_b.add_scalar(T.INT32, 0)
    r = then_b.add_operand(T.TENSOR_FLOAT32, [2])
    then_b.add_operation(O.ADD, [a, k, z], [r]).set_outputs([r])
    else_b = gd.ModelBuilder()
    a2 = else_b.add_input(T.TENSOR_FLOAT32, [2])
    k2 = else_b.add_constant(T.TENSOR_FLOAT32, [2], [-1.0, -2.0])
    z2 = else_b.add_scalar(T.INT32, 0)
    r2 = else_b.add_operand(T.TENSOR_FLOAT32, [2])
    else_b.add_operation(O.MUL, [a2, k2, z2], [r2]).set_outputs([r2])
    b = gd.ModelBuilder()
    cond = b.add_input(T.TENSOR_BOOL8, [1])
    x = b.add_input(T.TENSOR_FLOAT32, [2])
    t, e = b.add_subgraph(then_b), b.add_subgraph(else_b)
    y = b.add_operand(T.TENSOR_FLOAT32, [2])
    b.add_operation(O.IF, [cond, t, e, x], [y]).set_outputs([y])
    model = b.finish()
    assert len(model.referenced) == 2
    pm = gd.get_device("reference").prepare_model(model)
    assert pm.execute([np.array([True]), np.array([1.0, 2.0], np.float32)])[0].tolist() == [101.0, 202.0]
    assert pm.execute([np.array([False]), np.array([1.0, 2.0], np.float32)])[0].tolist() == [-1.0, -4.0]


@pytest.mark.parametrize("call", [
    lambda b: b.add_operand(99, [1]),
    lambda b: b.add_operand(T.TENSOR_FLOAT32, [-1]),
    lambda b: b.add_operand(T.TENSOR_FLOAT32, "ab"),
    lambda b: b.add_constant(T.TENSOR_FLOAT32, [2], [1.0, 2.0, 3.0]),
    lambda b: b.add_constant(T.SUBGRAPH, [], 0),
    lambda b: b.add_operation(12345, [], []),
    lambda b: b.add_operation(O.ADD, [0, 1, 7], [3]),
    lambda b: b.set_outputs([42]),
    lambda b: b.add_subgraph("not a builder"),
    lambda b: b.operand(5),
    lambda b: b.operand("0"),
    lambda b: b.constant_value(-1),
    lambda b: b.set_constant(7, [1.0, 2.0]),
    lambda b: b.set_constant(0, [1.0, 2.0]),  # the model input is not a temporary
])
def test_misuse_is_invalid_argument(call):
    b = gd.ModelBuilder()
    b.add_input(T.TENSOR_FLOAT32, [2])
    with pytest.raises(gd.DriverError) as err:
        call(b)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_constant_values_are_range_checked_not_wrapped():
    b = gd.ModelBuilder()
    # whole-number floats are fine for integer types (numpy data often comes as float64)
    i = b.add_constant(T.TENSOR_QUANT8_ASYMM, [2], np.array([0.0, 255.0]), scale=1.0)
    assert b._values[b._subgraph.operands[i].location.offset:][:2] == bytes([0, 255])
    for bad in ([300], [-1], [1.5], [float("nan")], ["x"]):
        with pytest.raises(gd.DriverError) as err:
            b.add_constant(T.TENSOR_QUANT8_ASYMM, [1], bad, scale=1.0)   # 300 used to wrap to 44
        assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(gd.DriverError):
        b.add_scalar(T.INT32, 2 ** 31)


def test_set_constant_and_constant_value_round_trip():
    b = gd.ModelBuilder()
    t = b.add_operand(T.TENSOR_INT32, [3])
    assert b.constant_value(t) is None
    b.set_constant(t, [4, 5, 6])
    assert b.constant_value(t).tolist() == [4, 5, 6]
    with pytest.raises(gd.DriverError) as err:
        b.set_constant(t, [1, 2, 3])  # already a constant
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT

