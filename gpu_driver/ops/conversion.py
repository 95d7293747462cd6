"""Type conversions: CAST, QUANTIZE.

- CAST converts stored values, ignoring quantization parameters (operations.md 45, AOSP Cast.cpp):
  any pair of TENSOR_FLOAT16 / FLOAT32 / INT32 / QUANT8_ASYMM (FL3), and the identity (a copy) of
  TENSOR_BOOL8, QUANT16_ASYMM, QUANT16_SYMM, QUANT8_ASYMM_SIGNED, QUANT8_SYMM (FL4).  To QUANT8_ASYMM:
  clamp to [0, 255], then truncate toward zero (NaN gives 0); float to INT32: truncate toward zero (NaN
  and values outside the int32 range give INT32_MIN, what x86 gives for AOSP's undefined cast); to float:
  round to nearest even.  Zero-sized inputs fail at execution.
- QUANTIZE (TENSOR_FLOAT32/16 → QUANT8_ASYMM, or QUANT8_ASYMM_SIGNED from FL4), AOSP Quantize.cpp in
  float32: ``q = max(qmin, min(qmax, zp + round(x / scale)))``, ``round`` half away from zero; NaN gives
  qmax (std::min/std::max).  Zero-sized inputs give an empty output.
- The accelerator (``conversion.cl``) runs every CAST (identities alias the input: no kernel) and
  QUANTIZE, exactly.  QUANTIZE is a non-decreasing step function of x, so the lowering finds, with the
  reference function, the smallest float at which each output level starts (qmax − qmin thresholds) and
  the kernel counts the thresholds ≤ x by binary search: bit-exact whatever the device's division.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import ctype, float_io, known, numel, params_ok, Work
from ..hal.abbreviations import B8, Q8S, Q16A, Q16S
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, as_float32, require_nonempty
from .registry import operation
from .signature import F16, F32, I32, Q8A, Q8AS, OpContext, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_FLOAT_TYPES = (F32, F16)
#: CAST's FL3 types: any pair of them converts
_CONVERTIBLE = (F16, F32, I32, Q8A)
#: CAST's FL4 types: identity only
_IDENTITY_ONLY = (B8, Q16A, Q16S, Q8AS, Q8S)
_INT32_MIN = -(2 ** 31)


# ---- signatures --------------------------------------------------------------------------------------

def _check_cast(ctx: OpContext, t: OperandType) -> int:
    out = ctx.out(0).type
    if t in _CONVERTIBLE and out not in _CONVERTIBLE:
        ctx.fail(f"cannot cast {OperandType(t).name} to {OperandType(out).name}")
    if t in _IDENTITY_ONLY and out != t:
        ctx.fail(f"{OperandType(t).name} casts only to itself, not to {OperandType(out).name}")
    return 3 if t in _CONVERTIBLE else 4


def _check_quantize(ctx: OpContext, t: OperandType) -> int:
    return 4 if ctx.out(0).type == Q8AS else 3


CAST_SIGNATURE = OpSignature({**{t: 3 for t in _CONVERTIBLE}, **{t: 4 for t in _IDENTITY_ONLY}},
                             (Variant("cast", ("T",), (frozenset(_CONVERTIBLE + _IDENTITY_ONLY),)),),
                             check=_check_cast)
QUANTIZE_SIGNATURE = OpSignature({F32: 3, F16: 3}, (Variant("quantize", ("T",), (frozenset((Q8A, Q8AS)),)),),
                                 check=_check_quantize)


@dataclass
class QuantizeParams(OpParams):
    """The output's quantization as the kernel sees it: float32 ``scale``, ``zero_point``, ``qmin``/``qmax``."""

    scale: float = 1.0
    zero_point: int = 0
    qmin: int = 0
    qmax: int = 255


# ---- definitions, reference kernels ------------------------------------------------------------------

def _input_shape(inputs: list[TensorInfo], name: str, allow_empty: bool) -> tuple[int, ...]:
    """The output shape: the input's (a zero-sized one fails at execution unless ``allow_empty``)."""
    shape = tuple(inputs[0].dims())
    if not allow_empty:
        require_nonempty(shape, name)
    return shape


