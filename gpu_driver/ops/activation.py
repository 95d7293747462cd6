"""Element-wise activations and conversions: RELU, RELU1, RELU6, LOGISTIC, TANH, SOFTMAX, FLOOR, DEQUANTIZE.

- RELU* clamp to [0, ∞), [−1, 1], [0, 6]; quantized types clamp the stored values (exact).
- Quantized LOGISTIC / TANH / SOFTMAX follow the TFLite/gemmlowp fixed-point algorithms (operands.md
  §8.6) and have a fixed output quantization; their definitions precompute every integer constant
  (input multiplier, left shift, input radius / diff_min) so a kernel only runs the int32 sequence of
  :mod:`gpu_driver.fixedpoint`.  Float16 tensors are computed in fp32 and rounded (operations.md §0.9).
- SOFTMAX works along an optional axis (default the last) and accepts zero-sized inputs.
- DEQUANTIZE takes per-tensor or per-channel (TENSOR_QUANT8_SYMM_PER_CHANNEL) quantized inputs.
- The accelerator kernels run float32 and quant8_asymm (FLOOR: float32; DEQUANTIZE: quant8_asymm →
  float32).  Quantized LOGISTIC / TANH depend on the input byte only: the lowering tabulates the
  reference's fixed-point function over all 256 inputs (exact).  Quantized SOFTMAX computes in float
  with an exp table (within ±1).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import fixedpoint as fp
from .. import quant
from ..compiler.lowering_helpers import ctype, known, numel, params_ok, scalars_constant, Work
from ..fixedpoint import calculate_input_radius
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, as_float32, require, require_nonempty, same_quant_as_input
from .registry import operation
from .shape_preserving import (SIGNED_UNIT_INTERVAL_QUANT, UNIT_INTERVAL_QUANT, AxisParams, axis_fields, axis_view,
                               elementwise_shape, fixed_output_quant, float_compute, has_fixed_q8a_quant)
from .signature import (F16, F32, FLOAT_TYPES, PC8, Q8A, Q8AS, Q8S, RANK_UP_TO_4, STD_TYPES, UNARY, OpContext,
                        OpSignature, Variant, i32)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_FLOAT_TYPES = (F32, F16)
#: the fused-activation code whose clamp each RELU applies (activation fusion and chains read it)
RELU_FUSE_CODES = {OperationType.RELU: 1, OperationType.RELU1: 2, OperationType.RELU6: 3}
_INPUT_INTEGER_BITS = 4
_SCALED_DIFF_INTEGER_BITS = 5


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class ClampParams(OpParams):
    """RELU / RELU1 / RELU6: ``out = clamp(x, lo, hi)``.

    ``float_min``/``float_max``: real bounds for float types (0/+inf, −1/1, 0/6).
    ``quant_min``/``quant_max``: bounds on the raw stored values for quantized types — the real
    bounds quantized with the input's (= output's) scale/zero point and intersected with the type
    range (operands.md §4); (0, 0) for float types.
    """

    float_min: float = 0.0
    float_max: float = float("inf")
    quant_min: int = 0
    quant_max: int = 0


@dataclass
class SigmoidParams(OpParams):
    """LOGISTIC (``function == "logistic"``) or TANH (``"tanh"``).

    Float: ``1/(1+e^−x)`` / ``tanh(x)``.  Quantized (Q8A/Q8AS), per element with c = q − input_zero_point:

    - c ≤ −input_range_radius → qmin; c ≥ input_range_radius → qmax;
    - else r = MBQM_gt1(c, input_multiplier, input_left_shift) (a Q4.27 value),
      f = gemmlowp logistic/tanh(r) (Q0.31, see gpu_driver.fixedpoint),
      out = clamp(RDBPOT(f, output_shift) + output_zero_point, qmin, qmax).

    ``output_shift`` is 23 (logistic, scale 1/256) or 24 (tanh, scale 1/128); ``output_zero_point`` is
    0/−128 (logistic Q8A/Q8AS) or 128/0 (tanh).  The quantized fields are 0 for float types.
    """

    function: str = "logistic"
    input_zero_point: int = 0
    input_multiplier: int = 0
    input_left_shift: int = 0
    input_range_radius: int = 0
    input_integer_bits: int = 4
    output_shift: int = 0
    output_zero_point: int = 0


@dataclass
class SoftmaxParams(AxisParams):
    """SOFTMAX along ``axis`` (normalised to [0, rank)); the tensor is viewed as
    [outer_size, axis_size, inner_size].

    Float: ``e^((x−max)·beta) / Σ e^((x−max)·beta)``.
    Quantized (TFLite fixed point, Q5.26 differences, Q12.19 accumulator), per slice:
    d = q − max(q); entries with d < diff_min contribute 0 and output qmin; else
    r = MBQM_gt1(d, input_multiplier, input_left_shift), e = exp_on_negative_values(r, 5),
    sum = Σ RDBPOT(e, 12); h = clz32(sum); s = one_over_one_plus_x((sum << h) − 2^31);
    out = clamp(RDBPOT(SRDHM(s, e), 12 − h + 23) + output_zero_point, qmin, qmax).
    Quantized fields are 0 for float types.
    """

    beta: float = 1.0
    input_multiplier: int = 0
    input_left_shift: int = 0
    diff_min: int = 0
    output_zero_point: int = 0


@dataclass
class ElementwiseParams(OpParams):
    """A parameterless element-wise op (FLOOR): output shape = input shape."""


@dataclass
class DequantizeParams(OpParams):
    """DEQUANTIZE: ``out = (q − zero_point)·scale`` in fp32 (then rounded to fp16 for F16 outputs).

    Per-channel input (TENSOR_QUANT8_SYMM_PER_CHANNEL): ``channel_scales`` (one per index along
    ``channel_dim``) replaces ``scale`` and ``zero_point`` is 0; otherwise ``channel_scales`` is empty
    and ``channel_dim`` is −1.  Scales are fp32 values.
    """

    scale: float = 0.0
    zero_point: int = 0
    channel_scales: tuple[float, ...] = ()
    channel_dim: int = -1


# ---- signatures --------------------------------------------------------------------------------------

def _check_softmax(ctx: OpContext, t: OperandType) -> int:
    r = ctx.rank(ctx.inp(0))
    return 3 if r is None or r not in (2, 4) else 1


def _check_dequantize(ctx: OpContext, t: OperandType) -> int:
    out_t = ctx.out(0).type
    if t == Q8A and out_t == F32:
        return 1
    return 3  # Q8A→f16, Q8S/PC8→f16/f32 (FL3); Q8AS→… (FL4 through the type table)


RELU_SIGNATURE = OpSignature(STD_TYPES, UNARY, ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4},
                             same_quant=((0, 0),))
LOGISTIC_SIGNATURE = OpSignature(STD_TYPES, UNARY, ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4},
                                 fixed_quant=UNIT_INTERVAL_QUANT)
TANH_SIGNATURE = OpSignature({F32: 1, F16: 3, Q8A: 3, Q8AS: 4}, UNARY, ranks={0: RANK_UP_TO_4},
                             out_ranks={0: RANK_UP_TO_4}, fixed_quant=SIGNED_UNIT_INTERVAL_QUANT)
SOFTMAX_SIGNATURE = OpSignature(STD_TYPES, (Variant("softmax", ("T", "F"), ("T",), (((i32,), 3),)),),
                                ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4},
                                fixed_quant=UNIT_INTERVAL_QUANT, check=_check_softmax)
FLOOR_SIGNATURE = OpSignature(FLOAT_TYPES, UNARY, ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4})
DEQUANTIZE_SIGNATURE = OpSignature({Q8A: 1, Q8S: 3, PC8: 3, Q8AS: 4}, (Variant("dequantize", ("T",), ("FLT",)),),
                                   ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4},
                                   check=_check_dequantize)


# ---- definition helpers ------------------------------------------------------------------------------

def _clamp(op_type: OperationType, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    name, code = op_type.name, RELU_FUSE_CODES[op_type]
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, name)
    same_quant_as_input(inp, out, name)
    lo, hi = quant.activation_range_float(code)
    qlo = qhi = 0
    if inp.is_quantized:
        qmin, qmax = inp.qrange
        qlo, qhi = quant.activation_range_quantized(code, as_float32(inp.scale), inp.zero_point, qmin, qmax)
    return ClampParams(output_shapes=[shape], float_min=lo, float_max=hi, quant_min=qlo, quant_max=qhi)


def _sigmoid(function: str, name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, name)
    params = SigmoidParams(output_shapes=[shape], function=function)
    if inp.is_quantized:
        if function == "logistic":
            params.output_zero_point = fixed_output_quant(inp, out, name, UNIT_INTERVAL_QUANT)
            params.output_shift = 31 - 8
        else:
            params.output_zero_point = fixed_output_quant(inp, out, name, SIGNED_UNIT_INTERVAL_QUANT)
            params.output_shift = 31 - 7
        real = as_float32(inp.scale) * float(1 << (31 - _INPUT_INTEGER_BITS))
        require(real > 1.0, name, f"input scale {inp.scale} too small for the fixed-point kernel")
        m, shift = quant.quantize_multiplier_greater_than_one(real)
        params.input_zero_point = inp.zero_point
        params.input_multiplier = m
        params.input_left_shift = shift
        params.input_range_radius = calculate_input_radius(_INPUT_INTEGER_BITS, shift)
    return params


# ---- reference kernels -------------------------------------------------------------------------------

def reference_clamp(params: ClampParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    if inputs[0].is_quantized:
        return [np.clip(x, params.quant_min, params.quant_max).astype(x.dtype)]
    return [np.clip(x, params.float_min, params.float_max).astype(x.dtype)]


def reference_sigmoid(params: SigmoidParams, inputs: list[TensorInfo],
                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if not inp.is_quantized:
        xf = float_compute(x)
        r = np.tanh(xf) if params.function == "tanh" else 1.0 / (1.0 + np.exp(-xf))
        return [r.astype(x.dtype)]
    qmin, qmax = out.qrange
    c = x.astype(np.int64) - params.input_zero_point
    radius = params.input_range_radius
    inside = (c > -radius) & (c < radius)
    rescaled = quant.multiply_by_quantized_multiplier_greater_than_one(
        np.where(inside, c, 0), params.input_multiplier, params.input_left_shift)
    func = fp.tanh if params.function == "tanh" else fp.logistic
    f = func(rescaled, params.input_integer_bits)
    r = np.clip(quant.rounding_divide_by_pot(f, params.output_shift) + params.output_zero_point, qmin, qmax)
    r = np.where(inside, r, np.where(c <= -radius, qmin, qmax))
    return [r.astype(out.dtype)]


def _softmax_float(x: np.ndarray, beta: float) -> np.ndarray:
    """Float softmax over axis 1 of an [outer, axis, inner] view."""
    e = np.exp((x - x.max(axis=1, keepdims=True)) * np.float32(beta))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_quant(q: np.ndarray, params: SoftmaxParams, qmin: int, qmax: int) -> np.ndarray:
    """TFLite fixed-point softmax over axis 1 of an [outer, axis, inner] view of raw values."""
    x = q.astype(np.int64)
    diff = x - x.max(axis=1, keepdims=True)
    valid = diff >= params.diff_min
    rescaled = quant.multiply_by_quantized_multiplier_greater_than_one(
        np.where(valid, diff, 0), params.input_multiplier, params.input_left_shift)
    exp_q0 = fp.exp_on_negative_values(rescaled, 5)                       # Q0.31
    sum_of_exps = fp.wrap32(np.where(valid, quant.rounding_divide_by_pot(exp_q0, 12), 0).sum(axis=1, keepdims=True))
    headroom_plus_one = fp.count_leading_zeros32(sum_of_exps)
    num_bits_over_unit = 12 - headroom_plus_one
    shifted_sum_minus_one = (sum_of_exps << headroom_plus_one) - (1 << 31)
    shifted_scale = fp.one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    r = quant.rounding_divide_by_pot(quant.srdhm(shifted_scale, exp_q0), num_bits_over_unit + 31 - 8)
    r = np.clip(r + params.output_zero_point, qmin, qmax)
    return np.where(valid, r, qmin)


def reference_softmax(params: SoftmaxParams, inputs: list[TensorInfo],
                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out.dtype)]
    view = axis_view(x, params)
    if inp.is_quantized:
        r = _softmax_quant(view, params, *out.qrange)
    else:
        r = _softmax_float(float_compute(view), params.beta)
    return [r.reshape(x.shape).astype(out.dtype)]


def reference_floor(params: ElementwiseParams, inputs: list[TensorInfo],
                    outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    return [np.floor(x).astype(x.dtype)]


def reference_dequantize(params: DequantizeParams, inputs: list[TensorInfo],
                         outputs: list[TensorInfo]) -> list[np.ndarray]:
    q = inputs[0].array()
    if params.channel_dim >= 0:
        shape = [1] * q.ndim
        shape[params.channel_dim] = -1
        scales = np.asarray(params.channel_scales, dtype=np.float32).reshape(shape)
        r = q.astype(np.float32) * scales
    else:
        r = quant.dequantize(q, params.scale, params.zero_point)
    return [r.astype(outputs[0].dtype)]


# ---- lowerings ---------------------------------------------------------------------------------------

#: the fixed output quantization of the operations that have one
_FIXED_OUTPUT_QUANT = {OperationType.LOGISTIC: UNIT_INTERVAL_QUANT, OperationType.TANH: SIGNED_UNIT_INTERVAL_QUANT,
                       OperationType.SOFTMAX: UNIT_INTERVAL_QUANT}


def supports_unary(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out) or len(x.shape) > 4:
        return False
    op = ctx.node.type
    if op == OperationType.FLOOR:
        return x.type == F32 and out.type == F32
    if op == OperationType.DEQUANTIZE:
        return x.type == Q8A and out.type == F32
    if x.type != out.type or x.type not in (F32, Q8A):
        return False
    if x.type == Q8A and op in _FIXED_OUTPUT_QUANT:
        return has_fixed_q8a_quant(out, _FIXED_OUTPUT_QUANT[op])
    return True


def _sigmoid_table(ctx: LoweringContext) -> np.ndarray:
    """The quantized LOGISTIC/TANH output for every stored input value 0..255 (the reference's)."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    inp = dataclasses.replace(x, shape=(256,), value=np.arange(256, dtype=np.uint8), known_shape=True)
    o = dataclasses.replace(out, shape=(256,), value=None, known_shape=True)
    return np.asarray(reference_sigmoid(ctx.params, [inp], [o])[0]).reshape(256).astype(np.uint8)


def lower_unary(ctx: LoweringContext) -> None:
    x, out = ctx.inputs[0], ctx.outputs[0]
    op = ctx.node.type
    count = numel(x.shape)
    if count == 0:
        return
    d = {"T_IN": ctype(x), "T_OUT": ctype(out), "COUNT": count, "FMIN": 0.0, "FMAX": 0.0, "ZP": 0,
         "SCALE": 0.0, "QMIN": 0, "QMAX": 0}
    inputs = [ctx.input(0)]
    if op in RELU_FUSE_CODES and x.type == F32:
        d["OP"] = 0
        d["FMIN"], d["FMAX"] = quant.activation_range_float(RELU_FUSE_CODES[op])
    elif op in RELU_FUSE_CODES:
        d["OP"] = 5
        d["QMIN"], d["QMAX"] = quant.activation_range_quantized(RELU_FUSE_CODES[op], x.scale, x.zero_point, 0, 255)
    elif op == OperationType.FLOOR:
        d["OP"] = 1
    elif op == OperationType.DEQUANTIZE:
        d["OP"] = 4
        d["ZP"], d["SCALE"] = x.zero_point, as_float32(x.scale)
    elif x.type == F32:
        d["OP"] = 2 if op == OperationType.LOGISTIC else 3
    else:
        d["OP"] = 6
        inputs.append(ctx.constant(_sigmoid_table(ctx)))
    ctx.emit("activation.cl", d, inputs, [ctx.output(0)], (count,), Work.ELEMENTS)


def supports_softmax(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [1, 2]):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out) or not 1 <= len(x.shape) <= 4 or x.type != out.type or x.type not in (F32, Q8A):
        return False
    if x.type == Q8A:
        return has_fixed_q8a_quant(out, UNIT_INTERVAL_QUANT)
    return True


