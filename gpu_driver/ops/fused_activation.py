"""Fused activation and the integer output stage of the accumulating operations.

Shared by the convolutions, the fully-connected layer and the pools:

- :class:`ActivationParams` / :func:`activation_fields`: a fuse code (operands.md §4) resolved for the
  output operand, as float clamp bounds and as quantized clamp bounds in stored units.
- :class:`Requantization` / :func:`requantization`: the constants turning an int32 accumulator into
  a quantized output (operands.md §8.5), one (multiplier, shift) pair per output channel.
- :func:`requantization_feature_level`: the signature rule that a Q8A output scale not above
  s_in·s_filter needs feature level 3.
- reference helpers: :func:`finish_float`, :func:`requantize`, :func:`centred`, and the C++
  :func:`std_max` / :func:`std_min` whose NaN behaviour AOSP's float kernels have.

Float clamps follow AOSP (TFLite ``ActivationFunctionWithMinMax``): ``std::min(std::max(x, lo), hi)``
with the bounds within [−FLT_MAX, FLT_MAX], applied for every fuse code (NONE too): a NaN goes
through and an infinite result becomes ±FLT_MAX.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quant
from ..hal.model import Operand
from ..hal.types import FLT_MAX, OperandType
from .definition import OpParams, TensorInfo, as_float32, fuse_code, require
from .signature import PC8, Q8A, OpContext


@dataclass
class ActivationParams(OpParams):
    """Fused activation (operands.md §4), resolved for the output operand.

    ``activation``: FuseCode 0 NONE, 1 RELU, 2 RELU1, 3 RELU6.
    ``float_min``/``float_max``: clamp bounds for float outputs, within ±FLT_MAX (TFLite's
    CalculateActivationRangeFloat: NONE is [−FLT_MAX, FLT_MAX]).
    ``act_min``/``act_max``: integer clamp bounds for quantized outputs, in stored units (already
    including the output zero point and the type's range); (0, 0) for float outputs.
    ``nan_to_low``: the activation is a float RELU operation fused into this one (compiler/fusion.py):
    its clamp keeps the RELU operation's rule that a NaN gives ``float_min``.
    ``hard_swish``: a float HARD_SWISH operation fused into this one, applied after the clamp.
    ``prelu``: a float PRELU operation by a constant vector along the output's channels fused into
    this one (compiler/fusion.py fuse_prelus), applied last; the vector is the node's last input.
    """

    activation: int = 0
    float_min: float = -FLT_MAX
    float_max: float = FLT_MAX
    act_min: int = 0
    act_max: int = 0
    nan_to_low: bool = False
    hard_swish: bool = False
    prelu: bool = False


@dataclass
class Requantization:
    """Integer requantisation of a conv-like op (operands.md §8.5).

    acc[c]   = bias[c] + Σ (q_in − input_zero_point)·(q_w − filter_zero_point)     (int32)
    q_out[c] = clamp(output_zero_point + MBQM(acc[c], output_multiplier[c], output_shift[c]),
                     act_min, act_max)
    ``output_multiplier``/``output_shift`` have one entry per output channel (repeated when the
    filter is per-tensor); ``per_channel`` tells whether they actually differ by channel.
    ``real_multiplier`` is s_in·s_w[c]/s_out (documentation / float fallbacks).
    """

    input_zero_point: int = 0
    filter_zero_point: int = 0
    output_zero_point: int = 0
    output_multiplier: tuple[int, ...] = ()
    output_shift: tuple[int, ...] = ()
    real_multiplier: tuple[float, ...] = ()
    per_channel: bool = False


def requantization_feature_level(ctx: OpContext, t: OperandType, filt: Operand) -> int:
    """Before FL3, Q8A conv/FC needed s_out > s_in·s_filter; a model violating it needs FL3."""
    if t == Q8A and filt.type == Q8A:
        if not float(ctx.out(0).scale) > float(ctx.inp(0).scale) * float(filt.scale):
            return 3
    return 1


def float_activation_range(code: int) -> tuple[float, float]:
    """The float clamp bounds of a fuse code within ±FLT_MAX (TFLite's CalculateActivationRangeFloat)."""
    lo, hi = quant.activation_range_float(code)
    return max(lo, -FLT_MAX), min(hi, FLT_MAX)


def activation_fields(code_info: TensorInfo, out: TensorInfo, op_name: str) -> dict:
    """The ActivationParams fields for fuse-code input ``code_info`` and output ``out``."""
    code = fuse_code(code_info, op_name)
    lo, hi = float_activation_range(code)
    fields = dict(activation=code, float_min=lo, float_max=hi, act_min=0, act_max=0)
    if out.is_quantized:
        qmin, qmax = out.qrange
        fields["act_min"], fields["act_max"] = quant.activation_range_quantized(
            code, as_float32(out.scale), out.zero_point, qmin, qmax)
    return fields


def requantization(inp: TensorInfo, weights: TensorInfo, bias: TensorInfo, out: TensorInfo, n_out: int,
                   channel_dim: int, op_name: str) -> Requantization | None:
    """Requantisation constants for a quantized conv / depthwise / FC; None for float types."""
    if not inp.is_quantized:
        return None
    s_in, s_out = as_float32(inp.scale), as_float32(out.scale)
    require(s_out > 0.0, op_name, "quantized output scale must be > 0")
    if weights.type == PC8:
        cq = weights.channel_quant
        require(cq is not None, op_name, "per-channel filter without per-channel quantization parameters")
        require(cq.channel_dim == channel_dim, op_name,
                f"per-channel filter must have channelDim {channel_dim}, got {cq.channel_dim}")
        require(len(cq.scales) == n_out, op_name,
                f"per-channel filter has {len(cq.scales)} scales for {n_out} output channels")
        w_scales = [as_float32(s) for s in cq.scales]
        w_zp = 0
        per_channel = True
    else:
        w_scales = [as_float32(weights.scale)] * n_out
        w_zp = weights.zero_point
        per_channel = False
        product = as_float32(np.float32(s_in) * np.float32(w_scales[0]))
        require(abs(product - as_float32(bias.scale)) <= 1e-6 * min(product, as_float32(bias.scale)), op_name,
                f"bias scale {bias.scale} must equal input scale × filter scale = {product}")
    reals, mults, shifts = [], [], []
    for s_w in w_scales:
        real = as_float32(np.float32(s_in) * np.float32(s_w)) / s_out
        m, e = quant.quantize_multiplier(real)
        reals.append(real)
        mults.append(m)
        shifts.append(e)
    return Requantization(inp.zero_point, w_zp, out.zero_point, tuple(mults), tuple(shifts), tuple(reals),
                          per_channel)


# ---- reference helpers ------------------------------------------------------------------------------

def std_max(a, b):
    """C++ ``std::max(a, b)`` = ``a < b ? b : a``: with a NaN operand, ``a``."""
    return np.where(a < b, b, a)


def std_min(a, b):
    """C++ ``std::min(a, b)`` = ``b < a ? b : a``: with a NaN operand, ``a``."""
    return np.where(b < a, b, a)


def clamp_float(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``std::min(std::max(x, lo), hi)``: a NaN goes through."""
    return std_min(std_max(x, lo), hi)


def finish_float(acc: np.ndarray, p: ActivationParams, dtype: np.dtype) -> np.ndarray:
    """Apply the float activation clamp (every fuse code, see the module docstring), round to fp32
    (then to the output type, e.g. fp16)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return clamp_float(acc, p.float_min, p.float_max).astype(np.float32).astype(dtype)


def requantize(acc: np.ndarray, q: Requantization, p: ActivationParams, dtype: np.dtype) -> np.ndarray:
    """int32 accumulators [..., C] → stored quantized values (MBQM per channel, zero point, clamp)."""
    m = np.asarray(q.output_multiplier, dtype=np.int64)
    s = np.asarray(q.output_shift, dtype=np.int64)
    r = quant.multiply_by_quantized_multiplier(acc, m, s) + q.output_zero_point
    return np.clip(r, p.act_min, p.act_max).astype(dtype)


def centred(info: TensorInfo, zero_point: int, dtype=np.float64) -> np.ndarray:
    """The operand's values as ``dtype``, minus ``zero_point``."""
    a = info.array().astype(dtype)
    return a - zero_point if zero_point else a
