"""Element-wise activations and conversions: RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, SOFTMAX,
LOG_SOFTMAX, FLOOR, DEQUANTIZE.

- RELU* clamp to [0, FLT_MAX], [−1, 1], [0, 6] as AOSP's ``std::min(std::max(lo, x), hi)``: a NaN gives
  ``lo`` and +inf gives FLT_MAX (RELU); quantized types clamp the stored values (exact).
- ELU is ``std::max(0, x) + std::min(0, alpha·(e^x − 1))`` (a NaN gives 0); HARD_SWISH (float) is
  ``x·std::min(6, std::max(0, x + 3))/6``.  Both take any rank and zero-sized inputs.
- Quantized LOGISTIC / TANH / SOFTMAX follow the TFLite/gemmlowp fixed-point algorithms (operands.md
  §8.6) and have a fixed output quantization; quantized HARD_SWISH is TFLite's int16 fixed-point
  HardSwish (free output quantization).  Definitions precompute every integer constant so a kernel
  only runs the integer sequence.  Float16 tensors are computed in fp32 and rounded (operations.md §0.9).
- SOFTMAX works along an optional axis (default the last, rank ≤ 4) and accepts zero-sized inputs;
  LOG_SOFTMAX (float only) takes a mandatory axis, any rank, and no zero-sized input.
- DEQUANTIZE takes per-tensor or per-channel (TENSOR_QUANT8_SYMM_PER_CHANNEL) quantized inputs.
- The accelerator runs every operation and type above.  Quantized LOGISTIC / TANH depend on the
  input byte only: the lowering tabulates the reference's fixed-point function over all 256 stored
  values; quantized SOFTMAX tabulates the fixed-point exponential of the 256 possible differences and
  runs the rest of the fixed-point sequence in the kernel; every quantized result is exact.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import fixedpoint as fp
from .. import quant
from ..compiler import autotune
from ..compiler.lowering_helpers import (QRANGE, axis_split, ctype, fdef, float_io, known, numel, params_ok,
                                         scalars_constant, Work)
from ..errors import failure
from ..fixedpoint import calculate_input_radius
from ..hal.types import FLT_MAX, OperandType, OperationType
from .definition import OpParams, TensorInfo, as_float32, require, require_nonempty, same_quant_as_input
from .fused_activation import float_activation_range, std_max, std_min
from .registry import operation
from .shape_preserving import (SIGNED_UNIT_INTERVAL_QUANT, UNIT_INTERVAL_QUANT, AxisParams, axis_fields, axis_view,
                               elementwise_shape, fixed_output_quant, float_compute, normalize_axis)
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
    """RELU / RELU1 / RELU6: ``out = std::min(std::max(lo, x), hi)``.

    ``float_min``/``float_max``: real bounds for float types (0/FLT_MAX, −1/1, 0/6).
    ``quant_min``/``quant_max``: bounds on the raw stored values for quantized types — the real
    bounds quantized with the input's (= output's) scale/zero point and intersected with the type
    range (operands.md §4); (0, 0) for float types.
    """

    float_min: float = 0.0
    float_max: float = FLT_MAX
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
class EluParams(OpParams):
    """ELU: ``out = std::max(0, x) + std::min(0, alpha·(e^x − 1))`` in fp32 (``alpha`` as stored)."""

    alpha: float = 1.0


@dataclass
class HardSwishParams(OpParams):
    """HARD_SWISH.  Float: ``x·std::min(6, std::max(0, x + 3))/6``.

    Quantized (TFLite reference_ops::HardSwish, int16 arithmetic), with v = q − input_zero_point:
    hires = 128·v; pre = SRDHM16(hires, output_multiplier);
    r = hires, left-shifted (saturating) by reluish_shift − 1 when reluish_shift > 0;
    r = SRDHM16(r, reluish_multiplier); then r = SatLeftShift(r, 1) when reluish_shift > 0, or
    r = RDBPOT(r, −reluish_shift) when reluish_shift < 0; r = (r + 2^15) >> 1;
    o = RDBPOT(SDHM16(r, pre), −output_shift) + output_zero_point (int16 wrap), clamped to the type.
    SRDHM16 rounds, SDHM16 truncates (``a·b / 2^15``).  The multipliers are the int16 downscaled
    QuantizeMultiplier of s_in/128/s_out and of s_in/128/(3/32768).  ``valid`` is False when the
    output multiplier's exponent is positive (s_out ≤ s_in/128): the execution fails, as AOSP's.
    """

    input_zero_point: int = 0
    output_zero_point: int = 0
    output_multiplier: int = 0
    output_shift: int = 0
    reluish_multiplier: int = 0
    reluish_shift: int = 0
    valid: bool = True


@dataclass
class SoftmaxParams(AxisParams):
    """SOFTMAX (or LOG_SOFTMAX, ``log``) along ``axis`` (normalised to [0, rank)); the tensor is viewed
    as [outer_size, axis_size, inner_size].

    Float: ``e^((x−max)·beta) / Σ e^((x−max)·beta)``; LOG_SOFTMAX: ``(x−max)·beta − log Σ e^((x−max)·beta)``.
    Quantized SOFTMAX (TFLite fixed point, Q5.26 differences, Q12.19 accumulator), per slice:
    d = q − max(q); entries with d < diff_min contribute 0 and output qmin; else
    r = MBQM_gt1(d, input_multiplier, input_left_shift), e = exp_on_negative_values(r, 5),
    sum = Σ RDBPOT(e, 12); h = clz32(sum); s = one_over_one_plus_x((sum << h) − 2^31);
    out = clamp(RDBPOT(SRDHM(s, e), 12 − h + 23) + output_zero_point, qmin, qmax).
    Quantized fields are 0 for float types.
    """

    beta: float = 1.0
    log: bool = False
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
ELU_SIGNATURE = OpSignature({F32: 4, F16: 4}, (Variant("elu", ("T", "F"), ("T",)),))
HARD_SWISH_SIGNATURE = OpSignature({F32: 4, F16: 4, Q8A: 4, Q8AS: 4}, UNARY)
SOFTMAX_SIGNATURE = OpSignature(STD_TYPES, (Variant("softmax", ("T", "F"), ("T",), (((i32,), 3),)),),
                                ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4},
                                fixed_quant=UNIT_INTERVAL_QUANT, check=_check_softmax)
LOG_SOFTMAX_SIGNATURE = OpSignature({F32: 3, F16: 3}, (Variant("log_softmax", ("T", "F", i32), ("T",)),))
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
    lo, hi = float_activation_range(code)
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


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then DownScaleInt32ToInt16Multiplier: (int16 multiplier, exponent)."""
    m, e = quant.quantize_multiplier(real)
    return (32767 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16), e


