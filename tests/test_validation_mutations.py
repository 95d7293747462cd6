"""Systematic mutations of valid seed models: every mutant breaks a rule of interface.md §9.1 and
must be rejected with INVALID_ARGUMENT (and nothing else) by validate_model, prepare_model and
get_supported_operations."""
from __future__ import annotations

import copy

import pytest

import gpu_driver as gd
from gpu_driver.errors import DriverError
from gpu_driver.hal import (OPERAND_TYPE_INFO, DataLocation, ErrorStatus, ExtensionNameAndPrefix, Operand, OperandLifeTime, OperandType, OperationType, SymmPerChannelQuantParams)
from gpu_driver.validation import validate_model

from gpu_driver.ops.catalog import lookup

from .validation_seeds import SEEDS

L = OperandLifeTime
T = OperandType
_CF = (OperationType.IF, OperationType.WHILE)


def clone(model):
    return copy.deepcopy(model, memo={id(p): p for p in model.pools})


def _set(obj, **kw):
    for k, v in kw.items():
        setattr(obj, k, v)


def _operand_mutations(sg, idx, tag):
    """Mutations of one operand that are invalid whatever the operand's role."""
    o = sg.operands[idx]
    out = [
        (f"{tag}:type_unknown", lambda m, o=idx: _set(m.main.operands[o], type=99)),
        (f"{tag}:type_extension", lambda m, o=idx: _set(m.main.operands[o], type=(1 << 16) | 3)),
        (f"{tag}:type_none", lambda m, o=idx: _set(m.main.operands[o], type=None)),
        (f"{tag}:lifetime_unknown", lambda m, o=idx: _set(m.main.operands[o], lifetime=42)),
        (f"{tag}:lifetime_pointer", lambda m, o=idx: _set(m.main.operands[o], lifetime=7)),
        (f"{tag}:dims_none", lambda m, o=idx: _set(m.main.operands[o], dimensions=None)),
        (f"{tag}:dims_str", lambda m, o=idx: _set(m.main.operands[o], dimensions="ab")),
        (f"{tag}:scale_nan", lambda m, o=idx: _set(m.main.operands[o], scale=float("nan"))),
        (f"{tag}:scale_str", lambda m, o=idx: _set(m.main.operands[o], scale="x")),
        (f"{tag}:zero_point_none", lambda m, o=idx: _set(m.main.operands[o], zero_point=None)),
        (f"{tag}:padding", lambda m, o=idx: _set(m.main.operands[o].location, padding=1)),
        (f"{tag}:location_none", lambda m, o=idx: _set(m.main.operands[o], location=None)),
    ]
    if o.type != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        out.append((f"{tag}:extra_bytes", lambda m, o=idx: _set(m.main.operands[o], extra_params=b"x")))
        out.append((f"{tag}:extra_per_channel",
                    lambda m, o=idx: _set(m.main.operands[o], extra_params=SymmPerChannelQuantParams([1.0], 0))))
    if OPERAND_TYPE_INFO[o.type].is_tensor:
        out.append((f"{tag}:dims_negative", lambda m, o=idx: _set(m.main.operands[o], dimensions=[-1] * max(1, len(
            m.main.operands[o].dimensions)))))
        out.append((f"{tag}:dims_overflow", lambda m, o=idx: _set(m.main.operands[o], dimensions=[65536, 65536, 2])))
    else:
        out.append((f"{tag}:scalar_with_dims", lambda m, o=idx: _set(m.main.operands[o], dimensions=[1])))
    if o.type in (T.TENSOR_QUANT8_ASYMM,):
        out += [(f"{tag}:q8_scale0", lambda m, o=idx: _set(m.main.operands[o], scale=0.0)),
                (f"{tag}:q8_scale_neg", lambda m, o=idx: _set(m.main.operands[o], scale=-1.0)),
                (f"{tag}:q8_zp256", lambda m, o=idx: _set(m.main.operands[o], zero_point=256)),
                (f"{tag}:q8_zp_neg", lambda m, o=idx: _set(m.main.operands[o], zero_point=-1))]
    if o.type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.INT32, T.FLOAT32, T.TENSOR_BOOL8):
        out += [(f"{tag}:float_scale", lambda m, o=idx: _set(m.main.operands[o], scale=0.5)),
                (f"{tag}:float_zp", lambda m, o=idx: _set(m.main.operands[o], zero_point=1))]
    if o.type == T.TENSOR_INT32:
        out.append((f"{tag}:i32_scale_neg", lambda m, o=idx: _set(m.main.operands[o], scale=-1.0)))
    if o.lifetime in (L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
        out += [(f"{tag}:loc_pool", lambda m, o=idx: _set(m.main.operands[o].location, pool_index=1)),
                (f"{tag}:loc_offset", lambda m, o=idx: _set(m.main.operands[o].location, offset=4)),
                (f"{tag}:loc_length", lambda m, o=idx: _set(m.main.operands[o].location, length=4))]
    if o.lifetime == L.CONSTANT_COPY:
        out += [(f"{tag}:copy_offset", lambda m, o=idx: _set(m.main.operands[o].location,
                                                            offset=len(m.operand_values))),
                (f"{tag}:copy_length_plus", lambda m, o=idx: _set(m.main.operands[o].location,
                                                                 length=m.main.operands[o].location.length + 1)),
                (f"{tag}:copy_length_minus", lambda m, o=idx: _set(m.main.operands[o].location,
                                                                  length=m.main.operands[o].location.length - 1)),
                (f"{tag}:copy_pool", lambda m, o=idx: _set(m.main.operands[o].location, pool_index=1)),
                (f"{tag}:copy_offset_negative", lambda m, o=idx: _set(m.main.operands[o].location, offset=-4))]
    if o.lifetime == L.CONSTANT_REFERENCE:
        out += [(f"{tag}:ref_pool", lambda m, o=idx: _set(m.main.operands[o].location, pool_index=5)),
                (f"{tag}:ref_offset", lambda m, o=idx: _set(m.main.operands[o].location, offset=m.pools[0].size)),
                (f"{tag}:ref_length", lambda m, o=idx: _set(m.main.operands[o].location,
                                                           length=m.main.operands[o].location.length + 4))]
    if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE) and o.dimensions:
        out.append((f"{tag}:const_dim0", lambda m, o=idx: m.main.operands[o].dimensions.__setitem__(0, 0)))
        out.append((f"{tag}:const_unknown_rank", lambda m, o=idx: _set(m.main.operands[o], dimensions=[])))
    if o.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        pc = lambda m, o: m.main.operands[o].extra_params  # noqa: E731
        out += [(f"{tag}:pc_channel_dim_rank", lambda m, o=idx: _set(pc(m, o), channel_dim=4)),
                (f"{tag}:pc_channel_dim_size", lambda m, o=idx: _set(pc(m, o), channel_dim=1)),
                (f"{tag}:pc_scales_len", lambda m, o=idx: _set(pc(m, o), scales=[0.1])),
                (f"{tag}:pc_scale_zero", lambda m, o=idx: _set(pc(m, o), scales=[0.1, 0.0])),
                (f"{tag}:pc_scale_neg", lambda m, o=idx: _set(pc(m, o), scales=[-0.1, 0.2])),
                (f"{tag}:pc_none", lambda m, o=idx: _set(m.main.operands[o], extra_params=None)),
                (f"{tag}:pc_scale", lambda m, o=idx: _set(m.main.operands[o], scale=0.5)),
                (f"{tag}:pc_zp", lambda m, o=idx: _set(m.main.operands[o], zero_point=1))]
    if o.lifetime == L.SUBGRAPH:
        out += [(f"{tag}:subgraph_offset", lambda m, o=idx: _set(m.main.operands[o].location,
                                                                offset=len(m.referenced))),
                (f"{tag}:subgraph_lifetime", lambda m, o=idx: _set(m.main.operands[o], lifetime=L.CONSTANT_COPY)),
                (f"{tag}:subgraph_type", lambda m, o=idx: _set(m.main.operands[o], type=T.INT32)),
                (f"{tag}:subgraph_length", lambda m, o=idx: _set(m.main.operands[o].location, length=1))]
    if o.lifetime == L.TEMPORARY_VARIABLE:
        out.append((f"{tag}:temp_as_input", lambda m, o=idx: _set(m.main.operands[o], lifetime=L.SUBGRAPH_INPUT)))
        out.append((f"{tag}:temp_as_constant", lambda m, o=idx: _set(m.main.operands[o], lifetime=L.CONSTANT_COPY)))
    return out


