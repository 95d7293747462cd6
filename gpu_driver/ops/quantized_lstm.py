"""Quantized LSTM cells, one time step each, exact integer references of AOSP's CPU implementation:
QUANTIZED_16BIT_LSTM (73, FL3) and QUANTIZED_LSTM (95, FL4).  Both are lowered to quantized_lstm.cl,
the same integer arithmetic written in the kernel dialect: QUANTIZED_16BIT_LSTM in one launch,
QUANTIZED_LSTM in two or three (gate matmuls, cell, projection).

QUANTIZED_16BIT_LSTM (TF Lite's legacy ``LstmCell<4>``) has no CIFG, peephole or projection: the
cell size is the output size O.  Inputs: x Q8A [B, I] (1/128, 128); eight weights Q8A (input-to-
{i, f, c, o} [O, I], recurrent-to-{i, f, c, o} [O, O]) sharing one scale s_w and zero point; four
I32 biases [O] (s_w/128, 0); c_prev Q16S [B, O] (scale 2⁻¹¹, zp 0: four integer bits); h_prev Q8A
[B, O] (1/128, 128).  Outputs: c_out Q16S [B, O] (c_prev's params) and h_out Q8A [B, O] (1/128, 128).
One fused fully connected layer over 4·O rows (gate blocks input, cell, forget, output), its int32
accumulators rescaled to Q3.12 (int16), then gemmlowp's int16 fixed-point logistic / tanh and the
cell update.  As AOSP does, the fused weight row is [recurrent ‖ input] while the activation row is
[x ‖ h_prev] (operations.md App. B) — conformance depends on that pairing.

QUANTIZED_LSTM (the TF Lite 8x8→16 integer LSTM; inputs as operations.md 95) follows AOSP's
QLSTM.cpp, quirks included (App. B): without layer norm no gate bias is added; the hidden zero point
is subtracted from the hidden state (and added back inside the projection); the projection clip is
divided by the projection weights' scale; the gate scales are computed in float32 as the reference
does.  Where the reference reads memory it has not written, the step is defined instead: the input
and forget peepholes read c_prev (the reference reads its output cell-state buffer), every peephole
spans num_units, and an omitted projection bias counts as zero (the reference dereferences it).
Without projection the output size must equal num_units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import fixedpoint, quant
from ..compiler.lowering_helpers import known, params_ok, scalars_constant
from ..errors import failure
from ..hal.types import OperandType, OperationType
from .definition import OpParams, ShapeUnknown, TensorInfo, as_float32, presence, require
from .recurrent import recurrent_multiply_adds
from .registry import operation
from .signature import I32, Q8A, Q8AS, Q8S, OpContext, OpSignature, Variant, f32, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

Q16S = OperandType.TENSOR_QUANT16_SYMM

# ---- int16 gemmlowp fixed point (FixedPoint<int16_t, I>; raws carried in int64 arrays) -------------
# Constants are the int32 ones of gemmlowp rescaled as RescaleConstantInitializer does (rounding
# division by 2^16); + and − wrap, * is the int16 SaturatingRoundingDoublingHighMul.

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def wrap16(x) -> np.ndarray:
    """Two's-complement wrap to int16 (an int16 ``+``/``−`` stored back in an int16)."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def sat16(x) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64), INT16_MIN, INT16_MAX)


def const16(raw32: int) -> int:
    """An int32 gemmlowp constant as its int16 counterpart (RescaleConstantInitializer)."""
    return int(quant.rounding_divide_by_pot(np.int64(raw32), 16))


def mul16(a, b) -> np.ndarray:
    """int16 SaturatingRoundingDoublingHighMul: (a·b + nudge) / 2¹⁵, division toward zero."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    p = a * b
    s = p + np.where(p >= 0, 1 << 14, 1 - (1 << 14))
    q = np.where(s >= 0, s >> 15, -((-s) >> 15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, q)


def mul_pot16(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT on int16: saturating ``x·2^e`` or rounding ``x/2^−e``."""
    x = np.asarray(x, dtype=np.int64)
    if exponent <= 0:
        return quant.rounding_divide_by_pot(x, -exponent) if exponent else x
    threshold = (1 << (15 - exponent)) - 1
    return np.where(x > threshold, INT16_MAX, np.where(x < -threshold, INT16_MIN, wrap16(x << exponent)))


def _exp_on_quarter_interval16(a) -> np.ndarray:
    """exp(a) for a ∈ [−1/4, 0) in Q0.15 (Taylor series around −1/8); the last add saturates
    (gemmlowp's AddSaturatingIf16Bit)."""
    constant_term, one_third = const16(1895147668), const16(715827883)
    x = wrap16(a + (1 << 12))                                   # a + 1/8
    x2 = mul16(x, x)
    x3 = mul16(x2, x)
    x4 = mul16(x2, x2)
    poly = mul_pot16(wrap16(mul16(wrap16(mul_pot16(x4, -2) + x3), one_third) + x2), -1)
    return sat16(constant_term + mul16(constant_term, wrap16(x + poly)))