def lower_softmax(ctx: LoweringContext) -> None:
    p = ctx.params
    x, out = ctx.inputs[0], ctx.outputs[0]
    beta = float(p.beta)
    outer, size, inner = p.outer_size, p.axis_size, p.inner_size
    if outer * size * inner == 0:
        return
    d = {"T": ctype(x), "OUTER": outer, "AXIS": size, "INNER": inner, "BETA": beta,
         "QUANT": int(x.type == Q8A), "ZO": out.zero_point, "QMIN": 0, "QMAX": 255}
    inputs = [ctx.input(0)]
    if x.type == Q8A:
        diffs = np.arange(-255, 1, dtype=np.float64)
        inputs.append(ctx.constant(np.exp(diffs * as_float32(x.scale) * beta).astype(np.float32)))
    ctx.emit("activation_softmax.cl", d, inputs, [ctx.output(0)], (outer * inner,), Work.ROWS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.RELU, signature=RELU_SIGNATURE, reference=reference_clamp, lower=lower_unary,
           supports=supports_unary)
def relu(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(OperationType.RELU, inputs, outputs)


@operation(OperationType.RELU1, signature=RELU_SIGNATURE, reference=reference_clamp, lower=lower_unary,
           supports=supports_unary)
def relu1(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(OperationType.RELU1, inputs, outputs)


@operation(OperationType.RELU6, signature=RELU_SIGNATURE, reference=reference_clamp, lower=lower_unary,
           supports=supports_unary)
def relu6(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(OperationType.RELU6, inputs, outputs)


@operation(OperationType.LOGISTIC, signature=LOGISTIC_SIGNATURE, reference=reference_sigmoid, lower=lower_unary,
           supports=supports_unary)
def logistic(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    return _sigmoid("logistic", "LOGISTIC", inputs, outputs)


@operation(OperationType.TANH, signature=TANH_SIGNATURE, reference=reference_sigmoid, lower=lower_unary,
           supports=supports_unary)
def tanh(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    return _sigmoid("tanh", "TANH", inputs, outputs)


@operation(OperationType.SOFTMAX, signature=SOFTMAX_SIGNATURE, reference=reference_softmax, lower=lower_softmax,
           supports=supports_softmax)
def softmax(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SoftmaxParams:
    inp, out = inputs[0], outputs[0]
    shape, fields = axis_fields(inputs, 2, "SOFTMAX", allow_empty=True)
    beta = as_float32(inputs[1].scalar())
    require(beta > 0.0, "SOFTMAX", f"beta must be > 0, got {beta}")
    params = SoftmaxParams(output_shapes=[shape], beta=beta, **fields)
    if inp.is_quantized:
        params.output_zero_point = fixed_output_quant(inp, out, "SOFTMAX", UNIT_INTERVAL_QUANT)
        real = min(beta * as_float32(inp.scale) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
        require(real > 1.0, "SOFTMAX", f"beta·input scale ({beta}·{inp.scale}) too small for the fixed-point kernel")
        m, shift = quant.quantize_multiplier_greater_than_one(real)
        params.input_multiplier = m
        params.input_left_shift = shift
        params.diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, shift)
    return params


@operation(OperationType.FLOOR, signature=FLOOR_SIGNATURE, reference=reference_floor, lower=lower_unary,
           supports=supports_unary)
def floor(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ElementwiseParams:
    shape = elementwise_shape(inputs[0], "FLOOR")
    require_nonempty(shape, "FLOOR")
    return ElementwiseParams(output_shapes=[shape])


@operation(OperationType.DEQUANTIZE, signature=DEQUANTIZE_SIGNATURE, reference=reference_dequantize,
           lower=lower_unary, supports=supports_unary)
def dequantize(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DequantizeParams:
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, "DEQUANTIZE")
    require(inp.is_quantized, "DEQUANTIZE", f"input type {inp.type.name} is not quantized")
    require(out.type in _FLOAT_TYPES, "DEQUANTIZE", f"output type {out.type.name} must be TENSOR_FLOAT32/16")
    params = DequantizeParams(output_shapes=[shape], scale=as_float32(inp.scale), zero_point=inp.zero_point)
    if inp.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        cq = inp.channel_quant
        require(cq is not None, "DEQUANTIZE", "per-channel input without channel quantization parameters")
        require(0 <= cq.channel_dim < len(shape), "DEQUANTIZE", f"channelDim {cq.channel_dim} out of range")
        require(len(cq.scales) == shape[cq.channel_dim], "DEQUANTIZE",
                f"{len(cq.scales)} channel scales for a dimension of size {shape[cq.channel_dim]}")
        params.channel_scales = tuple(as_float32(s) for s in cq.scales)
        params.channel_dim = cq.channel_dim
        params.scale, params.zero_point = 0.0, 0
    return params
