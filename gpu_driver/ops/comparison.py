"""Broadcasting comparisons to TENSOR_BOOL8: EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL.

- Inputs A and B have the same type (TENSOR_BOOL8, FLOAT16, FLOAT32, INT32, QUANT8_ASYMM; QUANT8_ASYMM_SIGNED
  from FL4); shapes broadcast numpy-style (operations.md §0.3); the output is TENSOR_BOOL8 (0/1).
- Quantized inputs compare their real values, each computed in float32 as AOSP does:
  ``(q − zeroPoint)·scale`` (A and B may have different quantizations).  TENSOR_BOOL8 compares the raw
  bytes; float comparisons follow IEEE (NaN compares unequal to everything).
- Zero-sized inputs fail at execution (GENERAL_FAILURE).
- The accelerator kernel (``comparison.cl``) runs every input type at rank ≤ 4, exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import broadcast_defines, ctype, float_io, known, params_ok, Work
from ..hal.abbreviations import B8
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, as_float32, broadcast_shapes, require_nonempty
from .registry import operation
from .signature import F16, F32, I32, Q8A, Q8AS, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

#: the numpy predicate and the kernel's OP code of each comparison (comparison.cl)
_PREDICATES = {
    OperationType.EQUAL: (np.equal, 0),
    OperationType.NOT_EQUAL: (np.not_equal, 1),
    OperationType.GREATER: (np.greater, 2),
    OperationType.GREATER_EQUAL: (np.greater_equal, 3),
    OperationType.LESS: (np.less, 4),
    OperationType.LESS_EQUAL: (np.less_equal, 5),
}
_NUMPY = [fn for fn, _code in _PREDICATES.values()]

COMPARISON_SIGNATURE = OpSignature({B8: 3, F16: 3, F32: 3, I32: 3, Q8A: 3, Q8AS: 4},
                                   (Variant("comparison", ("T", "T"), (B8,)),))


# ---- params -------------------------------------------------------------------------------------------

@dataclass
class ComparisonParams(OpParams):
    """``predicate``: the comparison's code, 0 EQUAL … 5 LESS_EQUAL (the order of _PREDICATES)."""

    predicate: int = 0


# ---- definition, reference kernel --------------------------------------------------------------------

def _define(op_type: OperationType, inputs: list[TensorInfo]) -> ComparisonParams:
    name = op_type.name
    a, b = inputs[0].dims(), inputs[1].dims()
    require_nonempty(a, name)
    require_nonempty(b, name)
    return ComparisonParams(output_shapes=[broadcast_shapes(a, b, name)], predicate=_PREDICATES[op_type][1])


def compared_values(info: TensorInfo) -> np.ndarray:
    """What a comparison compares: the real value of a quantized element (float32, as AOSP computes
    it), the raw byte of a TENSOR_BOOL8 element, the value itself otherwise."""
    x = info.array()
    if info.is_quantized:
        return (x.astype(np.int32) - info.zero_point).astype(np.float32) * np.float32(info.scale)
    if info.type == B8:
        return np.ascontiguousarray(x).view(np.uint8)
    return x


def reference_comparison(params: ComparisonParams, inputs: list[TensorInfo],
                         outputs: list[TensorInfo]) -> list[np.ndarray]:
    predicate = _NUMPY[params.predicate]
    r = predicate(compared_values(inputs[0]), compared_values(inputs[1]))
    return [np.broadcast_to(r, params.output_shapes[0]).astype(np.bool_)]


# ---- lowering ----------------------------------------------------------------------------------------

def supports_comparison(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    a, b = ctx.inputs[0], ctx.inputs[1]
    return known(a, b, ctx.outputs[0]) and a.type == b.type and len(a.shape) <= 4 and len(b.shape) <= 4


def lower_comparison(ctx: LoweringContext) -> None:
    a, b = ctx.inputs[0], ctx.inputs[1]
    d = broadcast_defines(a, b, ctx.params.output_shapes[0])
    if d["COUNT"] == 0:
        return
    kind = 1 if a.is_quantized else 0 if a.type in (F32, F16) else 2
    d.update({"T": ctype(a), "OP": ctx.params.predicate, "KIND": kind, **float_io(a),
              "ZA": a.zero_point, "ZB": b.zero_point,
              "SCALE_A": as_float32(a.scale) if kind == 1 else 0.0,
              "SCALE_B": as_float32(b.scale) if kind == 1 else 0.0})
    ctx.emit("comparison.cl", d, [ctx.input(0), ctx.input(1)], [ctx.output(0)], (d["COUNT"],), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

_REGISTRATION = dict(signature=COMPARISON_SIGNATURE, reference=reference_comparison, lower=lower_comparison,
                     supports=supports_comparison)


@operation(OperationType.EQUAL, **_REGISTRATION)
def equal(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.EQUAL, inputs)


@operation(OperationType.NOT_EQUAL, **_REGISTRATION)
def not_equal(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.NOT_EQUAL, inputs)


@operation(OperationType.GREATER, **_REGISTRATION)
def greater(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.GREATER, inputs)


@operation(OperationType.GREATER_EQUAL, **_REGISTRATION)
def greater_equal(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.GREATER_EQUAL, inputs)


@operation(OperationType.LESS, **_REGISTRATION)
def less(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.LESS, inputs)


@operation(OperationType.LESS_EQUAL, **_REGISTRATION)
def less_equal(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ComparisonParams:
    return _define(OperationType.LESS_EQUAL, inputs)
