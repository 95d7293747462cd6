"""Element-wise math functions: ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT.

- One input of any rank ≥ 1, one output of the same shape and type; a zero-sized input fails
  (GENERAL_FAILURE, operations.md §0.6).
- Float types compute in fp32 as C's ``fabsf``, ``expf``, ``logf``, ``-x``, ``1.0f / sqrtf(x)``,
  ``sinf``, ``sqrtf`` (fp16 is rounded once at the end): a negative input of LOG/SQRT/RSQRT gives
  NaN, LOG(0) = −inf, RSQRT(±0) = ±inf.
- TENSOR_INT32 (ABS FL4, NEG FL3) wraps: ``ABS(INT32_MIN) = NEG(INT32_MIN) = INT32_MIN``.
- Quantized RSQRT (Q8A/Q8AS, FL7; free output quantization) is AOSP's element-wise dequantize →
  function → quantize in fp32: ``x = (q − zp_in)·s_in``, ``y = 1/√x``,
  ``out = clamp(zp_out + round_half_away(y / s_out))`` with C++ ``std::min``/``std::max``, so a NaN
  (negative x) and +inf (x = 0) give qmax.
- The accelerator kernel (``unary.cl``) runs every operation and type above; quantized RSQRT reads
  the reference's result for every stored input value from a table (exact).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..compiler.lowering_helpers import QRANGE, ctype, float_io, known, numel, params_ok, Work
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, require, require_nonempty
from .registry import operation
from .signature import F16, F32, I32, Q8A, Q8AS, UNARY, OpSignature

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_FLOATS = {F32: 3, F16: 3}
#: the OP literal of unary.cl for each operation
OP_CODES = {OperationType.ABS: 0, OperationType.EXP: 1, OperationType.LOG: 2, OperationType.NEG: 3,
            OperationType.RSQRT: 4, OperationType.SIN: 5, OperationType.SQRT: 6}
_TABLE_OP = 7


# ---- params and signatures ---------------------------------------------------------------------------

@dataclass
class UnaryParams(OpParams):
    """``function`` applied to every element: ``output_shapes[0]`` is the input's shape."""

    function: OperationType = OperationType.ABS


_SIGNATURES = {
    OperationType.ABS: OpSignature({**_FLOATS, I32: 4}, UNARY),
    OperationType.NEG: OpSignature({**_FLOATS, I32: 3}, UNARY),
    OperationType.RSQRT: OpSignature({**_FLOATS, Q8A: 7, Q8AS: 7}, UNARY),
    **{op: OpSignature(_FLOATS, UNARY) for op in (OperationType.EXP, OperationType.LOG, OperationType.SIN,
                                                   OperationType.SQRT)},
}


# ---- reference kernels -------------------------------------------------------------------------------

def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / np.sqrt(x)


_FUNCTIONS: dict[OperationType, Callable[[np.ndarray], np.ndarray]] = {
    OperationType.ABS: np.abs, OperationType.EXP: np.exp, OperationType.LOG: np.log,
    OperationType.NEG: np.negative, OperationType.RSQRT: _rsqrt, OperationType.SIN: np.sin,
    OperationType.SQRT: np.sqrt}


def _quant_rsqrt(q: np.ndarray, inp: TensorInfo, out: TensorInfo) -> np.ndarray:
    """AOSP's quantized RSQRT (Elementwise.cpp makeQuantized), every step in fp32."""
    qmin, qmax = out.qrange
    x = (q.astype(np.int64) - inp.zero_point).astype(np.float32) * np.float32(inp.scale)
    with np.errstate(all="ignore"):
        y = _rsqrt(x) / np.float32(out.scale)
    # round_half_away is exact on fp32 values; zp + an integral fp32 is exact wherever it is in range
    v = out.zero_point + np.sign(y).astype(np.float64) * np.floor(np.abs(y).astype(np.float64) + 0.5)
    v = np.where(v < qmax, v, qmax)          # std::min(qmax, v): a NaN gives qmax
    return np.where(qmin < v, v, qmin).astype(out.dtype)


def reference_unary(params: UnaryParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    inp, out = inputs[0], outputs[0]
    x = inp.array()
    if inp.is_quantized:
        return [_quant_rsqrt(x, inp, out)]
    function = _FUNCTIONS[params.function]
    if inp.type == I32:  # numpy's int32 ABS/NEG wrap like two's complement
        return [function(x.astype(np.int32))]
    with np.errstate(all="ignore"):
        return [function(x.astype(np.float32)).astype(out.dtype)]


# ---- lowering ----------------------------------------------------------------------------------------

def supports_unary(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type and x.type in _SIGNATURES[ctx.node.type].types


def _quant_table(ctx: LoweringContext) -> np.ndarray:
    """The reference's output for every stored input value, qmin first."""
    x, out = ctx.inputs[0], ctx.outputs[0]
    qmin, qmax = QRANGE[x.type]
    return _quant_rsqrt(np.arange(qmin, qmax + 1), x, out)


def lower_unary(ctx: LoweringContext) -> None:
    x = ctx.inputs[0]
    count = numel(x.shape)
    d = {"T": ctype(x), "COUNT": count, "OP": OP_CODES[ctx.params.function], "INT": int(x.type == I32),
         "QOFFSET": 0, **float_io(x)}
    inputs = [ctx.input(0)]
    if x.is_quantized:
        d["OP"], d["QOFFSET"] = _TABLE_OP, -QRANGE[x.type][0]
        inputs.append(ctx.constant(_quant_table(ctx)))
    ctx.emit("unary.cl", d, inputs, [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

def _definition(op: OperationType):
    """The definition of ``op``: the output has the input's shape (rank ≥ 1, not empty); the signature
    gives it the input's type."""
    def define(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> UnaryParams:
        shape = tuple(inputs[0].dims())
        require(len(shape) >= 1, op.name, "input must have rank ≥ 1")
        require_nonempty(shape, op.name)
        return UnaryParams(output_shapes=[shape], function=op)
    define.__name__ = define.__qualname__ = op.name.lower()
    return define


# ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT: one registration each
for _op in OP_CODES:
    operation(_op, signature=_SIGNATURES[_op], reference=reference_unary, lower=lower_unary,
              supports=supports_unary)(_definition(_op))
