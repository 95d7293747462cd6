"""ADD and MUL: one broadcasting kernel for float32, quant8_asymm (operands.md §8.5) and, since HAL 1.3,
int32 (wrapping two's-complement arithmetic, no activation).
Fused float32 element-wise chains (compiler.fusion.ElementwiseChain): one generated kernel.

The quantized path is the reference's integer arithmetic bit for bit (same multipliers, computed with
gpu_driver.quant from the same operand scales).
"""
from __future__ import annotations

from ... import quant
from ...hal.types import OperationType
from ..codegen import elementwise_chain
from ..ir import TensorId
from ..lowering import LoweringContext, lowering
from ._util import F32, I32, Q8A, ctype, float_act, known, launch_1d, numel, pad_dims, params_ok, \
    row_strides, scalars_constant


def _supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [2]):
        return False
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    if not known(a, b, out) or a.type != b.type or out.type != a.type or a.type not in (F32, Q8A, I32):
        return False
    if len(a.shape) > 4 or len(b.shape) > 4:
        return False
    if a.type == Q8A and ctx.node.type == OperationType.MUL and not out.scale > a.scale * b.scale:
        return False
    return True


def _bcast_strides(shape, out_shape) -> tuple[int, ...]:
    shape = pad_dims(shape)
    strides = row_strides(shape)
    return tuple(0 if (d == 1 and o != 1) else s for d, s, o in zip(shape, strides, out_shape))


def _quant_defines(op: OperationType, a, b, out, activation: int) -> dict:
    qmin, qmax = out.qrange
    lo, hi = quant.activation_range_quantized(activation, out.scale, out.zero_point, qmin, qmax)
    d = {"ZA": a.zero_point, "ZB": b.zero_point, "ZO": out.zero_point, "ACT_MIN": lo, "ACT_MAX": hi,
         "LEFT_SHIFT": 20, "M1": 0, "S1": 0, "M2": 0, "S2": 0}
    if op == OperationType.ADD:
        twice_max = 2.0 * max(a.scale, b.scale)
        d["M1"], d["S1"] = quant.quantize_multiplier_smaller_than_one(a.scale / twice_max)
        d["M2"], d["S2"] = quant.quantize_multiplier_smaller_than_one(b.scale / twice_max)
        d["MO"], d["SO"] = quant.quantize_multiplier_smaller_than_one(twice_max / ((1 << 20) * out.scale))
    else:
        d["MO"], d["SO"] = quant.quantize_multiplier_smaller_than_one(a.scale * b.scale / out.scale)
    return d


@lowering(OperationType.ADD, OperationType.MUL, supports=_supports)
def lower_binary(ctx: LoweringContext) -> None:
    a, b = ctx.inputs[0], ctx.inputs[1]
    out = ctx.outputs[0]
    out_shape = pad_dims(ctx.params.output_shapes[0])
    count = numel(out_shape)
    if count == 0:
        return
    same = tuple(a.shape) == tuple(b.shape) == tuple(ctx.params.output_shapes[0])
    sa, sb = _bcast_strides(a.shape, out_shape), _bcast_strides(b.shape, out_shape)
    defines = {"T": ctype(a), "COUNT": count, "OP": 0 if ctx.node.type == OperationType.ADD else 1,
               "BCAST": int(not same), "QUANT": int(a.type == Q8A), "INT": int(a.type == I32)}
    for k in range(4):
        defines[f"D{k}"] = out_shape[k]
        defines[f"SA{k}"] = sa[k]
        defines[f"SB{k}"] = sb[k]
    if a.type == Q8A:
        defines.update(_quant_defines(ctx.node.type, a, b, out, ctx.params.activation))
        defines.update({"HAS_ACT": 0, "ACT_FMIN": 0.0, "ACT_FMAX": 0.0})
    else:
        defines.update(float_act(*quant.activation_range_float(ctx.params.activation)))
        defines.update({"ZA": 0, "ZB": 0, "ZO": 0, "ACT_MIN": 0, "ACT_MAX": 0, "LEFT_SHIFT": 20,
                        "M1": 0, "S1": 0, "M2": 0, "S2": 0, "MO": 0, "SO": 0})
    g, l = launch_1d(count)
    ctx.emit("binary.cl", defines, [ctx.input(0), ctx.input(1)], [ctx.output(0)], g, l)


_CHAIN_CLAMP = {OperationType.RELU: 1, OperationType.RELU1: 2, OperationType.RELU6: 3}
_CHAIN_UNARY = {OperationType.LOGISTIC: "logistic", OperationType.TANH: "tanh", OperationType.FLOOR: "floor"}


def lower_elementwise_chain(ctx: LoweringContext) -> None:
    """An ElementwiseChain node (compiler/fusion.py): its steps as one generated kernel."""
    chain, graph = ctx.node, ctx.graph
    out_shape = pad_dims(graph.tensors[chain.outputs[0]].shape)
    slot = {idx: k for k, idx in enumerate(chain.inputs)}
    strides = []
    for idx in chain.inputs:
        shape = graph.tensors[idx].shape
        strides.append(None if pad_dims(shape) == out_shape else _bcast_strides(shape, out_shape))
    steps: list[tuple] = []
    prev = None  # the operand holding the running value

    def ref(idx):
        return "v" if idx == prev else slot[idx]

    for node in chain.steps:
        if node.type in (OperationType.ADD, OperationType.MUL):
            steps.append(("+" if node.type == OperationType.ADD else "*", ref(node.inputs[0]), ref(node.inputs[1])))
            code = node.params.activation
        else:
            if prev is None:
                steps.append(("load", slot[node.inputs[0]]))
            code = _CHAIN_CLAMP.get(node.type, 0)
            if node.type in _CHAIN_UNARY:
                steps.append((_CHAIN_UNARY[node.type],))
        if code:
            steps.append(("clamp", *quant.activation_range_float(code)))
        prev = node.outputs[0]
    d = elementwise_chain(out_shape, strides, steps)
    g, l = launch_1d(d["COUNT"])
    ctx.emit("elementwise_chain.cl", d, [TensorId("operand", i) for i in chain.inputs], [ctx.output(0)], g, l)
