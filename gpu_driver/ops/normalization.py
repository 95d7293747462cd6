"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION along one axis (default the last), and
INSTANCE_NORMALIZATION over the spatial axes of an image.

- L2_NORMALIZATION: float ``x / max(√Σx², epsilon)``; quantized types follow the exact TFLite integer
  path and have a fixed output quantization (scale 1/128).  The accelerator kernel runs every type;
  its quantized path is the reference's integer sequence (exact).
- LOCAL_RESPONSE_NORMALIZATION: float types only; the window is clipped to the axis and alpha is
  not divided by the window size.  The accelerator kernel runs float32 and float16.
- Float16 tensors are computed in fp32 and rounded.
- Both accept rank 1..4; a rank other than 4 needs feature level 3.
- INSTANCE_NORMALIZATION (float types, NHWC or NCHW): per (batch, channel), the mean and population
  variance over H×W; ``out = (x − mean)·gamma/√(var + epsilon) + beta`` with scalar gamma, beta and
  epsilon.  The accelerator kernel runs one work item per (batch, channel).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import fixedpoint as fp
from .. import quant
from ..compiler.lowering_helpers import QRANGE, ctype, fdef, float_io, known, params_ok, trailing_scalars_constant, Work
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, as_float32, require
from .registry import operation
from .shape_preserving import (SIGNED_UNIT_INTERVAL_QUANT, AxisParams, axis_fields, axis_view, fixed_output_quant,
                               float_compute)
from .layout import from_nhwc, nhwc_dims, to_nhwc
from .signature import BOOL, F16, F32, FLOAT_TYPES, Q8A, Q8AS, RANK_UP_TO_4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class L2NormParams(AxisParams):
    """L2_NORMALIZATION.

    Float: ``out = x / max(√Σx², epsilon)`` over the axis.
    Quantized (exact TFLite integer path): v = q − input_zero_point; s = Σv² (int32);
    (m, sh) = GetInvSqrtQuantizedMultiplierExp(s, −1) (gpu_driver.fixedpoint, sh ≤ 0);
    out = clamp(MBQM_lt1(128·v, m, sh) + output_zero_point, qmin, qmax).  Output scale is fixed 1/128
    with zero point 128 (Q8A) or 0 (Q8AS).
    """

    epsilon: float = 1e-6
    input_zero_point: int = 0
    output_zero_point: int = 0


@dataclass
class LRNParams(AxisParams):
    """LOCAL_RESPONSE_NORMALIZATION (float only):
    ``out[i] = x[i] · (bias + alpha · Σ_{j=max(0,i−radius)}^{min(L−1,i+radius)} x[j]²)^(−beta)``
    along the axis (L = axis_size; alpha is not divided by the window size).  ``radius`` is the
    decoded value (≥ 0; windows are clipped to the axis).  bias/alpha/beta are fp32 values.
    """

    radius: int = 0
    bias: float = 1.0
    alpha: float = 1.0
    beta: float = 0.5


# ---- signatures --------------------------------------------------------------------------------------

def _check_rank4_from_fl3(ctx: OpContext, t: OperandType) -> int:
    """A rank other than 4 needs FL3."""
    r = ctx.rank(ctx.inp(0))
    return 3 if r is None or r != 4 else 1


_OPTIONAL_AXIS = ((i32,), 3)
L2_NORMALIZATION_SIGNATURE = OpSignature(
    {F32: 1, F16: 3, Q8A: 3, Q8AS: 4}, (Variant("l2norm", ("T",), ("T",), (_OPTIONAL_AXIS,)),),
    ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4}, fixed_quant=SIGNED_UNIT_INTERVAL_QUANT,
    check=_check_rank4_from_fl3)
LOCAL_RESPONSE_NORMALIZATION_SIGNATURE = OpSignature(
    FLOAT_TYPES, (Variant("lrn", ("T", i32, "F", "F", "F"), ("T",), (_OPTIONAL_AXIS,)),),
    ranks={0: RANK_UP_TO_4}, out_ranks={0: RANK_UP_TO_4}, check=_check_rank4_from_fl3)