def _any_rank_shape(inp: TensorInfo, op_name: str) -> tuple[int, ...]:
    """The (fully known) shape of an input of any rank ≥ 1."""
    dims = tuple(inp.dims())
    require(len(dims) >= 1, op_name, "input must have rank ≥ 1")
    return dims


# ---- reference kernels -------------------------------------------------------------------------------

def reference_clamp(params: ClampParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    if inputs[0].is_quantized:
        return [np.clip(x, params.quant_min, params.quant_max).astype(x.dtype)]
    lo, hi = np.float32(params.float_min), np.float32(params.float_max)
    with np.errstate(over="ignore", invalid="ignore"):
        return [std_min(std_max(lo, float_compute(x)), hi).astype(np.float32).astype(x.dtype)]


def reference_sigmoid(params: SigmoidParams, inputs: list[TensorInfo],
                      outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if not inp.is_quantized:
        xf = float_compute(x)
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.tanh(xf) if params.function == "tanh" else np.float32(1) / (np.float32(1) + np.exp(-xf))
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


def reference_elu(params: EluParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    xf = float_compute(x)
    zero = np.float32(0)
    with np.errstate(over="ignore", invalid="ignore"):
        r = std_max(zero, xf) + std_min(zero, np.float32(params.alpha) * (np.exp(xf) - np.float32(1)))
    return [r.astype(np.float32).astype(x.dtype)]


def _doubling_high_mul16(a, b, rounding: bool):
    """int16 ``a·b / 2^15``, saturating: gemmlowp SaturatingRoundingDoublingHighMul (``rounding``, the
    product nudged by ±2^14) or TFLite SaturatingDoublingHighMul (truncating)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    p = a * b
    if rounding:
        p = p + np.where(p >= 0, 1 << 14, 1 - (1 << 14))
    r = np.where(p >= 0, p >> 15, -((-p) >> 15))  # C division truncates
    return np.where((a == -32768) & (b == -32768), 32767, r)


def _sat_left_shift16(x, amount: int):
    return np.clip(np.asarray(x, dtype=np.int64) << amount, -32768, 32767)


def hard_swish_quantized(q, p: HardSwishParams, qmin: int, qmax: int) -> np.ndarray:
    """TFLite's quantized HardSwish of stored values ``q`` (see :class:`HardSwishParams`)."""
    hires = (np.asarray(q, dtype=np.int64) - p.input_zero_point) * 128
    pre = _doubling_high_mul16(hires, p.output_multiplier, True)
    r = hires
    if p.reluish_shift > 0:
        r = _sat_left_shift16(r, p.reluish_shift - 1)
    r = _doubling_high_mul16(r, p.reluish_multiplier, True)
    if p.reluish_shift > 0:
        r = _sat_left_shift16(r, 1)
    elif p.reluish_shift < 0:
        r = quant.rounding_divide_by_pot(r, -p.reluish_shift)
    r = (r + (1 << 15)) >> 1
    o = quant.rounding_divide_by_pot(_doubling_high_mul16(r, pre, False), -p.output_shift) + p.output_zero_point
    o = ((o + 32768) & 0xFFFF) - 32768  # the int16 sum wraps
    return np.clip(o, qmin, qmax)


def reference_hard_swish(params: HardSwishParams, inputs: list[TensorInfo],
                         outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if inp.is_quantized:
        if x.size and not params.valid:
            raise failure("HARD_SWISH: output scale too small for the fixed-point kernel (s_out ≤ s_in/128)")
        return [hard_swish_quantized(x, params, *out.qrange).astype(out.dtype)]
    xf = float_compute(x)
    with np.errstate(over="ignore", invalid="ignore"):
        r = xf * std_min(np.float32(6), std_max(np.float32(0), xf + np.float32(3))) / np.float32(6)
    return [r.astype(np.float32).astype(out.dtype)]


def _softmax_float(x: np.ndarray, beta: float, log: bool) -> np.ndarray:
    """Float softmax (or log-softmax) over axis 1 of an [outer, axis, inner] view."""
    d = (x - x.max(axis=1, keepdims=True)) * np.float32(beta)
    if log:
        return d - np.log(np.exp(d.astype(np.float64)).sum(axis=1, keepdims=True)).astype(np.float32)
    e = np.exp(d)
    return e / e.sum(axis=1, keepdims=True)


def softmax_exp(diff: np.ndarray, params: SoftmaxParams) -> tuple[np.ndarray, np.ndarray]:
    """(valid, e): which differences q − max(q) take part, and their Q0.31 exponentials."""
    valid = diff >= params.diff_min
    rescaled = quant.multiply_by_quantized_multiplier_greater_than_one(
        np.where(valid, diff, 0), params.input_multiplier, params.input_left_shift)
    return valid, fp.exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)


def _softmax_quant(q: np.ndarray, params: SoftmaxParams, qmin: int, qmax: int) -> np.ndarray:
    """TFLite fixed-point softmax over axis 1 of an [outer, axis, inner] view of raw values."""
    x = q.astype(np.int64)
    valid, exp_q0 = softmax_exp(x - x.max(axis=1, keepdims=True), params)
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
        with np.errstate(over="ignore", invalid="ignore"):
            r = _softmax_float(float_compute(view), params.beta, params.log)
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

#: the OP literal of activation.cl
_OP_FLOAT_CLAMP, _OP_FLOOR, _OP_LOGISTIC, _OP_TANH, _OP_DEQUANTIZE, _OP_QUANT_CLAMP, _OP_TABLE, _OP_ELU, \
    _OP_HARD_SWISH, _OP_HARD_SWISH_QUANT, _OP_DEQUANTIZE_CHANNEL = range(11)


def supports_unary(ctx: LoweringContext) -> bool:
    """Every type of these operations, shapes known and scalar arguments constant."""
    if not params_ok(ctx) or not scalars_constant(ctx, range(1, len(ctx.node.inputs))):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(x, out):
        return False
    if ctx.node.type == OperationType.DEQUANTIZE:
        return x.type in (Q8A, Q8AS, Q8S, PC8) and out.type in _FLOAT_TYPES
    if ctx.node.type == OperationType.HARD_SWISH and x.is_quantized and not ctx.params.valid:
        return False
    return x.type == out.type and x.type in (F32, F16, Q8A, Q8AS)


def _byte_table(ctx: LoweringContext, reference) -> np.ndarray:
    """The quantized output of ``reference`` for every stored input value qmin..qmax (the reference's)."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    qmin, qmax = QRANGE[x.type]
    values = np.arange(qmin, qmax + 1).astype(x.dtype)
    inp = dataclasses.replace(x, shape=(256,), value=values, known_shape=True)
    o = dataclasses.replace(out, shape=(256,), value=None, known_shape=True)
    return np.asarray(reference(ctx.params, [inp], [o])[0]).reshape(256).astype(out.dtype)


def lower_unary(ctx: LoweringContext) -> None:
    x, out = ctx.inputs[0], ctx.outputs[0]
    op, p = ctx.node.type, ctx.params
    count = numel(x.shape)
    if count == 0:
        return
    io = x if x.type in _FLOAT_TYPES else out
    d = {"T_IN": ctype(x), "T_OUT": ctype(out), "COUNT": count, **float_io(io), "FMIN": 0.0, "FMAX": 0.0,
         "ALPHA": 0.0, "ZP": 0, "ZO": 0, "SCALE": 0.0, "QMIN": 0, "QMAX": 0, "M_OUT": 0, "S_OUT": 0,
         "M_RELU": 0, "S_RELU": 0, "INNER": 1, "CHANNELS": 1}
    if x.is_quantized:
        d["QMIN"], d["QMAX"] = QRANGE.get(out.type if out.is_quantized else x.type, (0, 0))
    inputs = [ctx.input(0)]
    if op in RELU_FUSE_CODES and not x.is_quantized:
        d["OP"] = _OP_FLOAT_CLAMP
        d["FMIN"], d["FMAX"] = fdef(p.float_min), fdef(p.float_max)
    elif op in RELU_FUSE_CODES:
        d["OP"] = _OP_QUANT_CLAMP
        d["QMIN"], d["QMAX"] = p.quant_min, p.quant_max
    elif op == OperationType.FLOOR:
        d["OP"] = _OP_FLOOR
    elif op == OperationType.ELU:
        d["OP"], d["ALPHA"] = _OP_ELU, fdef(p.alpha)
    elif op == OperationType.HARD_SWISH and not x.is_quantized:
        d["OP"] = _OP_HARD_SWISH
    elif op == OperationType.HARD_SWISH:
        d.update(OP=_OP_HARD_SWISH_QUANT, ZP=p.input_zero_point, ZO=p.output_zero_point, M_OUT=p.output_multiplier,
                 S_OUT=-p.output_shift, M_RELU=p.reluish_multiplier, S_RELU=p.reluish_shift)
    elif op == OperationType.DEQUANTIZE and p.channel_dim >= 0:
        d["OP"] = _OP_DEQUANTIZE_CHANNEL
        _, d["CHANNELS"], d["INNER"] = axis_split(x.shape, p.channel_dim)
        inputs.append(ctx.constant(np.asarray(p.channel_scales, dtype=np.float32)))
    elif op == OperationType.DEQUANTIZE:
        d["OP"], d["ZP"], d["SCALE"] = _OP_DEQUANTIZE, p.zero_point, fdef(p.scale)
    elif not x.is_quantized:
        d["OP"] = _OP_LOGISTIC if op == OperationType.LOGISTIC else _OP_TANH
    else:
        d["OP"] = _OP_TABLE
        inputs.append(ctx.constant(_byte_table(ctx, reference_sigmoid)))
    ctx.emit_elements("activation.cl", d, inputs, [ctx.output(0)], count)


def supports_softmax(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [1, 2]):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type and x.type in (F32, F16, Q8A, Q8AS)


#: the shortest softmax row a work group shares, on a device that wants more work items than rows
#: (LaunchTuning.min_work_items: a GPU); a CPU device's one work item per row stays
SOFTMAX_GROUP_AXIS = 64


def lower_softmax(ctx: LoweringContext) -> None:
    p = ctx.params
    x, out = ctx.inputs[0], ctx.outputs[0]
    outer, size, inner = p.outer_size, p.axis_size, p.inner_size
    if outer * size * inner == 0:
        return
    d = {"T": ctype(x), **float_io(x), "OUTER": outer, "AXIS": size, "INNER": inner, "BETA": fdef(p.beta),
         "LOG": int(p.log), "QUANT": int(x.is_quantized), "ZO": p.output_zero_point, "QMIN": 0, "QMAX": 0}
    inputs = [ctx.input(0)]
    if x.is_quantized:
        d["QMIN"], d["QMAX"] = QRANGE[out.type]
        valid, e = softmax_exp(np.arange(-255, 1, dtype=np.int64), p)
        inputs.append(ctx.constant(np.where(valid, e, -1).astype(np.int32)))
    rows = outer * inner
    if rows < autotune.target_tuning().min_work_items and size >= SOFTMAX_GROUP_AXIS:
        # a GPU with too few rows to fill it: a work group per row
        d["GROUP"] = 1
        ctx.emit("activation_softmax.cl", d, inputs, [ctx.output(0)], (rows * 16, 16, 1), Work.GROUP_TILES)
    else:
        d["GROUP"] = 0
        ctx.emit("activation_softmax.cl", d, inputs, [ctx.output(0)], (rows,), Work.ROWS)


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


@operation(OperationType.ELU, signature=ELU_SIGNATURE, reference=reference_elu, lower=lower_unary,
           supports=supports_unary)
def elu(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> EluParams:
    shape = _any_rank_shape(inputs[0], "ELU")
    return EluParams(output_shapes=[shape], alpha=as_float32(inputs[1].scalar()))


@operation(OperationType.HARD_SWISH, signature=HARD_SWISH_SIGNATURE, reference=reference_hard_swish,
           lower=lower_unary, supports=supports_unary)
def hard_swish(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> HardSwishParams:
    inp, out = inputs[0], outputs[0]
    params = HardSwishParams(output_shapes=[_any_rank_shape(inp, "HARD_SWISH")])
    if inp.is_quantized:
        require(out.scale > 0, "HARD_SWISH", f"output scale must be > 0, got {out.scale}")
        hires = np.float32(1.0 / 128.0) * np.float32(inp.scale)
        params.input_zero_point, params.output_zero_point = inp.zero_point, out.zero_point
        params.output_multiplier, params.output_shift = _int16_multiplier(float(hires / np.float32(out.scale)))
        params.reluish_multiplier, params.reluish_shift = _int16_multiplier(
            float(hires / (np.float32(3.0) / np.float32(32768.0))))
        params.valid = params.output_shift <= 0
    return params


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


@operation(OperationType.LOG_SOFTMAX, signature=LOG_SOFTMAX_SIGNATURE, reference=reference_softmax,
           lower=lower_softmax, supports=supports_softmax)
def log_softmax(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SoftmaxParams:
    shape = _any_rank_shape(inputs[0], "LOG_SOFTMAX")
    require_nonempty(shape, "LOG_SOFTMAX")
    axis = normalize_axis(inputs[2].scalar(), len(shape), "LOG_SOFTMAX")
    outer, size, inner = axis_split(shape, axis)
    return SoftmaxParams(output_shapes=[shape], axis=axis, outer_size=outer, axis_size=size, inner_size=inner,
                         beta=as_float32(inputs[1].scalar()), log=True)


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