def _no_value(m, o):
    _set(m.main.operands[o], lifetime=L.NO_VALUE, location=DataLocation())


def _operation_mutations(model):
    main = model.main
    op = main.operations[0]
    n = len(main.operands)
    out = [
        ("op:type_unknown", lambda m: _set(m.main.operations[0], type=9999)),
        ("op:type_extension", lambda m: _set(m.main.operations[0], type=(1 << 16) | 1)),
        ("op:type_none", lambda m: _set(m.main.operations[0], type=None)),
        ("op:type_str", lambda m: _set(m.main.operations[0], type="ADD")),
        ("op:input_out_of_range", lambda m: m.main.operations[0].inputs.__setitem__(0, len(m.main.operands))),
        ("op:output_out_of_range", lambda m: m.main.operations[0].outputs.__setitem__(0, len(m.main.operands) + 7)),
        ("op:input_negative", lambda m: m.main.operations[0].inputs.__setitem__(0, -1)),
        ("op:inputs_none", lambda m: _set(m.main.operations[0], inputs=None)),
        ("op:outputs_none", lambda m: _set(m.main.operations[0], outputs=None)),
        ("op:drop_last_input", lambda m: m.main.operations[0].inputs.pop()),
        ("op:no_outputs", lambda m: _set(m.main.operations[0], outputs=[])),
        ("op:extra_output", _extra_output),
        ("op:output_type_i32", lambda m: _set(m.main.operands[m.main.operations[0].outputs[0]],
                                              type=T.TENSOR_INT32, scale=0.0, zero_point=0)),
        ("op:writes_input", lambda m: m.main.operations[0].outputs.__setitem__(0, m.main.input_indexes[0])),
        ("op:duplicate_last", lambda m: m.main.operations.append(copy.deepcopy(m.main.operations[-1]))),
        ("op:none_operation", lambda m: m.main.operations.append(None)),
    ]
    if lookup(op.type) is not None or op.type in _CF:
        out.append(("op:extra_no_value_input", _extra_input))
    if lookup(op.type) is not None:
        out.append(("op:input0_bool8", lambda m: _set(m.main.operands[m.main.operations[0].inputs[0]],
                                                      type=T.TENSOR_BOOL8, scale=0.0, zero_point=0)))
        out.append(("op:input0_rank5", lambda m: _set(m.main.operands[m.main.operations[0].inputs[0]],
                                                      dimensions=[1, 1, 1, 1, 2])))
        sig = lookup(op.type).signature
        if sig.ranks.get(0) == (4, 4):
            out.append(("op:input0_rank3", lambda m: _set(m.main.operands[m.main.operations[0].inputs[0]],
                                                          dimensions=[1, 4, 4])))
        for slot, idx in enumerate(op.inputs):
            o = main.operands[idx]
            if slot not in sig.omittable and o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
                out.append((f"op:no_value_slot{slot}", lambda m, o=idx: _no_value(m, o)))
            if o.type == T.INT32 and o.lifetime == L.CONSTANT_COPY:
                out.append((f"op:slot{slot}_float_scalar", lambda m, o=idx: _set(m.main.operands[o], type=T.FLOAT32)))
    del n
    return out


