"""Boolean logic and selection: LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT.

- LOGICAL_AND / LOGICAL_OR take two TENSOR_BOOL8 tensors that broadcast numpy-style (operations.md §0.3);
  LOGICAL_NOT one.  A stored byte is true when non-zero; outputs are 0/1.
- SELECT (TENSOR_FLOAT16/32, INT32, QUANT8_ASYMM; QUANT8_ASYMM_SIGNED from FL4): ``out = cond ? x : y``
  with the TENSOR_BOOL8 condition, x, y and the output all of one shape (no broadcasting).  Quantized x
  and y may have their own quantizations: the chosen element is requantized to the output's as AOSP's
  ``requantize`` does — real = (q − zp)·scale in float32, then ``real / out_scale + out_zp`` in double,
  clamped to the type's range and rounded half away from zero.
- Zero-sized inputs fail at execution (GENERAL_FAILURE).
- The accelerator runs all of them exactly (LOGICAL_AND / OR at rank ≤ 4): LOGICAL_AND / OR through the
  broadcasting predicate template ``comparison.cl``, LOGICAL_NOT and SELECT through ``logical.cl``;
  quantized SELECT looks the requantized value of every stored byte of x and y up in two 256-entry
  tables the lowering computes with the reference function.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import broadcast_defines, ctype, float_io, known, numel, params_ok, Work
from ..hal.abbreviations import B8
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, broadcast_shapes, require, require_nonempty
from .registry import operation
from .signature import F16, F32, I32, Q8A, Q8AS, UNARY, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_FLOAT_TYPES = (F32, F16)

LOGICAL_BINARY_SIGNATURE = OpSignature({B8: 3}, (Variant("logical", ("T", "T"), ("T",)),))
LOGICAL_NOT_SIGNATURE = OpSignature({B8: 3}, UNARY)
#: input 1 (x) selects the type configuration
SELECT_SIGNATURE = OpSignature({F16: 3, F32: 3, I32: 3, Q8A: 3, Q8AS: 4},
                               (Variant("select", (B8, "T", "T"), ("T",)),), primary=1)


@dataclass
class LogicalParams(OpParams):
    """``op``: 6 LOGICAL_AND, 7 LOGICAL_OR (the OP codes of comparison.cl)."""

    op: int = 6


# ---- definitions -------------------------------------------------------------------------------------

def _define_binary(op_type: OperationType, code: int, inputs: list[TensorInfo]) -> LogicalParams:
    name = op_type.name
    a, b = inputs[0].dims(), inputs[1].dims()
    require_nonempty(a, name)
    require_nonempty(b, name)
    return LogicalParams(output_shapes=[broadcast_shapes(a, b, name)], op=code)


def _define_select(inputs: list[TensorInfo]) -> OpParams:
    cond, x, y = (t.dims() for t in inputs)
    require(cond == x == y, "SELECT", f"condition {list(cond)}, x {list(x)} and y {list(y)} must have one shape")
    require_nonempty(x, "SELECT")
    return OpParams(output_shapes=[tuple(x)])


# ---- reference kernels -------------------------------------------------------------------------------

def _truth(info: TensorInfo) -> np.ndarray:
    """A TENSOR_BOOL8 tensor as truth values (a non-zero byte is true)."""
    return np.ascontiguousarray(info.array()).view(np.uint8) != 0


def reference_logical_binary(params: LogicalParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    fn = np.logical_and if params.op == 6 else np.logical_or
    return [np.broadcast_to(fn(_truth(inputs[0]), _truth(inputs[1])), params.output_shapes[0]).copy()]


def reference_logical_not(params: OpParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return [~_truth(inputs[0])]


def requantize(q: np.ndarray, src: TensorInfo, dst: TensorInfo) -> np.ndarray:
    """AOSP's ``requantize``: stored values of ``src``'s quantization as stored values of ``dst``'s."""
    real = (q.astype(np.int32) - src.zero_point).astype(np.float32) * np.float32(src.scale)
    v = real.astype(np.float64) / np.float64(np.float32(dst.scale)) + dst.zero_point
    qmin, qmax = dst.qrange
    return np.clip(quant.round_half_away(v), qmin, qmax).astype(dst.dtype)


