"""Element-wise activations and conversions: RELU, RELU1, RELU6, LOGISTIC, TANH, SOFTMAX, FLOOR, DEQUANTIZE.

Quantized LOGISTIC / TANH / SOFTMAX follow the TFLite/gemmlowp fixed-point algorithms (operands.md
§8.6); their definitions precompute every integer constant (input multiplier, left shift, input
radius / diff_min) so a kernel only runs the int32 sequence of :mod:`gpu_driver.fixedpoint`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import quant
from ..fixedpoint import calculate_input_radius
from ..hal.abbreviations import Q8A
from ..hal.types import OperandType, OperationType
from .base import OpParams, TensorInfo, operation, require, same_quant_as_input
from .conv import f32
from .shape_ops import require_nonempty

_FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


def elementwise_shape(inp: TensorInfo, op_name: str) -> tuple[int, ...]:
    """The (fully known) shape of an element-wise op's input; rank ≤ 4."""
    dims = inp.dims()
    require(len(dims) <= 4, op_name, f"input rank must be at most 4, got {len(dims)}")
    return tuple(dims)


def normalize_axis(axis: int, rank: int, op_name: str) -> int:
    """An axis argument in [−rank, rank) made non-negative (operations.md §0.7)."""
    require(-rank <= axis < rank, op_name, f"axis {axis} out of range for rank {rank}")
    return axis % rank