def _extra_output(m):
    m.main.operands.append(Operand(T.TENSOR_FLOAT32, [1]))
    m.main.operations[0].outputs.append(len(m.main.operands) - 1)


def _extra_input(m):
    m.main.operands.append(Operand(T.TENSOR_BOOL8, [1], lifetime=L.NO_VALUE))
    m.main.operations[0].inputs.append(len(m.main.operands) - 1)


def _graph_mutations(model):
    main = model.main
    out = [
        ("graph:inputs_duplicate", lambda m: m.main.input_indexes.append(m.main.input_indexes[0])),
        ("graph:inputs_out_of_range", lambda m: m.main.input_indexes.append(len(m.main.operands))),
        ("graph:inputs_drop", lambda m: m.main.input_indexes.pop(0)),
        ("graph:inputs_none", lambda m: _set(m.main, input_indexes=None)),
        ("graph:inputs_lists_output", lambda m: m.main.input_indexes.append(m.main.output_indexes[0])),
        ("graph:outputs_drop", lambda m: m.main.output_indexes.pop()),
        ("graph:outputs_duplicate", lambda m: m.main.output_indexes.append(m.main.output_indexes[0])),
        ("graph:outputs_lists_input", lambda m: m.main.output_indexes.append(m.main.input_indexes[0])),
        ("graph:outputs_str", lambda m: _set(m.main, output_indexes="0")),
        ("graph:no_operations", lambda m: _set(m.main, operations=[])),
        ("graph:no_operands", lambda m: _set(m.main, operands=[])),
        ("graph:operations_none", lambda m: _set(m.main, operations=None)),
        ("graph:operand_none", lambda m: m.main.operands.append(None)),
        ("graph:unwritten_temp", lambda m: m.main.operands.append(Operand(T.TENSOR_FLOAT32, [1]))),
        ("graph:unlisted_input", lambda m: m.main.operands.append(Operand(T.TENSOR_FLOAT32, [1],
                                                                          lifetime=L.SUBGRAPH_INPUT))),
        ("graph:unlisted_output", lambda m: m.main.operands.append(Operand(T.TENSOR_FLOAT32, [1],
                                                                           lifetime=L.SUBGRAPH_OUTPUT))),
    ]
    if len(main.operations) >= 2:
        out += [("graph:swap_operations", lambda m: m.main.operations.reverse()),
                ("graph:drop_first_operation", lambda m: m.main.operations.pop(0)),
                ("graph:read_later_output", lambda m: m.main.operations[0].inputs.__setitem__(
                    0, m.main.operations[1].outputs[0]))]
    return out