# ---- reference kernels -------------------------------------------------------------------------------

def reference_l2_normalization(params: L2NormParams, inputs: list[TensorInfo],
                               outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if not inp.is_quantized:
        v = axis_view(float_compute(x), params)
        norm = np.sqrt((v * v).sum(axis=1, keepdims=True))
        r = v / np.maximum(norm, np.float32(params.epsilon))
        return [r.reshape(x.shape).astype(out.dtype)]
    v = axis_view(x.astype(np.int64) - params.input_zero_point, params)
    multiplier, shift = fp.inv_sqrt_quantized_multiplier_exp((v * v).sum(axis=1, keepdims=True), -1)
    r = quant.multiply_by_quantized_multiplier_smaller_than_one(v * 128, multiplier, shift)
    qmin, qmax = out.qrange
    r = np.clip(r + params.output_zero_point, qmin, qmax)
    return [r.reshape(x.shape).astype(out.dtype)]


def reference_local_response_normalization(params: LRNParams, inputs: list[TensorInfo],
                                           outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    v = axis_view(float_compute(x), params).astype(np.float64)
    size = params.axis_size
    radius = min(params.radius, size)
    # windowed sum of squares along axis 1 with a cumulative sum (window clipped to the axis)
    csum = np.concatenate([np.zeros_like(v[:, :1]), np.cumsum(v * v, axis=1)], axis=1)
    idx = np.arange(size)
    lo = np.maximum(idx - radius, 0)
    hi = np.minimum(idx + radius, size - 1) + 1
    sq = csum[:, hi] - csum[:, lo]
    r = v * np.power(params.bias + params.alpha * sq, -params.beta)
    return [r.reshape(x.shape).astype(outputs[0].dtype)]


# ---- lowerings ---------------------------------------------------------------------------------------

def supports_l2_normalization(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type and x.type in (F32, F16, Q8A, Q8AS)


def lower_l2_normalization(ctx: LoweringContext) -> None:
    p = ctx.params
    x = ctx.inputs[0]
    rows = p.outer_size * p.inner_size
    if rows * p.axis_size == 0:
        return
    d = {"T": ctype(x), **float_io(x), "QUANT": int(x.is_quantized), "OUTER": p.outer_size, "AXIS": p.axis_size,
         "INNER": p.inner_size, "EPS": fdef(p.epsilon), "ZX": p.input_zero_point, "ZO": p.output_zero_point,
         "QMIN": 0, "QMAX": 0}
    if x.is_quantized:
        d["QMIN"], d["QMAX"] = QRANGE[x.type]
    ctx.emit("normalization_l2.cl", d, [ctx.input(0)], [ctx.output(0)], (rows,), Work.ROWS)


def supports_local_response_normalization(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type and x.type in (F32, F16)


def lower_local_response_normalization(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.outer_size * p.axis_size * p.inner_size
    if count == 0:
        return
    d = {"COUNT": count, "T": ctype(ctx.inputs[0]), **float_io(ctx.inputs[0]), "AXIS": p.axis_size,
         "INNER": p.inner_size, "RADIUS": min(p.radius, p.axis_size), "BIAS": fdef(p.bias), "ALPHA": fdef(p.alpha),
         "BETA": fdef(p.beta)}
    ctx.emit("normalization_lrn.cl", d, [ctx.input(0)], [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.L2_NORMALIZATION, signature=L2_NORMALIZATION_SIGNATURE,
           reference=reference_l2_normalization, lower=lower_l2_normalization,
           supports=supports_l2_normalization)
def l2_normalization(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> L2NormParams:
    inp, out = inputs[0], outputs[0]
    shape, fields = axis_fields(inputs, 1, "L2_NORMALIZATION", allow_empty=False)
    params = L2NormParams(output_shapes=[shape], **fields)
    if inp.is_quantized:
        params.input_zero_point = inp.zero_point
        params.output_zero_point = fixed_output_quant(inp, out, "L2_NORMALIZATION", SIGNED_UNIT_INTERVAL_QUANT)
    return params


@operation(OperationType.LOCAL_RESPONSE_NORMALIZATION, signature=LOCAL_RESPONSE_NORMALIZATION_SIGNATURE,
           reference=reference_local_response_normalization, lower=lower_local_response_normalization,
           supports=supports_local_response_normalization)
def local_response_normalization(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LRNParams:
    name = "LOCAL_RESPONSE_NORMALIZATION"
    require(not inputs[0].is_quantized, name, "quantized types are not supported")
    shape, fields = axis_fields(inputs, 5, name, allow_empty=False)
    radius = inputs[1].scalar()
    require(radius >= 0, name, f"radius must be ≥ 0, got {radius}")
    return LRNParams(output_shapes=[shape], **fields, radius=radius, bias=as_float32(inputs[2].scalar()),
                     alpha=as_float32(inputs[3].scalar()), beta=as_float32(inputs[4].scalar()))


# ---- INSTANCE_NORMALIZATION ----------------------------------------------------------------------------

@dataclass
class InstanceNormParams(OpParams):
    """INSTANCE_NORMALIZATION of an [N, H, W, C] image (stored NCHW when ``nchw``): gamma, beta and
    epsilon are the scalar arguments as fp32."""

    batch: int = 0
    height: int = 0
    width: int = 0
    channels: int = 0
    nchw: bool = False
    gamma: float = 1.0
    beta: float = 0.0
    epsilon: float = 0.0


#: input, gamma, beta, epsilon (scalars of the tensor's float type), layout
INSTANCE_NORMALIZATION_SIGNATURE = OpSignature(
    {F32: 3, F16: 3}, (Variant("instance_norm", ("T", "F", "F", "F", BOOL), ("T",)),), ranks={0: (4, 4)})


def reference_instance_normalization(params: InstanceNormParams, inputs: list[TensorInfo],
                                     outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = to_nhwc(np.asarray(inputs[0].value, dtype=np.float32), params.nchw)
    with np.errstate(all="ignore"):
        mean = x.mean(axis=(1, 2), keepdims=True, dtype=np.float32)
        centred = x - mean
        var = (centred * centred).mean(axis=(1, 2), keepdims=True, dtype=np.float32)
        sigma = np.sqrt(var + np.float32(params.epsilon))
        out = centred * np.float32(params.gamma) / sigma + np.float32(params.beta)
    return [from_nhwc(out.astype(np.float32), params.nchw).astype(outputs[0].dtype)]


def supports_instance_normalization(ctx: LoweringContext) -> bool:
    x, out = ctx.inputs[0], ctx.outputs[0]
    return params_ok(ctx) and trailing_scalars_constant(ctx, 1) and known(x, out) and x.type == out.type


def lower_instance_normalization(ctx: LoweringContext) -> None:
    p = ctx.params
    planes = p.batch * p.channels
    if planes * p.height * p.width == 0:
        return
    d = {"T": ctype(ctx.inputs[0]), **float_io(ctx.inputs[0]), "N": p.batch, "C": p.channels,
         "HW": p.height * p.width, "NCHW": int(p.nchw), "GAMMA": fdef(p.gamma), "BETA": fdef(p.beta),
         "EPS": fdef(p.epsilon)}
    ctx.emit("normalization_instance.cl", d, [ctx.input(0)], [ctx.output(0)], (planes,), Work.ROWS)


@operation(OperationType.INSTANCE_NORMALIZATION, signature=INSTANCE_NORMALIZATION_SIGNATURE,
           reference=reference_instance_normalization, lower=lower_instance_normalization,
           supports=supports_instance_normalization)
def instance_normalization(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> InstanceNormParams:
    name = "INSTANCE_NORMALIZATION"
    nchw = bool(inputs[4].scalar())
    n, h, w, c = nhwc_dims(inputs[0], nchw, name)
    return InstanceNormParams(output_shapes=[tuple(inputs[0].dims())], batch=n, height=h, width=w, channels=c,
                              nchw=nchw, gamma=as_float32(inputs[1].scalar()), beta=as_float32(inputs[2].scalar()),
                              epsilon=as_float32(inputs[3].scalar()))