def axis_view(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, axis_size, inner): the tensor viewed as [outer, axis_size, inner] (row-major)."""
    outer = 1
    for d in shape[:axis]:
        outer *= d
    inner = 1
    for d in shape[axis + 1:]:
        inner *= d
    return outer, shape[axis], inner


def optional_axis(inputs: list[TensorInfo], index: int, rank: int, op_name: str) -> int:
    """Decode an optional trailing axis input (default −1), normalised to [0, rank)."""
    axis = inputs[index].scalar() if len(inputs) > index and not inputs[index].omitted else -1
    return normalize_axis(axis, rank, op_name)


@dataclass
class AxisParams(OpParams):
    """An op working along ``axis`` (normalised to [0, rank)); the tensor is viewed as
    [outer_size, axis_size, inner_size] (row-major)."""

    axis: int = -1
    outer_size: int = 1
    axis_size: int = 1
    inner_size: int = 1


def axis_fields(inputs: list[TensorInfo], axis_index: int, op_name: str,
                allow_empty: bool) -> tuple[tuple[int, ...], dict]:
    """(shape, AxisParams fields) of input 0 with the optional axis argument at ``axis_index``."""
    shape = elementwise_shape(inputs[0], op_name)
    require(len(shape) >= 1, op_name, "input must have rank ≥ 1")
    if not allow_empty:
        require_nonempty(shape, op_name)
    axis = optional_axis(inputs, axis_index, len(shape), op_name)
    outer, size, inner = axis_view(shape, axis)
    return shape, dict(axis=axis, outer_size=outer, axis_size=size, inner_size=inner)


# ---- RELU / RELU1 / RELU6 ------------------------------------------------------------------------

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


def _clamp(code: int, name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, name)
    same_quant_as_input(inp, out, name)
    lo, hi = quant.activation_range_float(code)
    qlo = qhi = 0
    if inp.is_quantized:
        qmin, qmax = inp.qrange
        qlo, qhi = quant.activation_range_quantized(code, f32(inp.scale), inp.zero_point, qmin, qmax)
    return ClampParams(output_shapes=[shape], float_min=lo, float_max=hi, quant_min=qlo, quant_max=qhi)


@operation(OperationType.RELU)
def relu(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(1, "RELU", inputs, outputs)


@operation(OperationType.RELU1)
def relu1(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(2, "RELU1", inputs, outputs)


@operation(OperationType.RELU6)
def relu6(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ClampParams:
    return _clamp(3, "RELU6", inputs, outputs)


# ---- fixed output quantization ---------------------------------------------------------------------

def fixed_output_quant(inp: TensorInfo, out: TensorInfo, op_name: str, scale: float,
                       zero_points: tuple[int, int]) -> int:
    """Check a fixed output quantization (operations.md §0.4); returns the required zero point.

    ``zero_points`` = (for Q8A, for Q8AS).
    """
    zp = zero_points[0] if inp.type == Q8A else zero_points[1]
    require(out.type == inp.type, op_name, f"output type {out.type.name} must equal the input's {inp.type.name}")
    require(f32(out.scale) == scale and out.zero_point == zp, op_name,
            f"quantized output must have scale {scale} and zeroPoint {zp}, got ({out.scale}, {out.zero_point})")
    return zp


# ---- LOGISTIC / TANH --------------------------------------------------------------------------------

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


_INPUT_INTEGER_BITS = 4


def _sigmoid(function: str, name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, name)
    params = SigmoidParams(output_shapes=[shape], function=function)
    if inp.is_quantized:
        if function == "logistic":
            params.output_zero_point = fixed_output_quant(inp, out, name, 1.0 / 256, (0, -128))
            params.output_shift = 31 - 8
        else:
            params.output_zero_point = fixed_output_quant(inp, out, name, 1.0 / 128, (128, 0))
            params.output_shift = 31 - 7
        real = f32(inp.scale) * float(1 << (31 - _INPUT_INTEGER_BITS))
        require(real > 1.0, name, f"input scale {inp.scale} too small for the fixed-point kernel")
        m, shift = quant.quantize_multiplier_greater_than_one(real)
        params.input_zero_point = inp.zero_point
        params.input_multiplier = m
        params.input_left_shift = shift
        params.input_range_radius = calculate_input_radius(_INPUT_INTEGER_BITS, shift)
    return params


@operation(OperationType.LOGISTIC)
def logistic(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    return _sigmoid("logistic", "LOGISTIC", inputs, outputs)


@operation(OperationType.TANH)
def tanh(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SigmoidParams:
    return _sigmoid("tanh", "TANH", inputs, outputs)


# ---- SOFTMAX ------------------------------------------------------------------------------------------

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


_SCALED_DIFF_INTEGER_BITS = 5


@operation(OperationType.SOFTMAX)
def softmax(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SoftmaxParams:
    inp, out = inputs[0], outputs[0]
    shape, fields = axis_fields(inputs, 2, "SOFTMAX", allow_empty=True)
    beta = f32(inputs[1].scalar())
    require(beta > 0.0, "SOFTMAX", f"beta must be > 0, got {beta}")
    params = SoftmaxParams(output_shapes=[shape], beta=beta, **fields)
    if inp.is_quantized:
        params.output_zero_point = fixed_output_quant(inp, out, "SOFTMAX", 1.0 / 256, (0, -128))
        real = min(beta * f32(inp.scale) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
        require(real > 1.0, "SOFTMAX", f"beta·input scale ({beta}·{inp.scale}) too small for the fixed-point kernel")
        m, shift = quant.quantize_multiplier_greater_than_one(real)
        params.input_multiplier = m
        params.input_left_shift = shift
        params.diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, shift)
    return params


# ---- FLOOR ----------------------------------------------------------------------------------------------

@dataclass
class ElementwiseParams(OpParams):
    """A parameterless element-wise op (FLOOR): output shape = input shape."""


@operation(OperationType.FLOOR)
def floor(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ElementwiseParams:
    shape = elementwise_shape(inputs[0], "FLOOR")
    require_nonempty(shape, "FLOOR")
    return ElementwiseParams(output_shapes=[shape])


# ---- DEQUANTIZE -----------------------------------------------------------------------------------------

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


@operation(OperationType.DEQUANTIZE)
def dequantize(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DequantizeParams:
    inp, out = inputs[0], outputs[0]
    shape = elementwise_shape(inp, "DEQUANTIZE")
    require(inp.is_quantized, "DEQUANTIZE", f"input type {inp.type.name} is not quantized")
    require(out.type in _FLOAT_TYPES, "DEQUANTIZE", f"output type {out.type.name} must be TENSOR_FLOAT32/16")
    params = DequantizeParams(output_shapes=[shape], scale=f32(inp.scale), zero_point=inp.zero_point)
    if inp.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        cq = inp.channel_quant
        require(cq is not None, "DEQUANTIZE", "per-channel input without channel quantization parameters")
        require(0 <= cq.channel_dim < len(shape), "DEQUANTIZE", f"channelDim {cq.channel_dim} out of range")
        require(len(cq.scales) == shape[cq.channel_dim], "DEQUANTIZE",
                f"{len(cq.scales)} channel scales for a dimension of size {shape[cq.channel_dim]}")
        params.channel_scales = tuple(f32(s) for s in cq.scales)
        params.channel_dim = cq.channel_dim
        params.scale, params.zero_point = 0.0, 0
    return params