def reference_cast(params: OpParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if inp.type == out.type:
        return [x.copy()]
    if inp.type in _FLOAT_TYPES and out.type not in _FLOAT_TYPES:
        x = x.astype(np.float32)
        nan = np.isnan(x)
        if out.type == Q8A:
            return [np.where(nan, 0, np.trunc(np.clip(x, 0.0, 255.0))).astype(np.uint8)]
        bad = nan | (x >= np.float32(2.0 ** 31)) | (x < np.float32(-2.0 ** 31))
        return [np.where(bad, _INT32_MIN, np.trunc(np.where(bad, 0.0, x))).astype(np.int32)]
    if out.type == Q8A:
        return [np.clip(x, 0, 255).astype(np.uint8)]
    with np.errstate(over="ignore"):
        return [x.astype(out.dtype)]


def quantize_values(x: np.ndarray, p: QuantizeParams) -> np.ndarray:
    """AOSP's quantization in float32 (see the module docstring), as int64."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.float32(p.zero_point) + quant.round_half_away(x / np.float32(p.scale)).astype(np.float32)
    return np.where(np.isnan(v), p.qmax, np.clip(v, p.qmin, p.qmax)).astype(np.int64)


def reference_quantize(params: QuantizeParams, inputs: list[TensorInfo],
                       outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [quantize_values(inputs[0].array(), params).astype(outputs[0].dtype)]


# ---- lowering ----------------------------------------------------------------------------------------

def supports_conversion(ctx: LoweringContext) -> bool:
    return params_ok(ctx) and known(ctx.inputs[0], ctx.outputs[0])


def _ordered_to_float(keys: np.ndarray) -> np.ndarray:
    """float32 values from their order-preserving keys: a non-negative float's key is its bit pattern, a
    negative float's its bit pattern (as int32) XOR 0x7FFFFFFF, so keys order as the floats do."""
    bits = np.where(keys < 0, keys ^ 0x7FFFFFFF, keys).astype(np.int32)
    return bits.view(np.float32)


def quantize_thresholds(p: QuantizeParams) -> np.ndarray:
    """For each level qmin + k (k = 1 … qmax − qmin) the smallest float32 x (−inf … +inf) that
    quantizes to it or above: the output is qmin + (number of thresholds ≤ x)."""
    levels = np.arange(p.qmin + 1, p.qmax + 1, dtype=np.int64)
    lo = np.full(levels.shape, -0x7F800001, dtype=np.int64)   # key of −inf (below every level but qmin)
    hi = np.full(levels.shape, 0x7F800000, dtype=np.int64)    # key of +inf (quantizes to qmax)
    while np.any(hi - lo > 1):   # invariant: level(lo) < level ≤ level(hi)
        mid = (lo + hi) // 2
        reached = quantize_values(_ordered_to_float(mid), p) >= levels
        hi = np.where(reached, mid, hi)
        lo = np.where(reached, lo, mid)
    return _ordered_to_float(hi)


def lower_conversion(ctx: LoweringContext) -> None:
    inp, out = ctx.inputs[0], ctx.outputs[0]
    if ctx.node.type == OperationType.CAST and inp.type == out.type:
        ctx.alias(0, 0)
        return
    count = numel(inp.shape)
    if count == 0:
        return
    d = {"COUNT": count, "T_IN": ctype(inp), "T_OUT": ctype(out), **float_io(inp), **float_io(out, "OUT_"),
         "FLOAT_IN": int(inp.type in _FLOAT_TYPES), "OUT_KIND": 0, "QMIN": 0, "QMAX": 0, "LEVELS": 0}
    ins = [ctx.input(0)]
    if ctx.node.type == OperationType.QUANTIZE:
        p = ctx.params
        d.update({"OP": 1, "QMIN": p.qmin, "QMAX": p.qmax, "LEVELS": p.qmax - p.qmin})
        ins.append(ctx.constant(quantize_thresholds(p)))
    else:
        d.update({"OP": 0, "OUT_KIND": 0 if out.type in _FLOAT_TYPES else 1 if out.type == I32 else 2})
    ctx.emit("conversion.cl", d, ins, [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.CAST, signature=CAST_SIGNATURE, reference=reference_cast, lower=lower_conversion,
           supports=supports_conversion)
def cast(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> OpParams:
    return OpParams(output_shapes=[_input_shape(inputs, "CAST", allow_empty=False)])


@operation(OperationType.QUANTIZE, signature=QUANTIZE_SIGNATURE, reference=reference_quantize,
           lower=lower_conversion, supports=supports_conversion)
def quantize(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> QuantizeParams:
    out = outputs[0]
    qmin, qmax = out.qrange
    return QuantizeParams(output_shapes=[_input_shape(inputs, "QUANTIZE", allow_empty=True)],
                          scale=as_float32(out.scale), zero_point=out.zero_point, qmin=qmin, qmax=qmax)