def _model_mutations(model):
    out = [
        ("model:pool_none", lambda m: m.pools.append(None)),
        ("model:pool_bytes", lambda m: m.pools.append(b"abc")),
        ("model:pools_none", lambda m: _set(m, pools=None)),
        ("model:values_none", lambda m: _set(m, operand_values=None)),
        ("model:main_none", lambda m: _set(m, main=None)),
        ("model:referenced_none", lambda m: _set(m, referenced=None)),
        ("model:relax_str", lambda m: _set(m, relax_computation_float32_to_float16="yes")),
        ("model:ext_bad_name", lambda m: _set(m, extension_name_to_prefix=[ExtensionNameAndPrefix("Com.Vendor", 1)])),
        ("model:ext_no_period", lambda m: _set(m, extension_name_to_prefix=[ExtensionNameAndPrefix("vendor", 1)])),
        ("model:ext_dup_name", lambda m: _set(m, extension_name_to_prefix=[
            ExtensionNameAndPrefix("com.a", 1), ExtensionNameAndPrefix("com.a", 2)])),
        ("model:ext_dup_prefix", lambda m: _set(m, extension_name_to_prefix=[
            ExtensionNameAndPrefix("com.a", 1), ExtensionNameAndPrefix("com.b", 1)])),
        ("model:ext_prefix_negative", lambda m: _set(m, extension_name_to_prefix=[ExtensionNameAndPrefix("com.a", -1)])),
        ("model:ext_entry_tuple", lambda m: _set(m, extension_name_to_prefix=[("com.a", 1)])),
        ("model:unused_referenced", lambda m: m.referenced.append(copy.deepcopy(m.main))),
        ("model:referenced_str", lambda m: m.referenced.append("subgraph")),
    ]
    if model.referenced:
        out += [
            ("model:referenced_empty_ops", lambda m: _set(m.referenced[0], operations=[])),
            ("model:referenced_no_operands", lambda m: _set(m.referenced[0], operands=[])),
            ("model:referenced_cycle", _self_reference),
            ("model:referenced_bad_operand", lambda m: _set(m.referenced[0].operands[0], type=99)),
            ("model:referenced_output_type", lambda m: _set(
                m.referenced[0].operands[m.referenced[0].output_indexes[0]], type=T.TENSOR_FLOAT16)),
            ("model:referenced_extra_input", lambda m: _add_referenced_input(m, 0)),
            ("model:referenced_extra_output", lambda m: m.referenced[0].output_indexes.append(
                m.referenced[0].input_indexes[0])),
            ("model:referenced_input_dims", lambda m: _set(
                m.referenced[0].operands[m.referenced[0].input_indexes[0]], dimensions=[3])),
        ]
    return out