def reference_select(params: OpParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    cond, x, y = inputs
    out = outputs[0]
    a, b = x.array(), y.array()
    if out.is_quantized:
        a, b = requantize(a, x, out), requantize(b, y, out)
    return [np.where(_truth(cond), a, b).astype(out.dtype)]


# ---- lowering ----------------------------------------------------------------------------------------

def supports_logical(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not known(*ctx.inputs, *ctx.outputs):
        return False
    unary = ctx.node.type in (OperationType.SELECT, OperationType.LOGICAL_NOT)
    return unary or all(len(t.shape) <= 4 for t in ctx.inputs)  # the broadcast index is rank 4


def lower_logical_binary(ctx: LoweringContext) -> None:
    a, b = ctx.inputs[0], ctx.inputs[1]
    d = broadcast_defines(a, b, ctx.params.output_shapes[0])
    if d["COUNT"] == 0:
        return
    d.update({"T": "uchar", "OP": ctx.params.op, "KIND": 2, **float_io(a), "ZA": 0, "ZB": 0,
              "SCALE_A": 0.0, "SCALE_B": 0.0})
    ctx.emit("comparison.cl", d, [ctx.input(0), ctx.input(1)], [ctx.output(0)], (d["COUNT"],), Work.ELEMENTS)


def _requantize_table(src: TensorInfo, dst: TensorInfo) -> np.ndarray:
    """The requantized value of every stored byte of ``src``, indexed by byte − qmin."""
    qmin, qmax = src.qrange
    return requantize(np.arange(qmin, qmax + 1), src, dst)


def lower_logical_unary(ctx: LoweringContext) -> None:
    """LOGICAL_NOT (OP 0) and SELECT (OP 1) through logical.cl."""
    count = numel(ctx.params.output_shapes[0])
    if count == 0:
        return
    ins = [ctx.input(i) for i in range(len(ctx.node.inputs))]
    t = ctx.outputs[0]
    select = ctx.node.type == OperationType.SELECT
    d = {"COUNT": count, "OP": int(select), "T": ctype(t), "KIND": 2, **float_io(t), "QOFFSET": 0}
    if select and t.type in _FLOAT_TYPES:
        d["KIND"] = 0
    elif select and t.is_quantized:
        d["KIND"], d["QOFFSET"] = 1, -t.qrange[0]
        ins += [ctx.constant(_requantize_table(ctx.inputs[1], t)), ctx.constant(_requantize_table(ctx.inputs[2], t))]
    ctx.emit("logical.cl", d, ins, [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.LOGICAL_AND, signature=LOGICAL_BINARY_SIGNATURE, reference=reference_logical_binary,
           lower=lower_logical_binary, supports=supports_logical)
def logical_and(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LogicalParams:
    return _define_binary(OperationType.LOGICAL_AND, 6, inputs)


@operation(OperationType.LOGICAL_OR, signature=LOGICAL_BINARY_SIGNATURE, reference=reference_logical_binary,
           lower=lower_logical_binary, supports=supports_logical)
def logical_or(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LogicalParams:
    return _define_binary(OperationType.LOGICAL_OR, 7, inputs)


@operation(OperationType.LOGICAL_NOT, signature=LOGICAL_NOT_SIGNATURE, reference=reference_logical_not,
           lower=lower_logical_unary, supports=supports_logical)
def logical_not(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> OpParams:
    shape = inputs[0].dims()
    require_nonempty(shape, "LOGICAL_NOT")
    return OpParams(output_shapes=[tuple(shape)])


@operation(OperationType.SELECT, signature=SELECT_SIGNATURE, reference=reference_select,
           lower=lower_logical_unary, supports=supports_logical)
def select(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> OpParams:
    return _define_select(inputs)