#: the barrel shifter of exp_on_negative_values: (exponent, int32 multiplier exp(−2^exponent))
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values16(a, integer_bits: int) -> np.ndarray:
    """exp(a) for a ≤ 0 in Q``integer_bits`` (int16); result Q0.15."""
    a = np.asarray(a, dtype=np.int64)
    frac = 15 - integer_bits
    one_quarter = 1 << (frac - 2)
    a_mod = wrap16((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_quarter_interval16(mul_pot16(a_mod, integer_bits))
    remainder = wrap16(a_mod - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            hit = (remainder & (1 << (frac + exponent))) != 0
            result = np.where(hit, mul16(result, const16(multiplier)), result)
    if integer_bits > 5:                                          # exp(a) for a < −32 is 0
        result = np.where(a < const16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, INT16_MAX, result)


def _reciprocal_half_denominator16(a) -> np.ndarray:
    """Q2.13 Newton–Raphson estimate of 1/((1 + a)/2) for a ∈ [0, 1) in Q0.15 (3 iterations)."""
    s = np.asarray(a, dtype=np.int64) + INT16_MAX                 # RoundingHalfSum(a, One)
    s = s + np.where(s >= 0, 1, -1)
    half = np.where(s >= 0, s // 2, -((-s) // 2))
    x = wrap16(const16(1515870810) + mul16(half, const16(-1010580540)))   # 48/17 − 32/17·d
    for _ in range(3):
        x = wrap16(x + mul_pot16(mul16(x, wrap16((1 << 13) - mul16(half, x))), 2))
    return x


def logistic16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic of an int16 Q``integer_bits`` value; result Q0.15."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    magnitude = np.where(positive, a, wrap16(-a))
    exp = exp_on_negative_values16(wrap16(-magnitude), integer_bits)
    if_positive = mul_pot16(_reciprocal_half_denominator16(exp), 1)          # 1/(1 + e)
    return np.where(a == 0, const16(1 << 30), np.where(positive, if_positive, wrap16(INT16_MAX - if_positive)))


def tanh16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh of an int16 Q``integer_bits`` value; result Q0.15."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    exp = exp_on_negative_values16(np.where(negative, a, wrap16(-a)), integer_bits + 1)   # exp(−2|a|)
    t = mul_pot16(wrap16(_reciprocal_half_denominator16(exp) - (1 << 13)), 2)        # (1 − e)/(1 + e)
    return np.where(a == 0, 0, np.where(negative, wrap16(-t), t))


def checked_log2(x: float) -> tuple[bool, int]:
    """TF Lite's CheckedLog2 (float arithmetic): (x is a power of two within 1e−3 in log2, log2 rounded)."""
    x_log2 = np.float32(math.log(np.float32(x))) * (np.float32(1.0) / np.float32(math.log(np.float32(2.0))))
    rounded = np.float32(quant.round_half_away_scalar(float(x_log2)))
    return abs(float(x_log2 - rounded)) < 1e-3, int(rounded)


def _cell_shift(scale: float) -> int | None:
    """log2 of a cell-state scale (CheckedLog2), or None when it is not a power of two."""
    if not scale > 0:
        return None
    ok, log2 = checked_log2(scale)
    return log2 if ok else None


def _rescaled_matmul(v, weights, scale: tuple[int, int], bias=0, acc=0) -> np.ndarray:
    """sat16(acc + MultiplyByQuantizedMultiplier(v · weightsᵀ + bias)): a fully connected layer with an
    int32 accumulator (wrapping as C's does) rescaled to int16; ``v`` has its zero point removed."""
    dot = fixedpoint.wrap32(v @ np.asarray(weights, dtype=np.int64).T + bias)
    return sat16(quant.multiply_by_quantized_multiplier(dot, *scale) + acc)


# ---- QUANTIZED_16BIT_LSTM ---------------------------------------------------------------------------

Q16_INPUT, Q16_C_PREV, Q16_H_PREV = 0, 13, 14
#: input-to-{input, forget, cell, output} weights, then recurrent-to-{…}
Q16_W_INPUT, Q16_W_RECURRENT = (1, 2, 3, 4), (5, 6, 7, 8)
Q16_BIASES = (9, 10, 11, 12)
#: gate order of the fused fully connected layer (positions in the input/forget/cell/output groups)
Q16_GATE_BLOCKS = (0, 2, 1, 3)                  # input, cell, forget, output
#: the activation scale of x and h (1/128, zero point 128) and the cell state's integer bits
Q16_ACTIVATION_QUANT = (1.0 / 128.0, 128)
Q16_STATE_INTEGER_BITS = 4


@dataclass
class Quantized16LSTMParams(OpParams):
    """One QUANTIZED_16BIT_LSTM step: ``batch`` B, ``input_size`` I, ``output_size`` O; the weights'
    zero point and the (multiplier, shift) that rescales a gate accumulator to Q3.12."""

    batch: int = 0
    input_size: int = 0
    output_size: int = 0
    weights_zero_point: int = 0
    accum_multiplier: int = 0
    accum_shift: int = 0


def _same_scale(a: float, b: float) -> bool:
    """Scale equality as the C++ reference compares them (float32 values)."""
    return as_float32(a) == as_float32(b)


def _check_quantized_16bit_lstm(ctx: OpContext, t: OperandType) -> int:
    """The fixed and shared quantization parameters (the reference's prepare checks, and the fixed
    output parameters the operation documents)."""
    act_scale, act_zp = Q16_ACTIVATION_QUANT
    for i, what in ((Q16_INPUT, "input"), (Q16_H_PREV, "previous output")):
        o = ctx.inp(i)
        if not _same_scale(o.scale, act_scale) or o.zero_point != act_zp:
            ctx.fail(f"{what} (input {i}) must have scale 1/128 and zeroPoint 128, got ({o.scale}, {o.zero_point})")
    w0 = ctx.inp(Q16_W_INPUT[0])
    for i in Q16_W_INPUT[1:] + Q16_W_RECURRENT:
        w = ctx.inp(i)
        if not _same_scale(w.scale, w0.scale) or w.zero_point != w0.zero_point:
            ctx.fail(f"weights (input {i}) must share input 1's scale and zeroPoint ({w0.scale}, {w0.zero_point}), "
                     f"got ({w.scale}, {w.zero_point})")
    bias_scale = as_float32(w0.scale) / 128.0
    for i in Q16_BIASES:
        b = ctx.inp(i)
        if as_float32(b.scale) != bias_scale or b.zero_point != 0:
            ctx.fail(f"bias (input {i}) must have scale weights_scale/128 = {bias_scale} and zeroPoint 0, "
                     f"got ({b.scale}, {b.zero_point})")
    c = ctx.inp(Q16_C_PREV)
    log2 = _cell_shift(c.scale)
    if log2 is None or 15 + log2 != Q16_STATE_INTEGER_BITS or c.zero_point != 0:
        ctx.fail(f"previous cell state (input 13) must have scale 2^-11 (4 integer bits) and zeroPoint 0, "
                 f"got ({c.scale}, {c.zero_point})")
    c_out, h_out = ctx.out(0), ctx.out(1)
    if not _same_scale(c_out.scale, c.scale) or c_out.zero_point != c.zero_point:
        ctx.fail(f"cell state out (output 0) must have the previous cell state's scale and zeroPoint "
                 f"({c.scale}, {c.zero_point}), got ({c_out.scale}, {c_out.zero_point})")
    if not _same_scale(h_out.scale, act_scale) or h_out.zero_point != act_zp:
        ctx.fail(f"output (output 1) must have scale 1/128 and zeroPoint 128, got ({h_out.scale}, {h_out.zero_point})")
    return 3


#: x, 8 weights, 4 biases, c_prev, h_prev → c_out, h_out
QUANTIZED_16BIT_LSTM_SIGNATURE = OpSignature(
    {Q8A: 3}, (Variant("quantized_16bit_lstm", (Q8A,) * 9 + (I32,) * 4 + (Q16S, Q8A), (Q16S, Q8A)),),
    ranks={**{i: (2, 2) for i in (Q16_INPUT, *Q16_W_INPUT, *Q16_W_RECURRENT, Q16_C_PREV, Q16_H_PREV)},
           **{i: (1, 1) for i in Q16_BIASES}},
    out_ranks={0: (2, 2), 1: (2, 2)}, check=_check_quantized_16bit_lstm)


def _shape(info: TensorInfo, expected: tuple[int, ...], op_name: str, what: str) -> None:
    shape = tuple(info.dims())
    require(shape == tuple(expected), op_name, f"{what} (operand {info.index}) must have shape {list(expected)}, "
            f"got {list(shape)}")


def _matrix(info: TensorInfo, op_name: str, what: str) -> tuple[int, int]:
    shape = info.dims()
    require(len(shape) == 2, op_name, f"{what} must be 2-D, got shape {list(shape)}")
    return shape[0], shape[1]


def _fused_weights(inputs: list[TensorInfo], zp: int) -> np.ndarray:
    """The [4·O, O + I] weight matrix of the fused fully connected layer, zero point ``zp`` removed:
    row block g (input, cell, forget, output) is [recurrent-to-g ‖ input-to-g]."""
    rows = [np.concatenate([inputs[Q16_W_RECURRENT[g]].array(), inputs[Q16_W_INPUT[g]].array()], axis=1)
            for g in Q16_GATE_BLOCKS]
    return np.concatenate(rows, axis=0).astype(np.int64) - zp


def reference_quantized_16bit_lstm(params: Quantized16LSTMParams, inputs: list[TensorInfo],
                                   outputs: list[TensorInfo]) -> list[np.ndarray]:
    for info in inputs:
        if np.size(info.value) == 0:
            raise failure(f"QUANTIZED_16BIT_LSTM: zero-sized input operand {info.index} is not supported")
    o = params.output_size
    act_zp = Q16_ACTIVATION_QUANT[1]
    # the activation row [x ‖ h_prev] against the weight row [recurrent ‖ input] (see the module doc)
    v = np.concatenate([inputs[Q16_INPUT].array(), inputs[Q16_H_PREV].array()], axis=1).astype(np.int64) - act_zp
    bias = np.concatenate([inputs[Q16_BIASES[g]].array() for g in Q16_GATE_BLOCKS]).astype(np.int64)
    weights = _fused_weights(inputs, params.weights_zero_point)
    # Q3.12, blocks input, cell, forget, output
    gates = _rescaled_matmul(v, weights, (params.accum_multiplier, params.accum_shift), bias=bias)
    i_gate = logistic16(gates[:, 0:o], 3)
    g_gate = tanh16(gates[:, o:2 * o], 3)
    f_gate = logistic16(gates[:, 2 * o:3 * o], 3)
    o_gate = logistic16(gates[:, 3 * o:4 * o], 3)
    c_prev = inputs[Q16_C_PREV].array().astype(np.int64)
    # Q0.15 · Q0.15 rescaled to Q4.11, plus Q0.15 · Q4.11 (saturating add)
    c = sat16(mul_pot16(mul16(i_gate, g_gate), -Q16_STATE_INTEGER_BITS) + mul16(f_gate, c_prev))
    h = mul16(o_gate, tanh16(mul_pot16(c, Q16_STATE_INTEGER_BITS - 3), 3))   # tanh of c as Q3.12
    h8 = np.clip(quant.rounding_divide_by_pot(h, 8), -128, 127) + act_zp
    return [c.astype(outputs[0].dtype), h8.astype(outputs[1].dtype)]


#: every literal of quantized_lstm.cl (stage 0 serves QUANTIZED_16BIT_LSTM, stages 1–3 QUANTIZED_LSTM)
_LITERALS = dict.fromkeys(
    ("STAGE", "B", "I", "U", "O", "ZW", "M", "S", "CIFG", "PEEP", "LN", "PROJ", "PROJ_BIAS", "X_ZP", "H_ZP", "CS",
     "HAS_CELL_CLIP", "CELL_CLIP", "HAS_PROJ_CLIP", "PROJ_CLIP", "M_HID", "S_HID", "HID_ZP", "M_P", "S_P")
    + tuple(f"{name}{g}" for g in range(4) for name in ("M_X", "S_X", "M_H", "S_H", "M_C", "S_C", "M_LN", "S_LN",
                                                         "VLIM")), 0)


def _quantized_16bit_lstm_supports(ctx: LoweringContext) -> bool:
    """Decoded, shapes known, nothing zero-sized (the reference fails on an empty operand)."""
    p = ctx.params
    return params_ok(ctx) and known(*ctx.inputs, *ctx.outputs) and min(p.batch, p.input_size, p.output_size) > 0


def lower_quantized_16bit_lstm(ctx: LoweringContext) -> None:
    """One launch, a work item per (cell, batch): quantized_lstm.cl stage 0 reads the weights in their
    HAL layout (constants or model inputs alike)."""
    p = ctx.params
    d = dict(_LITERALS, STAGE=0, B=p.batch, I=p.input_size, O=p.output_size, ZW=p.weights_zero_point,
             M=p.accum_multiplier, S=p.accum_shift)
    ctx.emit("quantized_lstm.cl", d, [ctx.input(i) for i in range(Q16_H_PREV + 1)], [ctx.output(0), ctx.output(1)],
             (p.output_size, p.batch))


@operation(OperationType.QUANTIZED_16BIT_LSTM, signature=QUANTIZED_16BIT_LSTM_SIGNATURE,
           reference=reference_quantized_16bit_lstm, lower=lower_quantized_16bit_lstm,
           supports=_quantized_16bit_lstm_supports, multiply_adds=recurrent_multiply_adds)
def quantized_16bit_lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Quantized16LSTMParams:
    name = "QUANTIZED_16BIT_LSTM"
    batch, input_size = _matrix(inputs[Q16_INPUT], name, "input (input 0)")
    batch_h, output_size = _matrix(inputs[Q16_H_PREV], name, "previous output (input 14)")
    require(batch_h == batch, name, f"previous output (input 14) has {batch_h} batches, the input has {batch}")
    for i in Q16_W_INPUT:
        _shape(inputs[i], (output_size, input_size), name, f"input-to-gate weights (input {i})")
    for i in Q16_W_RECURRENT:
        _shape(inputs[i], (output_size, output_size), name, f"recurrent-to-gate weights (input {i})")
    for i in Q16_BIASES:
        _shape(inputs[i], (output_size,), name, f"gate bias (input {i})")
    _shape(inputs[Q16_C_PREV], (batch, output_size), name, "previous cell state (input 13)")
    # fully connected output scale 2⁻¹²: multiplier = bias scale / 2⁻¹² (4096·float is exact)
    multiplier, shift = quant.quantize_multiplier(4096.0 * as_float32(inputs[Q16_BIASES[0]].scale))
    shape = (batch, output_size)
    return Quantized16LSTMParams(output_shapes=[shape, shape], batch=batch, input_size=input_size,
                                 output_size=output_size, weights_zero_point=inputs[Q16_W_INPUT[0]].zero_point,
                                 accum_multiplier=multiplier, accum_shift=shift)


# ---- QUANTIZED_LSTM ---------------------------------------------------------------------------------
# Input positions (operations.md 95); gate tuples are in the order input, forget, cell, output.

QL_INPUT = 0
QL_W_X = (1, 2, 3, 4)                       # input-to-gate weights Q8S [U, I]
QL_W_H = (5, 6, 7, 8)                       # recurrent-to-gate weights Q8S [U, O]
QL_W_C = (9, 10, None, 11)                  # peephole (cell-to-gate) weights Q16S [U]; none for the cell gate
QL_BIAS = (12, 13, 14, 15)                  # gate biases I32 [U]
QL_W_PROJ, QL_B_PROJ = 16, 17
QL_H_PREV, QL_C_PREV = 18, 19
QL_LN = (20, 21, 22, 23)                    # layer-norm weights Q16S [U]
QL_CELL_CLIP, QL_PROJ_CLIP = 24, 25
QL_INTERMEDIATE = (26, 27, 28, 29)          # scales of the gate matmul results
QL_HIDDEN_ZP, QL_HIDDEN_SCALE = 30, 31
QL_OPTIONAL = frozenset({1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23})
GATE_I, GATE_F, GATE_C, GATE_O = range(4)
#: the cell state's scale is 2^cell_shift with cell_shift at most this
QL_MAX_CELL_SHIFT = -9


@dataclass
class GateQuant:
    """The fixed-point constants of one gate: (multiplier, shift) of the input and recurrent matmuls,
    of the peephole product (None without) and of the layer norm (None without), and the layer
    norm's variance floor."""

    input: tuple[int, int]
    recurrent: tuple[int, int]
    peephole: tuple[int, int] | None = None
    layer_norm: tuple[int, int] | None = None
    variance_limit: int = 0


@dataclass
class QuantizedLSTMParams(OpParams):
    """One QUANTIZED_LSTM step: ``batch`` B, ``input_size`` I, ``num_units`` U, ``output_size`` O;
    ``cell_shift`` (c_prev scale = 2^cell_shift); ``gates``, one GateQuant per gate (input, forget,
    cell, output; None for the input gate with CIFG; peephole and layer norm where present); the
    hidden-state rescaling and the projection's (None without projection) as (multiplier, shift);
    whether the projection has a bias; the quantized clips (0 = none) and the hidden zero point."""

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    output_size: int = 0
    cell_shift: int = -15
    gates: list = None
    hidden: tuple[int, int] = (0, 0)
    projection: tuple[int, int] | None = None
    projection_bias: bool = False
    cell_clip: int = 0
    projection_clip: int = 0
    hidden_zero_point: int = 0

    @property
    def use_cifg(self) -> bool:
        return self.gates[GATE_I] is None


def _check_quantized_lstm(ctx: OpContext, t: OperandType) -> int:
    c = ctx.inp(QL_C_PREV)
    shift = _cell_shift(c.scale)
    if shift is None or shift > QL_MAX_CELL_SHIFT:
        ctx.fail(f"previous cell state (input {QL_C_PREV}) scale {c.scale} must be a power of two 2^s with "
                 f"s <= {QL_MAX_CELL_SHIFT}")
    return 4


#: x, 8 weights, 3 peephole weights, 4 biases, projection weights and bias, h_prev, c_prev, 4 layer-norm
#: weights, cell/projection clip, 4 intermediate scales, hidden zero point and scale
QUANTIZED_LSTM_SIGNATURE = OpSignature(
    {Q8AS: 4},
    (Variant("quantized_lstm", (Q8AS,) + (Q8S,) * 8 + (Q16S,) * 3 + (I32,) * 4 + (Q8S, I32, Q8AS, Q16S)
             + (Q16S,) * 4 + (f32,) * 6 + (i32, f32), (Q8AS, Q16S, Q8AS)),),
    omittable=QL_OPTIONAL,
    ranks={**{i: (2, 2) for i in (QL_INPUT, *QL_W_X, *QL_W_H, QL_W_PROJ, QL_H_PREV, QL_C_PREV)},
           **{i: (1, 1) for i in (9, 10, 11, *QL_BIAS, QL_B_PROJ, *QL_LN)}},
    out_ranks={0: (2, 2), 1: (2, 2), 2: (2, 2)}, check=_check_quantized_lstm)


def _decided(info: TensorInfo) -> bool:
    """Presence of an optional input; ShapeUnknown while it is undecided (a model input)."""
    p = presence(info)
    if p is None:
        raise ShapeUnknown(f"operand {info.index}: presence of an optional input is only known at execution")
    return p


def _f32_multiplier(*factors: float, divisor: float) -> tuple[int, int]:
    """QuantizeMultiplier of a product of scales computed in float32, as the reference does."""
    real = np.float32(1.0)
    for f in factors:
        real = np.float32(real * np.float32(f))
    return quant.quantize_multiplier(float(np.float32(real / np.float32(divisor))))


def _decode_quantized_lstm_presence(inputs: list[TensorInfo], name: str) -> dict[int, bool]:
    """Which optional inputs are present, checked against the option-group rules."""
    present = {i: _decided(inputs[i]) for i in QL_OPTIONAL}
    for i in range(QL_HIDDEN_SCALE + 1):
        if i not in QL_OPTIONAL:
            require(not inputs[i].omitted, name, f"required input {i} (operand {inputs[i].index}) is omitted")
    cifg = not present[QL_W_X[GATE_I]]
    require(present[QL_W_H[GATE_I]] != cifg, name,
            "input-to-input (1) and recurrent-to-input (5) weights must both be present or both be omitted (CIFG)")
    require(present[QL_BIAS[GATE_I]] != cifg, name, "the input gate bias (12) must be present exactly when "
            "input-to-input weights are (no CIFG)")
    peep = [present[i] for i in (9, 10, 11)]
    require(not any(peep) or ((peep[0] or cifg) and peep[1] and peep[2]), name,
            "peephole weights (9, 10, 11) must be all present or all omitted (9 may be omitted with CIFG)")
    ln = [present[i] for i in QL_LN]
    require(not (cifg and ln[0]), name, "the input layer-norm weights (20) must be omitted with CIFG")
    require(len(set(ln[1:] if cifg else ln)) == 1, name, "layer-norm weights (20–23) must be all present or "
            "all omitted (20 omitted with CIFG)")
    require(present[QL_W_PROJ] or not present[QL_B_PROJ], name, "projection bias (17) given without projection "
            "weights (16)")
    return present


def _trunc_div(a, n) -> np.ndarray:
    """C integer division (toward zero)."""
    a = np.asarray(a, dtype=np.int64)
    return np.where(a >= 0, a // n, -((-a) // n))


def _layer_norm_int16(v, weights, bias, scale: tuple[int, int], variance_limit: int) -> np.ndarray:
    """Integer layer normalisation of each batch row of the int16 gate values ``v``, then ·weights + bias,
    rescaled to Q3.12 (the reference's ApplyLayerNorm)."""
    n = v.shape[1]
    mean = _trunc_div(v.sum(axis=1) * 1024, n)
    variance = _trunc_div((v * v).sum(axis=1) * ((1 << 20) // n) - mean * mean, 1 << 20)
    variance = np.where(variance < 1, variance_limit, variance)
    inv_m, inv_shift = fixedpoint.inv_sqrt_quantized_multiplier_exp(variance, -1)
    rescaled = quant.multiply_by_quantized_multiplier(1024 * v - mean[:, None], inv_m[:, None], inv_shift[:, None])
    z = fixedpoint.wrap32(rescaled * np.asarray(weights, dtype=np.int64) + np.asarray(bias, dtype=np.int64))
    z = _trunc_div(np.where(z > 0, z + 512, z - 512), 1024)
    return sat16(quant.multiply_by_quantized_multiplier(z, scale[0], scale[1] + 12))


def _quantized_lstm_gate(params: QuantizedLSTMParams, g: int, t: list, x, h_prev, cell) -> np.ndarray:
    """The int16 (Q3.12) pre-activation of gate ``g``: both matmuls, the peephole term on ``cell``,
    then layer norm with the gate bias (without layer norm the reference adds no gate bias)."""
    q = params.gates[g]
    acc = _rescaled_matmul(x, t[QL_W_X[g]], q.input)
    acc = _rescaled_matmul(h_prev, t[QL_W_H[g]], q.recurrent, acc=acc)
    if q.peephole is not None:
        acc = sat16(quant.multiply_by_quantized_multiplier(t[QL_W_C[g]] * cell, *q.peephole) + acc)
    if q.layer_norm is not None:
        acc = _layer_norm_int16(acc, t[QL_LN[g]], t[QL_BIAS[g]], q.layer_norm, q.variance_limit)
    return acc


def reference_quantized_lstm(params: QuantizedLSTMParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    for info in inputs:
        if info.value is not None and info.shape and np.size(info.value) == 0:
            raise failure(f"QUANTIZED_LSTM: zero-sized input operand {info.index} is not supported")
    t = [None if i.omitted or i.value is None or not i.shape else np.asarray(i.value).astype(np.int64)
         for i in inputs]
    x = t[QL_INPUT] - inputs[QL_INPUT].zero_point
    h_zp = inputs[QL_H_PREV].zero_point
    h_prev, c_prev = t[QL_H_PREV] - h_zp, t[QL_C_PREV]
    cs = params.cell_shift
    f = logistic16(_quantized_lstm_gate(params, GATE_F, t, x, h_prev, c_prev), 3)
    g = tanh16(_quantized_lstm_gate(params, GATE_C, t, x, h_prev, None), 3)
    if params.use_cifg:
        i = INT16_MAX - f
    else:
        i = logistic16(_quantized_lstm_gate(params, GATE_I, t, x, h_prev, c_prev), 3)
    # f·c_prev back to the cell scale, plus i·g (Q0.30) at the cell scale 2^cs; each stored in int16
    c = sat16(wrap16(quant.rounding_divide_by_pot(f * c_prev, 15))
              + wrap16(quant.rounding_divide_by_pot(i * g, 30 + cs)))
    if params.cell_clip > 0:
        c = np.clip(c, -params.cell_clip, params.cell_clip)
    o = logistic16(_quantized_lstm_gate(params, GATE_O, t, x, h_prev, c), 3)
    # tanh of the cell state read with 15 + cs integer bits; outside 0…6 the reference leaves the
    # buffer it reuses (the input gate's) as it was
    tanh_c = tanh16(c, 15 + cs) if 0 <= 15 + cs <= 6 else i
    hidden = np.clip(quant.multiply_by_quantized_multiplier(o * tanh_c, *params.hidden) - params.hidden_zero_point,
                     -128, 127)
    if params.projection is not None:
        bias = t[QL_B_PROJ] if params.projection_bias else 0
        # the reference folds +zp_hidden·Σ W into the bias: it multiplies (hidden + zp_hidden)
        dot = fixedpoint.wrap32((hidden + params.hidden_zero_point) @ t[QL_W_PROJ].T + bias)
        out = np.clip(quant.multiply_by_quantized_multiplier(dot, *params.projection) + h_zp, -128, 127)
        if params.projection_clip > 0:
            out = np.clip(out, -params.projection_clip, params.projection_clip)
    else:
        out = hidden
    return [out.astype(outputs[0].dtype), c.astype(outputs[1].dtype), out.astype(outputs[2].dtype)]


def _quantized_lstm_supports(ctx: LoweringContext) -> bool:
    """Decoded, scalars constant, shapes known, nothing zero-sized, and a cell scale 2^cell_shift the
    kernel's rounding shift 30 + cell_shift covers."""
    p = ctx.params
    tensors = [t for t in [*ctx.inputs, *ctx.outputs] if not t.omitted]
    return (params_ok(ctx) and scalars_constant(ctx, range(QL_CELL_CLIP, QL_HIDDEN_SCALE + 1)) and known(*tensors)
            and min(p.batch, p.input_size, p.num_units, p.output_size) > 0 and p.cell_shift >= -30)


def _gate_defines(p: QuantizedLSTMParams) -> dict:
    """The per-gate literals of quantized_lstm.cl (zeros where a gate lacks the part)."""
    d = {}
    for g, q in enumerate(p.gates):
        q = q or GateQuant((0, 0), (0, 0))
        for name, pair in (("X", q.input), ("H", q.recurrent), ("C", q.peephole), ("LN", q.layer_norm)):
            d[f"M_{name}{g}"], d[f"S_{name}{g}"] = pair or (0, 0)
        d[f"VLIM{g}"] = q.variance_limit
    return d


def lower_quantized_lstm(ctx: LoweringContext) -> None:
    """quantized_lstm.cl stages 1 (gate matmuls, into an int32 scratch [B, 4U]), 2 (cell; per batch row
    with layer norm) and, with projection, 3; weights read in their HAL layout.  A tensor the node
    lacks is passed as a placeholder of its element type the kernel never reads."""
    p = ctx.params
    cifg = p.use_cifg
    peephole = p.gates[GATE_F].peephole is not None
    layer_norm = p.gates[GATE_F].layer_norm is not None
    projection = p.projection is not None
    d = dict(_LITERALS, B=p.batch, I=p.input_size, U=p.num_units, O=p.output_size, CIFG=int(cifg),
             PEEP=int(peephole), LN=int(layer_norm), PROJ=int(projection), PROJ_BIAS=int(p.projection_bias),
             X_ZP=ctx.inputs[QL_INPUT].zero_point, H_ZP=ctx.inputs[QL_H_PREV].zero_point, CS=p.cell_shift,
             HAS_CELL_CLIP=int(p.cell_clip > 0), CELL_CLIP=p.cell_clip,
             HAS_PROJ_CLIP=int(p.projection_clip > 0), PROJ_CLIP=p.projection_clip,
             M_HID=p.hidden[0], S_HID=p.hidden[1], HID_ZP=p.hidden_zero_point, **_gate_defines(p))
    if projection:
        d["M_P"], d["S_P"] = p.projection
    pre = ctx.scratch("int32", p.batch * 4 * p.num_units)
    c_prev = ctx.input(QL_C_PREV)

    def gate_inputs(slots, placeholder, present=True):
        return [ctx.input(i) if present and i is not None and not (cifg and g == GATE_I) else placeholder
                for g, i in enumerate(slots)]

    ctx.emit("quantized_lstm.cl", {**d, "STAGE": 1},
             [ctx.input(QL_INPUT), ctx.input(QL_H_PREV)] + gate_inputs(QL_W_X, ctx.input(QL_W_X[GATE_F]))
             + gate_inputs(QL_W_H, ctx.input(QL_W_H[GATE_F])), [pre], (p.num_units, 4, p.batch))
    peep = [w for g, w in enumerate(gate_inputs(QL_W_C, c_prev, peephole)) if g != GATE_C]
    ins = [pre, c_prev, *peep, *gate_inputs(QL_BIAS, pre, layer_norm), *gate_inputs(QL_LN, c_prev, layer_norm)]
    m = ctx.scratch("int32", p.batch * p.num_units) if projection else None
    outs = [ctx.output(1)] + ([m] if projection else [ctx.output(0), ctx.output(2)])
    ctx.emit("quantized_lstm.cl", {**d, "STAGE": 2}, ins, outs,
             (p.batch,) if layer_norm else (p.num_units, p.batch))
    if projection:
        bias = ctx.input(QL_B_PROJ) if p.projection_bias else m
        ctx.emit("quantized_lstm.cl", {**d, "STAGE": 3}, [m, ctx.input(QL_W_PROJ), bias],
                 [ctx.output(0), ctx.output(2)], (p.output_size, p.batch))


@operation(OperationType.QUANTIZED_LSTM, signature=QUANTIZED_LSTM_SIGNATURE, reference=reference_quantized_lstm,
           lower=lower_quantized_lstm, supports=_quantized_lstm_supports, multiply_adds=recurrent_multiply_adds)
def quantized_lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> QuantizedLSTMParams:
    name = "QUANTIZED_LSTM"
    present = _decode_quantized_lstm_presence(inputs, name)
    cifg, peephole = not present[QL_W_X[GATE_I]], present[QL_W_C[GATE_O]]
    projection, layer_norm = present[QL_W_PROJ], present[QL_LN[GATE_O]]
    batch, input_size = _matrix(inputs[QL_INPUT], name, "input (input 0)")
    num_units, i2 = _matrix(inputs[QL_W_X[GATE_O]], name, "input-to-output weights (input 4)")
    require(i2 == input_size, name, f"input-to-output weights have {i2} columns, the input size is {input_size}")
    u2, output_size = _matrix(inputs[QL_W_H[GATE_O]], name, "recurrent-to-output weights (input 8)")
    require(u2 == num_units, name, f"recurrent-to-output weights have {u2} rows, expected {num_units}")
    gates = [g for g in range(4) if not (cifg and g == GATE_I)]
    for g in gates:
        _shape(inputs[QL_W_X[g]], (num_units, input_size), name, f"input-to-gate weights (input {QL_W_X[g]})")
        _shape(inputs[QL_W_H[g]], (num_units, output_size), name, f"recurrent-to-gate weights (input {QL_W_H[g]})")
        _shape(inputs[QL_BIAS[g]], (num_units,), name, f"gate bias (input {QL_BIAS[g]})")
        for i in (QL_W_C[g], QL_LN[g]):
            if i is not None and present[i]:
                _shape(inputs[i], (num_units,), name, f"input {i}")
    if projection:
        _shape(inputs[QL_W_PROJ], (output_size, num_units), name, f"projection weights (input {QL_W_PROJ})")
        if present[QL_B_PROJ]:
            _shape(inputs[QL_B_PROJ], (output_size,), name, f"projection bias (input {QL_B_PROJ})")
    else:
        require(output_size == num_units, name,
                f"without projection the output size ({output_size}) must equal num_units ({num_units})")
    _shape(inputs[QL_H_PREV], (batch, output_size), name, f"previous output (input {QL_H_PREV})")
    _shape(inputs[QL_C_PREV], (batch, num_units), name, f"previous cell state (input {QL_C_PREV})")

    x, h_prev, c_prev = inputs[QL_INPUT], inputs[QL_H_PREV], inputs[QL_C_PREV]
    cell_shift = _cell_shift(c_prev.scale)
    require(cell_shift is not None and cell_shift <= QL_MAX_CELL_SHIFT, name,
            f"previous cell state scale {c_prev.scale} must be 2^s with s <= {QL_MAX_CELL_SHIFT}")
    hidden_scale = inputs[QL_HIDDEN_SCALE].scalar()
    require(hidden_scale > 0, name, f"hidden state scale {hidden_scale} must be positive")
    quants: list[GateQuant | None] = [None] * 4
    for g in gates:
        s_int = inputs[QL_INTERMEDIATE[g]].scalar()
        require(s_int > 0, name, f"intermediate scale (input {QL_INTERMEDIATE[g]}) {s_int} must be positive")
        q = GateQuant(_f32_multiplier(inputs[QL_W_X[g]].scale, x.scale, divisor=s_int),
                      _f32_multiplier(inputs[QL_W_H[g]].scale, h_prev.scale, divisor=s_int))
        if peephole and QL_W_C[g] is not None and present[QL_W_C[g]]:
            # 2^cell_shift · scale / intermediate in double, stored as a float
            real = math.ldexp(1.0, cell_shift) * as_float32(inputs[QL_W_C[g]].scale) / as_float32(s_int)
            q.peephole = quant.quantize_multiplier(as_float32(real))
        if layer_norm:
            ln_scale = as_float32(inputs[QL_LN[g]].scale)
            q.layer_norm = quant.quantize_multiplier(ln_scale)
            q.variance_limit = min(1, int(np.float32(10000) * np.float32(ln_scale)))
        quants[g] = q
    hidden = quant.quantize_multiplier(as_float32(2.0 ** -15 / as_float32(hidden_scale) * 2.0 ** -15))
    proj = _f32_multiplier(inputs[QL_W_PROJ].scale, hidden_scale, divisor=h_prev.scale) if projection else None
    cell_clip, proj_clip = inputs[QL_CELL_CLIP].scalar(), inputs[QL_PROJ_CLIP].scalar()
    q_cell_clip = q_proj_clip = 0
    if cell_clip > 0:
        q_cell_clip = int(min(max(float(np.float32(cell_clip) / np.float32(c_prev.scale)), -32768.0), 32767.0))
    if proj_clip > 0 and projection:
        # the reference divides by the projection weights' scale
        q_proj_clip = int(min(max(float(np.float32(proj_clip) / np.float32(inputs[QL_W_PROJ].scale)), -128.0),
                              127.0))
    zp = inputs[QL_HIDDEN_ZP].scalar()
    hidden_zp = ((zp + 128) & 0xFF) - 128              # the reference reads the INT32 operand as an int8
    return QuantizedLSTMParams(
        output_shapes=[(batch, output_size), (batch, num_units), (batch, output_size)], batch=batch,
        input_size=input_size, num_units=num_units, output_size=output_size, cell_shift=cell_shift, gates=quants,
        hidden=hidden, projection=proj, projection_bias=present[QL_B_PROJ], cell_clip=q_cell_clip,
        projection_clip=q_proj_clip, hidden_zero_point=hidden_zp)
