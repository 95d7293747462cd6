"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION along one axis (default the last)."""
from __future__ import annotations

from dataclasses import dataclass

from ..hal.types import OperationType
from .activation import AxisParams, axis_fields, fixed_output_quant
from .base import TensorInfo, operation, require
from .conv import f32


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


@operation(OperationType.L2_NORMALIZATION)
def l2_normalization(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> L2NormParams:
    inp, out = inputs[0], outputs[0]
    shape, fields = axis_fields(inputs, 1, "L2_NORMALIZATION", allow_empty=False)
    params = L2NormParams(output_shapes=[shape], **fields)
    if inp.is_quantized:
        params.input_zero_point = inp.zero_point
        params.output_zero_point = fixed_output_quant(inp, out, "L2_NORMALIZATION", 1.0 / 128, (128, 0))
    return params


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


@operation(OperationType.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LRNParams:
    name = "LOCAL_RESPONSE_NORMALIZATION"
    require(not inputs[0].is_quantized, name, "quantized types are not supported")
    shape, fields = axis_fields(inputs, 5, name, allow_empty=False)
    radius = inputs[1].scalar()
    require(radius >= 0, name, f"radius must be ≥ 0, got {radius}")
    return LRNParams(output_shapes=[shape], **fields, radius=radius, bias=f32(inputs[2].scalar()),
                     alpha=f32(inputs[3].scalar()), beta=f32(inputs[4].scalar()))