def _self_reference(m):
    sg = m.referenced[0]
    sg.operands.append(Operand(T.SUBGRAPH, lifetime=L.SUBGRAPH, location=DataLocation(0, 0, 0)))


def _add_referenced_input(m, k):
    sg = m.referenced[k]
    sg.operands.append(Operand(T.TENSOR_FLOAT32, [2], lifetime=L.SUBGRAPH_INPUT))
    sg.input_indexes.append(len(sg.operands) - 1)


def _q(**kw):
    return lambda m: _set(m.main.operands[m.main.operations[0].outputs[0]], **kw)


def _input_operand(slot, **kw):
    return lambda m: _set(m.main.operands[m.main.operations[0].inputs[slot]], **kw)


def _lstm_input(slot, source_slot):
    return lambda m: m.main.operations[0].inputs.__setitem__(slot, m.main.operations[0].inputs[source_slot])


SPECIFIC = {
    "mul_q8": [("mul:out_scale_too_small", _q(scale=0.1)), ("mul:out_scale_equal", _q(scale=0.125))],
    "softmax_q8": [("softmax:out_scale", _q(scale=1 / 128)), ("softmax:out_zp", _q(zero_point=1)),
                   ("softmax:beta_int", _input_operand(1, type=T.INT32))],
    "tanh_q8": [("tanh:out_zp", _q(zero_point=0)), ("tanh:out_scale", _q(scale=1 / 256))],
    "max_pool_q8": [("pool:out_zp", _q(zero_point=4)), ("pool:out_scale", _q(scale=0.25))],
    "conv_pc8": [("conv:pc8_channel_dim3", lambda m: _set(
        m.main.operands[m.main.operations[0].inputs[1]].extra_params, channel_dim=3)),
                 ("conv:pc8_bias_scale", _input_operand(2, scale=0.05)),
                 ("conv:bias_f32", _input_operand(2, type=T.TENSOR_FLOAT32)),
                 ("conv:filter_q8a_signed", _input_operand(1, type=T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.1,
                                                           extra_params=None))],
    "conv_f32": [("conv:bias_rank2", _input_operand(2, dimensions=[2, 2])),
                 ("conv:filter_f16", _input_operand(1, type=T.TENSOR_FLOAT16, dimensions=[4, 3, 3, 4]))],
    "depthwise_f32": [("depthwise:mult_float", _input_operand(6, type=T.FLOAT32)),
                      ("depthwise:filter_rank3", _input_operand(1, dimensions=[2, 2, 4]))],
    "reshape_f32": [("reshape:shape_f32", _input_operand(1, type=T.TENSOR_FLOAT32)),
                    ("reshape:shape_rank2", _input_operand(1, dimensions=[1, 2]))],
    "concatenation": [("concat:axis_float", _input_operand(2, type=T.FLOAT32)),
                      ("concat:mixed_types", _input_operand(1, type=T.TENSOR_FLOAT16)),
                      ("concat:rank_mismatch", _input_operand(1, dimensions=[1, 1, 3])),
                      ("concat:single_input", lambda m: m.main.operations[0].inputs.pop(0))],
    "fully_connected": [("fc:weights_rank3", _input_operand(1, dimensions=[4, 3, 1])),
                        ("fc:input_rank1", _input_operand(0, dimensions=[6]))],
    "add_f16": [("add:mixed_f32", _input_operand(1, type=T.TENSOR_FLOAT32)),
                ("add:act_i32_tensor", _input_operand(2, type=T.TENSOR_INT32, dimensions=[1]))],
    "lstm_f32": [("lstm:cifg_half", lambda m: _no_value(m, m.main.operations[0].inputs[1])),
                 ("lstm:omit_required_w_xf", lambda m: _no_value(m, m.main.operations[0].inputs[2])),
                 ("lstm:omit_input_gate_bias", lambda m: _no_value(m, m.main.operations[0].inputs[12])),
                 ("lstm:peephole_partial", _lstm_input(9, 12)),
                 ("lstm:projection_bias_only", _lstm_input(17, 12)),
                 ("lstm:activation_float", _input_operand(20, type=T.FLOAT32)),
                 ("lstm:cell_clip_int", _input_operand(21, type=T.INT32)),
                 ("lstm:outputs_3", lambda m: m.main.operations[0].outputs.pop())],
    "if_model": [("if:cond_f32", _input_operand(0, type=T.TENSOR_FLOAT32)),
                 ("if:cond_dims", _input_operand(0, dimensions=[2])),
                 ("if:then_not_subgraph", lambda m: m.main.operations[0].inputs.__setitem__(
                     1, m.main.operations[0].inputs[3])),
                 ("if:value_f16", _input_operand(3, type=T.TENSOR_FLOAT16)),
                 ("if:value_dims", _input_operand(3, dimensions=[3])),
                 ("if:value_rank", _input_operand(3, dimensions=[1, 2])),
                 ("if:out_scale", _q(scale=0.5))],
    "while_model": [("while:cond_output_f32", lambda m: _set(
        m.referenced[0].operands[m.referenced[0].output_indexes[0]], type=T.TENSOR_FLOAT32)),
                    ("while:cond_output_dims", lambda m: _set(
                        m.referenced[0].operands[m.referenced[0].output_indexes[0]], dimensions=[2])),
                    ("while:swap_cond_body", lambda m: m.main.operations[0].inputs.__setitem__(
                        slice(0, 2), m.main.operations[0].inputs[1::-1])),
                    ("while:value_dims", _input_operand(2, dimensions=[2])),
                    ("while:too_few_inputs", lambda m: m.main.operations[0].inputs.pop())],
}


