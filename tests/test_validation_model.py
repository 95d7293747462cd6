"""Hand-written invalid models, one per rule of interface.md §9.1, plus valid models that must pass."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from gpu_driver import ModelBuilder
from gpu_driver.errors import DriverError
from gpu_driver.hal import (DataLocation, ErrorStatus, ExtensionNameAndPrefix, Model, Operand, OperandLifeTime, Operation, OperandType, OperationType, Subgraph, SymmPerChannelQuantParams)
from gpu_driver.validation import validate_model

from gpu_driver.memory import SharedMemory
from gpu_driver.ops.catalog import lookup
from gpu_driver.ops.registry import REGISTRY

from . import validation_seeds as seeds

T, O, L = OperandType, OperationType, OperandLifeTime
F32 = T.TENSOR_FLOAT32


def clone(model):
    return copy.deepcopy(model, memo={id(p): p for p in model.pools})


def rejects(model, fragment, feature_level=4):
    with pytest.raises(DriverError) as info:
        validate_model(model, feature_level)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
    assert fragment.lower() in info.value.message.lower(), info.value.message
    return info.value.message


def unary(op_type, in_type=F32, dims=(2, 2), out_type=None, in_q=(0.0, 0), out_q=None, out_dims=None):
    b = ModelBuilder()
    x = b.add_input(in_type, list(dims), *in_q)
    o = b.add_operand(out_type or in_type, list(out_dims or dims), *(out_q or in_q))
    b.add_operation(op_type, [x], [o])
    b.set_outputs([o])
    return b.finish(validate=False)


def hand_model(operands, operations, inputs, outputs, values=b"", pools=(), referenced=()):
    return Model(Subgraph(operands, operations, inputs, outputs), list(referenced), values, list(pools))


# ---- valid models ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(seeds.SEEDS))
def test_seed_models_are_valid(name):
    validate_model(seeds.SEEDS[name]())


def test_valid_optional_inputs_and_later_types():
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 4], 0.1, -3)
    beta, axis = b.add_scalar(T.FLOAT32, 1.0), b.add_scalar(T.INT32, -1)
    o = b.add_operand(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 4], 1 / 256, -128)
    b.add_operation(O.SOFTMAX, [x, beta, axis], [o])
    b.set_outputs([o])
    validate_model(b.finish(validate=False))


def test_valid_unknown_dims_for_temporaries_and_outputs():
    m = unary(O.RELU, dims=(0, 3), out_dims=(0, 3))
    validate_model(m)
    m.main.operands[1].dimensions = []  # unknown output rank (FL3)
    validate_model(m)


def test_valid_lsh_with_omitted_weight():
    b = ModelBuilder()
    h = b.add_constant(F32, [2, 3], np.ones(6, np.float32))
    x = b.add_input(T.TENSOR_INT32, [3, 2])
    w = b.add_no_value(F32)
    kind = b.add_scalar(T.INT32, 3)
    o = b.add_operand(T.TENSOR_INT32, [2])
    b.add_operation(O.LSH_PROJECTION, [h, x, w, kind], [o])
    b.set_outputs([o])
    validate_model(b.finish(validate=False))


# ---- model level -----------------------------------------------------------------------------------

def test_pool_must_be_memory():
    m = seeds.conv_f32()
    m.pools = [bytearray(1000)]
    rejects(m, "pool 0 must be a gpu_driver.memory.Memory")


def test_extension_names():
    m = seeds.add_relu()
    m.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example", 1)]
    validate_model(m)  # a valid, unused table is fine (FL3)
    m.extension_name_to_prefix = [ExtensionNameAndPrefix("com-example", 1)]
    rejects(m, "invalid extension name")
    m.extension_name_to_prefix = [ExtensionNameAndPrefix("com.a", 1), ExtensionNameAndPrefix("com.a", 2)]
    rejects(m, "duplicate name")
    m.extension_name_to_prefix = [ExtensionNameAndPrefix("com.a", 1), ExtensionNameAndPrefix("com.b", 1)]
    rejects(m, "duplicate prefix")


def test_extension_operand_and_operation_rejected():
    m = seeds.add_relu()
    m.main.operands[0].type = (5 << 16) | 1
    rejects(m, "extension operand type")
    m = seeds.add_relu()
    m.main.operations[1].type = (5 << 16) | 2
    rejects(m, "extension operation type")


# ---- referenced subgraphs --------------------------------------------------------------------------

def test_referenced_cycle():
    m = seeds.if_model()
    sg = m.referenced[0]
    sg.operands.append(Operand(T.SUBGRAPH, lifetime=L.SUBGRAPH, location=DataLocation(0, 1, 0)))
    m.referenced[1].operands.append(Operand(T.SUBGRAPH, lifetime=L.SUBGRAPH, location=DataLocation(0, 0, 0)))
    rejects(m, "circular subgraph reference")


def test_referenced_unused():
    m = seeds.if_model()
    m.referenced.append(copy.deepcopy(m.referenced[0]))
    rejects(m, "referenced subgraph 2 is not used")


def test_subgraph_needs_operand_and_operation():
    m = seeds.if_model()
    m.referenced[1].operations = []
    rejects(m, "referenced subgraph 1: a subgraph needs at least one operation")
    m = seeds.add_relu()
    m.main.operands = []
    rejects(m, "at least one operand")


# ---- operands --------------------------------------------------------------------------------------

@pytest.mark.parametrize("mutate,fragment", [
    (lambda o: setattr(o, "type", 77), "unknown operand type"),
    (lambda o: setattr(o, "lifetime", 9), "invalid lifetime"),
    (lambda o: setattr(o, "lifetime", L.SUBGRAPH), "type SUBGRAPH and lifetime SUBGRAPH"),
    (lambda o: setattr(o, "dimensions", [1 << 20, 1 << 20]), "overflows uint32"),
    (lambda o: setattr(o, "scale", 0.25), "scale must be 0"),
    (lambda o: setattr(o, "zero_point", 3), "zeroPoint 3 is outside"),
    (lambda o: setattr(o, "extra_params", b"\x01"), "must not carry extraParams"),
    (lambda o: setattr(o.location, "padding", 8), "padding must be 0"),
    (lambda o: setattr(o.location, "offset", 16), "all-zero location"),
    (lambda o: setattr(o, "dimensions", [2, -2]), "out of range"),
    (lambda o: setattr(o, "dimensions", None), "must be a list"),
])
def test_operand_rules(mutate, fragment):
    m = seeds.add_relu()
    mutate(m.main.operands[0])
    msg = rejects(m, fragment)
    assert "operand 0" in msg


def test_scalar_has_no_dimensions():
    m = seeds.add_relu()
    act = m.main.operations[0].inputs[2]
    m.main.operands[act].dimensions = [1]
    rejects(m, f"operand {act}: scalar type INT32 must have no dimensions")


def test_constant_must_be_fully_specified():
    m = seeds.fully_connected()
    w = m.main.operations[0].inputs[1]
    m.main.operands[w].dimensions = [4, 0]
    rejects(m, "constant tensor must be fully specified")


@pytest.mark.parametrize("q,fragment", [
    ((0.0, 0), "scale must be > 0"), ((-0.5, 0), "scale must be > 0"), ((0.5, 300), "zeroPoint 300"),
    ((0.5, -1), "zeroPoint -1"), ((float("inf"), 0), "not a finite float32"), ((1e39, 0), "not a finite float32"),
])
def test_quant8_params(q, fragment):
    m = seeds.mul_q8()
    m.main.operands[0].scale, m.main.operands[0].zero_point = q
    rejects(m, fragment)


def test_quant8_signed_and_quant16_ranges():
    m = unary(O.RELU, T.TENSOR_QUANT8_ASYMM_SIGNED, in_q=(0.5, 200))
    rejects(m, "zeroPoint 200 is outside [-128, 127]")
    m = unary(O.RELU, T.TENSOR_QUANT16_SYMM, in_q=(0.5, 1))
    rejects(m, "zeroPoint 1 is outside [0, 0]")


@pytest.mark.parametrize("params,fragment", [
    (SymmPerChannelQuantParams([0.1, 0.2], 4), "channelDim 4 must be < rank 4"),
    (SymmPerChannelQuantParams([0.1], 0), "1 per-channel scales for channel dimension of size 2"),
    (SymmPerChannelQuantParams([0.1, -0.2], 0), "scales[1] = -0.2 must be > 0"),
    (None, "needs SymmPerChannelQuantParams"),
    (SymmPerChannelQuantParams([0.1, 0.2], 3), "per-channel filter must have channelDim 0"),
])
def test_per_channel_params(params, fragment):
    m = seeds.conv_pc8()
    m.main.operands[m.main.operations[0].inputs[1]].extra_params = params
    rejects(m, fragment)


def test_per_channel_dimension_must_be_known():
    m = unary(O.DEQUANTIZE, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dims=(0, 2), out_type=F32)
    m.main.operands[0].extra_params = SymmPerChannelQuantParams([1.0], 0)
    rejects(m, "per-channel dimension 0 must be known")


@pytest.mark.parametrize("field,value,fragment", [
    ("offset", 10_000, "outside operand_values"),
    ("length", 3, "constant location.length 3 != byte size 4"),
    ("pool_index", 1, "CONSTANT_COPY with non-zero pool_index"),
])
def test_constant_copy_location(field, value, fragment):
    m = seeds.add_relu()
    setattr(m.main.operands[2].location, field, value)
    rejects(m, fragment)


@pytest.mark.parametrize("field,value,fragment", [
    ("pool_index", 3, "pool_index 3 out of range"),
    ("offset", 4096, "is outside pool 0"),
])
def test_constant_reference_location(field, value, fragment):
    m = seeds.conv_f32()
    w = m.main.operations[0].inputs[1]
    assert m.main.operands[w].lifetime == L.CONSTANT_REFERENCE
    setattr(m.main.operands[w].location, field, value)
    rejects(m, fragment)


def test_subgraph_reference_out_of_range():
    m = seeds.if_model()
    m.main.operands[m.main.operations[0].inputs[1]].location.offset = 5
    rejects(m, "SUBGRAPH reference 5 out of range")


# ---- operations ------------------------------------------------------------------------------------

def test_unknown_operation_and_index_range():
    m = seeds.add_relu()
    m.main.operations[0].type = 5000
    rejects(m, "operation 0: unknown operation type")
    m = seeds.add_relu()
    m.main.operations[1].inputs = [99]
    rejects(m, "operation 1 (RELU): input 0 = operand 99 out of range")


@pytest.mark.parametrize("count", [5, 6, 9, 12, 14])
def test_conv_illegal_input_counts(count):
    m = seeds.conv_pc8()
    op = m.main.operations[0]
    zero = op.inputs[3]
    op.inputs = (op.inputs + [zero] * 4)[:count]
    rejects(m, "illegal operand count")


def test_signature_types():
    m = seeds.conv_f32()
    m.main.operands[m.main.operations[0].inputs[2]].type = T.TENSOR_INT32  # F32 conv with I32 bias
    rejects(m, "input 2 (operand 2) has type TENSOR_INT32, expected TENSOR_FLOAT32")
    m = unary(O.FLOOR, T.TENSOR_QUANT8_ASYMM, in_q=(0.5, 0))
    rejects(m, "type TENSOR_QUANT8_ASYMM is not supported")
    m = unary(O.DEQUANTIZE, T.TENSOR_QUANT8_ASYMM, in_q=(0.5, 0), out_type=T.TENSOR_INT32, out_q=(0.0, 0))
    rejects(m, "expected TENSOR_FLOAT16/TENSOR_FLOAT32")


def test_rank_limits():
    m = unary(O.RELU, dims=(1, 1, 1, 1, 2))
    rejects(m, "has rank 5, expected rank 1..4")
    m = seeds.avg_pool_f32()
    m.main.operands[0].dimensions = [4, 4, 1]
    rejects(m, "expected rank 4")


def test_fixed_and_same_output_quantization():
    rejects(unary(O.LOGISTIC, T.TENSOR_QUANT8_ASYMM, in_q=(0.1, 0), out_q=(1 / 128, 0)),
            "output must have scale 0.00390625 and zeroPoint 0")
    rejects(unary(O.TANH, T.TENSOR_QUANT8_ASYMM_SIGNED, in_q=(0.1, 0), out_q=(1 / 128, 128)),
            "zeroPoint 128 is outside")
    rejects(unary(O.TANH, T.TENSOR_QUANT8_ASYMM_SIGNED, in_q=(0.1, 0), out_q=(1 / 128, 5)),
            "output must have scale 0.0078125 and zeroPoint 0")
    rejects(unary(O.L2_NORMALIZATION, T.TENSOR_QUANT8_ASYMM, in_q=(0.1, 0), out_q=(1 / 128, 0)),
            "zeroPoint 128")
    rejects(unary(O.RELU6, T.TENSOR_QUANT8_ASYMM, in_q=(0.1, 3), out_q=(0.1, 4)), "must equal input 0's")
    validate_model(unary(O.LOGISTIC, T.TENSOR_QUANT8_ASYMM, in_q=(0.1, 0), out_q=(1 / 256, 0)))


def test_no_value_only_where_omittable():
    m = seeds.fully_connected()
    bias = m.main.operations[0].inputs[2]
    m.main.operands[bias].lifetime = L.NO_VALUE
    m.main.operands[bias].location = DataLocation()
    rejects(m, "input 2 (operand 6) is NO_VALUE but this input cannot be omitted".replace("6", str(bias)))


def test_lstm_option_groups():
    m = seeds.lstm_f32()
    op = m.main.operations[0]
    op.inputs[9] = op.inputs[12]
    rejects(m, "peephole weights")


def test_mul_quantized_output_scale():
    m = seeds.mul_q8()
    m.main.operands[m.main.operations[0].outputs[0]].scale = 0.125
    rejects(m, "must exceed the input scale product")


# ---- IF / WHILE -------------------------------------------------------------------------------------

def test_if_rules():
    m = seeds.if_model()
    m.main.operands[0].dimensions = [2]
    rejects(m, "condition input 0 must be TENSOR_BOOL8 of dimensions [1]")
    m = seeds.if_model()
    m.main.operands[1].type = T.TENSOR_FLOAT16
    rejects(m, "then branch input 0 vs operation input 3: types differ")
    m = seeds.if_model()
    sg = m.referenced[0]
    sg.operands.append(Operand(F32, [2], lifetime=L.SUBGRAPH_INPUT))
    sg.input_indexes.append(len(sg.operands) - 1)
    rejects(m, "then branch has 2 inputs")


def test_while_rules():
    m = seeds.while_model()
    cond = m.referenced[0]
    cond.operands[cond.output_indexes[0]].type = T.TENSOR_INT32
    rejects(m, "condition subgraph output must be TENSOR_BOOL8")
    m = seeds.while_model()
    m.main.operands[m.main.operations[0].outputs[0]].dimensions = [3]
    rejects(m, "body output 0 vs operation output 0: dimensions differ")


# ---- graph ------------------------------------------------------------------------------------------

def test_graph_lists_and_order():
    m = seeds.add_relu()
    m.main.input_indexes.append(m.main.input_indexes[0])
    rejects(m, "lists an operand more than once")
    m = seeds.add_relu()
    m.main.input_indexes.pop()
    rejects(m, "not listed in the subgraph's input/output indexes")
    m = seeds.add_relu()
    m.main.operations.reverse()
    rejects(m, "is read before it is written")
    m = seeds.add_relu()
    m.main.operations.append(copy.deepcopy(m.main.operations[1]))
    rejects(m, "is written twice")
    m = seeds.add_relu()
    m.main.operations.pop()
    rejects(m, "is never written")
    m = seeds.fully_connected()
    m.main.operations[0].outputs = [m.main.operations[0].inputs[1]]  # the weights, a constant
    rejects(m, "only TEMPORARY_VARIABLE / SUBGRAPH_OUTPUT operands may be written")


# ---- feature level ----------------------------------------------------------------------------------

def test_feature_level():
    validate_model(seeds.add_f16(), 3)
    rejects(seeds.add_f16(), "needs feature level 3", feature_level=2)
    rejects(seeds.if_model(), "needs feature level 4", feature_level=3)
    rejects(unary(O.RELU, T.TENSOR_QUANT8_ASYMM_SIGNED, in_q=(0.5, 0)), "needs feature level 4", feature_level=3)
    m = seeds.reshape_f32()
    for i in (0, m.main.operations[0].outputs[0]):
        m.main.operands[i].type = T.TENSOR_INT32
    rejects(m, "needs feature level 6")  # RESHAPE of TENSOR_INT32 is FL6
    # ADD of TENSOR_INT32 is FL4 although the type is FL1
    b = ModelBuilder()
    x, y = b.add_input(T.TENSOR_INT32, [2]), b.add_input(T.TENSOR_INT32, [2])
    o = b.add_operand(T.TENSOR_INT32, [2])
    b.add_operation(O.ADD, [x, y, b.add_scalar(T.INT32, 0)], [o])
    b.set_outputs([o])
    add_i32 = b.finish(validate=False)
    validate_model(add_i32, 4)
    rejects(add_i32, "needs feature level 4", feature_level=3)


# ---- robustness --------------------------------------------------------------------------------------

@pytest.mark.parametrize("garbage", [None, 3, "model", Subgraph()])
def test_not_a_model(garbage):
    with pytest.raises(DriverError) as info:
        validate_model(garbage)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT


def test_garbage_fields():
    for field, value in [("operand_values", None), ("pools", "x"), ("referenced", 5), ("main", None),
                         ("extension_name_to_prefix", None)]:
        m = seeds.add_relu()
        setattr(m, field, value)
        rejects(m, "must be")
    m = hand_model([Operand(F32, [1], lifetime=L.SUBGRAPH_INPUT), "operand"], [Operation(O.RELU, [0], [1])], [0], [])
    rejects(m, "operand 1 must be an Operand")


def test_definition_exception_becomes_invalid(monkeypatch):
    def broken(inputs, outputs):
        raise ZeroDivisionError("boom")

    model = seeds.add_relu()
    monkeypatch.setitem(REGISTRY, O.RELU, dataclasses.replace(lookup(O.RELU), define=broken))
    msg = rejects(model, "operation 1 (RELU)")
    assert "ZeroDivisionError" in msg


def test_shared_memory_pool_size_positive():
    m = seeds.conv_f32()
    pool = m.pools[0]
    assert isinstance(pool, SharedMemory) and pool.size > 0
    validate_model(m)