def generate():
    cases = []
    for seed_name, build in SEEDS.items():
        model = build()
        main = model.main
        muts = []
        picked = {}
        for i, o in enumerate(main.operands):  # one representative operand per (lifetime, type)
            picked.setdefault((int(o.lifetime), int(o.type)), i)
        for (life, typ), i in sorted(picked.items()):
            muts += _operand_mutations(main, i, f"operand{i}")
        muts += _operation_mutations(model) + _graph_mutations(model) + _model_mutations(model)
        muts += SPECIFIC.get(seed_name, [])
        for name, fn in muts:
            cases.append(pytest.param(build, fn, id=f"{seed_name}-{name}"))
    return cases


CASES = generate()
_MODELS: dict = {}


def _seed(build):
    if build not in _MODELS:
        _MODELS[build] = build()
    return _MODELS[build]


def _assert_invalid(call):
    with pytest.raises(DriverError) as info:
        call()
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT, info.value


def test_enough_distinct_mutations():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 200


@pytest.mark.parametrize("build", list(SEEDS.values()), ids=list(SEEDS))
def test_seed_is_valid(build):
    validate_model(_seed(build))


@pytest.mark.parametrize("build,mutate", CASES)
def test_mutation_is_rejected(build, mutate):
    model = clone(_seed(build))
    mutate(model)
    _assert_invalid(lambda: validate_model(model))
    device = gd.get_device("reference")
    _assert_invalid(lambda: device.get_supported_operations(model))
    _assert_invalid(lambda: device.prepare_model(model))
