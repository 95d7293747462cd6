"""Reductions: REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_SUM, MEAN (over a list of
axes), ARGMAX, ARGMIN (along one axis) and TOPK_V2 (along the last axis).

- Axes (TENSOR_INT32 [k]) may be negative and repeat; each distinct axis is reduced once, an empty list
  reduces nothing.  ``keep_dims`` (BOOL; MEAN: INT32 > 0) keeps the reduced axes as 1; when every axis
  is removed the output is [1].  Inputs have rank ≤ 4 (ARGMAX/ARGMIN/TOPK_V2: any rank ≥ 1).
- Every reduction folds the reduced elements of one output in row-major order, as AOSP's
  ``ReduceGeneric`` / ``Mean`` do: SUM and MEAN from 0 (MEAN then divides by the element count), PROD
  from 1 with ``a == 0 || b == 0 → 0`` (so a zero factor wins over inf and NaN), MAX / MIN from the
  type's lowest / highest finite value with ``std::max`` / ``std::min`` (``acc < x ? x : acc``: NaN
  elements are skipped, an all-NaN or all-±inf reduction gives that bound), ALL / ANY as logical and / or.
  Float16 is computed in float32 and rounded once.
- Quantized MAX / MIN / ARGMAX / ARGMIN / TOPK_V2 work on the stored values; quantized MEAN sums the stored
  values in int32 and divides by the count truncating toward zero (AOSP ``meanGeneric<T, int32_t>``).
  The output quantization equals the input's (validation rejects any other: AOSP copies the input's).
- ARGMAX / ARGMIN keep the first extreme (``x > best`` / ``x < best`` from element 0, so a NaN first
  element wins, later NaNs never do); the output is TENSOR_INT32 with the axis removed ([1] for rank 1).
- TOPK_V2 sorts each last-axis row descending and, among equal values, the larger index first (AOSP
  sorts (value, index) pairs ascending and reverses); NaN orders above every number.
- Zero-sized inputs fail at execution (GENERAL_FAILURE).
- The accelerator runs every type: ``reduction.cl`` (one work item per output element, folding in the
  reference's order, so float32 results are bit-identical) and ``reduction_topk.cl`` (one work item per
  input element, placing it at its rank).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import (ctype, fdef, float_act, float_io, known, numel, params_ok, row_strides,
                                         scalars_constant, Work)
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, require, require_nonempty
from .pooling import emit_whole_image_pool
from .registry import operation
from .shape_preserving import AxisParams, float_compute, normalize_axis
from .signature import B8, BOOL, F16, F32, I32, Q8A, Q8AS, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

_FLOATS = (F32, F16)
_RANK_UP_TO_4 = {0: (1, 4)}

REDUCE_BOOL_SIGNATURE = OpSignature({B8: 3}, (Variant("reduce", ("T", I32, BOOL), ("T",)),), ranks=_RANK_UP_TO_4)
REDUCE_EXTREME_SIGNATURE = OpSignature({F16: 3, F32: 3, Q8A: 3, Q8AS: 4},
                                       (Variant("reduce", ("T", I32, BOOL), ("T",)),),
                                       ranks=_RANK_UP_TO_4, same_quant=((0, 0),))
REDUCE_FLOAT_SIGNATURE = OpSignature({F16: 3, F32: 3}, (Variant("reduce", ("T", I32, BOOL), ("T",)),),
                                     ranks=_RANK_UP_TO_4)
MEAN_SIGNATURE = OpSignature({F32: 2, Q8A: 2, F16: 3, Q8AS: 4}, (Variant("mean", ("T", I32, i32), ("T",)),),
                             ranks=_RANK_UP_TO_4, same_quant=((0, 0),))
ARG_SIGNATURE = OpSignature({F16: 3, F32: 3, I32: 3, Q8A: 3, Q8AS: 4}, (Variant("argminmax", ("T", i32), (I32,)),))
TOPK_SIGNATURE = OpSignature({F16: 3, F32: 3, I32: 3, Q8A: 3, Q8AS: 4},
                             (Variant("topk", ("T", i32), ("T", I32)),), same_quant=((0, 0),))

#: the kernel's OP code of each reduction over axes (reduction.cl)
_REDUCE_CODES = {OperationType.REDUCE_SUM: 0, OperationType.REDUCE_PROD: 1, OperationType.REDUCE_MAX: 2,
                 OperationType.REDUCE_MIN: 3, OperationType.MEAN: 4, OperationType.REDUCE_ALL: 5,
                 OperationType.REDUCE_ANY: 6}
_ARG_CODES = {OperationType.ARGMAX: 7, OperationType.ARGMIN: 8}


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class ReduceParams(OpParams):
    """A reduction over ``axes`` (distinct, sorted, in [0, rank)) of an input of shape ``in_shape``;
    ``op`` is the reduction's code (0 SUM, 1 PROD, 2 MAX, 3 MIN, 4 MEAN, 5 ALL, 6 ANY)."""

    op: int = 0
    in_shape: tuple[int, ...] = ()
    axes: tuple[int, ...] = ()
    keep_dims: bool = False

    @property
    def kept(self) -> list[int]:
        return [a for a in range(len(self.in_shape)) if a not in self.axes]

    @property
    def reduced_count(self) -> int:
        """Elements folded into each output element (MEAN's divisor)."""
        return numel([self.in_shape[a] for a in self.axes])


@dataclass
class ArgParams(AxisParams):
    """ARGMAX (``op`` 7) / ARGMIN (8) along ``axis``: the input viewed as [outer, axis, inner]."""

    op: int = 7


@dataclass
class TopKParams(OpParams):
    """TOPK_V2: the ``k`` largest of each of ``rows`` last-axis rows of ``row_size`` elements."""

    k: int = 1
    rows: int = 1
    row_size: int = 1


# ---- definitions -------------------------------------------------------------------------------------

def _reduce(op_type: OperationType, inputs: list[TensorInfo], keep_dims: bool) -> ReduceParams:
    name = op_type.name
    shape = inputs[0].dims()
    rank = len(shape)
    require(1 <= rank <= 4, name, f"input rank must be 1..4, got {rank}")
    axes_info = inputs[1]
    require(axes_info.shape is None or len(axes_info.shape) == 1, name,
            f"axes must be a 1-D tensor, got shape {axes_info.shape}")
    values = [int(a) for a in axes_info.array().reshape(-1)]
    axes = tuple(sorted({normalize_axis(a, rank, name) for a in values}))
    require_nonempty(shape, name)
    out = [1 if a in axes else d for a, d in enumerate(shape) if keep_dims or a not in axes]
    return ReduceParams(output_shapes=[tuple(out) or (1,)], op=_REDUCE_CODES[op_type], in_shape=tuple(shape),
                        axes=axes, keep_dims=keep_dims)


def _define_reduce(op_type: OperationType):
    """The definition of a REDUCE_* operation (keep_dims is a BOOL)."""
    def define(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReduceParams:
        return _reduce(op_type, inputs, bool(inputs[2].scalar()))
    define.__name__ = op_type.name.lower()
    return define


def _define_arg(op_type: OperationType, inputs: list[TensorInfo]) -> ArgParams:
    name = op_type.name
    shape = inputs[0].dims()
    require(len(shape) >= 1, name, "input must have rank ≥ 1")
    axis = normalize_axis(inputs[1].scalar(), len(shape), name)
    require_nonempty(shape, name)
    out = tuple(d for a, d in enumerate(shape) if a != axis) or (1,)
    outer, size, inner = numel(shape[:axis]), shape[axis], numel(shape[axis + 1:])
    return ArgParams(output_shapes=[out], axis=axis, outer_size=outer, axis_size=size, inner_size=inner,
                     op=_ARG_CODES[op_type])


# ---- reference kernels -------------------------------------------------------------------------------

def reduction_rows(x: np.ndarray, params: ReduceParams) -> np.ndarray:
    """[output elements, reduced elements]: each row holds one output's reduced elements in row-major order."""
    return x.transpose(params.kept + list(params.axes)).reshape(-1, params.reduced_count)


def _sequential_sum(rows: np.ndarray) -> np.ndarray:
    """Σ of each row in float32, left to right (the order and precision AOSP adds in)."""
    return np.cumsum(float_compute(rows), axis=1, dtype=np.float32)[:, -1]


def _sequential_prod(rows: np.ndarray) -> np.ndarray:
    """Π of each row in float32, left to right, with AOSP's rule ``a == 0 || b == 0 → 0``: the running
    product equals the plain one until it first is 0 (a zero factor or an underflow), then stays 0."""
    x = float_compute(rows)
    with np.errstate(all="ignore"):
        running = np.cumprod(x, axis=1, dtype=np.float32)
    zero = np.any(x == 0, axis=1) | np.any(running == 0, axis=1)
    return np.where(zero, np.float32(0), running[:, -1])


def _reduce_values(params: ReduceParams, x: np.ndarray, info: TensorInfo) -> np.ndarray:
    rows = reduction_rows(x, params)
    op = params.op
    if op == 0:
        return _sequential_sum(rows)
    if op == 1:
        return _sequential_prod(rows)
    if op in (2, 3):
        if info.type in _FLOATS:  # fmax/fmin skip NaN like std::max(acc, x) from the finite bound
            bound = np.finfo(x.dtype).min if op == 2 else np.finfo(x.dtype).max
            return (np.fmax if op == 2 else np.fmin).reduce(rows, axis=1, initial=bound)
        return rows.max(axis=1) if op == 2 else rows.min(axis=1)
    if op == 4:
        if info.type in _FLOATS:
            return _sequential_sum(rows) / np.float32(params.reduced_count)
        total = rows.astype(np.int64).sum(axis=1)
        return np.sign(total) * (np.abs(total) // params.reduced_count)  # C division: toward zero
    return rows.all(axis=1) if op == 5 else rows.any(axis=1)


def reference_reduce(params: ReduceParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    r = _reduce_values(params, inputs[0].array(), inputs[0])
    return [np.asarray(r).reshape(params.output_shapes[0]).astype(outputs[0].dtype)]


def reference_arg(params: ArgParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array().reshape(params.outer_size, params.axis_size, params.inner_size)
    argmax = params.op == 7
    if inputs[0].type in _FLOATS:
        # NaN never replaces the running extreme; a NaN first element is never replaced
        filled = np.where(np.isnan(x), -np.inf if argmax else np.inf, x)
        r = filled.argmax(axis=1) if argmax else filled.argmin(axis=1)
        r = np.where(np.isnan(x[:, 0, :]), 0, r)
    else:
        r = x.argmax(axis=1) if argmax else x.argmin(axis=1)  # first index of the extreme
    return [r.reshape(params.output_shapes[0]).astype(np.int32)]


def topk_order(rows: np.ndarray) -> np.ndarray:
    """Per row, the element indices in TOPK_V2 order: descending value, ties (and NaNs) larger index first,
    NaN above every number."""
    index = np.broadcast_to(np.arange(rows.shape[1]), rows.shape)
    if rows.dtype.kind == "f":
        nan = np.isnan(rows)
        ascending = np.lexsort((index, np.where(nan, 0, rows), nan), axis=1)
    else:
        ascending = np.lexsort((index, rows), axis=1)
    return ascending[:, ::-1]


def reference_topk(params: TopKParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    rows = inputs[0].array().reshape(params.rows, params.row_size)
    order = topk_order(rows)[:, :params.k]
    values = np.take_along_axis(rows, order, axis=1)
    return [values.reshape(params.output_shapes[0]).astype(outputs[0].dtype),
            order.reshape(params.output_shapes[1]).astype(np.int32)]


# ---- lowerings ---------------------------------------------------------------------------------------

def _padded(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(size, stride) pairs padded in front to four with (1, 0)."""
    return [(1, 0)] * (4 - len(pairs)) + pairs


def _walk_defines(count: int, kept: list[tuple[int, int]], reduced: list[tuple[int, int]]) -> dict:
    """reduction.cl's index literals: OUT_COUNT outputs over kept axes K0..K3 (input strides KS0..KS3),
    each folding the reduced axes R0..R3 (input strides RS0..RS3), row-major."""
    d = {"OUT_COUNT": count}
    for name, pairs in (("K", kept), ("R", reduced)):
        for k, (size, stride) in enumerate(_padded(pairs)):
            d[f"{name}{k}"], d[f"{name}S{k}"] = size, stride
    return d


def _value_defines(x: TensorInfo, out: TensorInfo) -> dict:
    """How reduction.cl reads elements: KIND 0 float (through LOAD), 1 integer; the element types."""
    kind = 0 if x.type in _FLOATS else 1
    return {"T_IN": ctype(x), "T_OUT": ctype(out), "KIND": kind, "VT": "float" if kind == 0 else "int",
            **float_io(x, "IN_"), **float_io(out, "OUT_")}


def _extreme_init(x: TensorInfo, op: int):
    """The initial accumulator of MAX (op 2) / MIN (op 3): the type's lowest / highest finite value."""
    if x.type in _FLOATS:
        info = np.finfo(np.float16 if x.type == F16 else np.float32)
        return fdef(info.min if op == 2 else info.max)
    lo, hi = x.qrange
    return lo if op == 2 else hi


def supports_reduction(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, range(1, len(ctx.node.inputs))):
        return False
    return known(ctx.inputs[0], *ctx.outputs)


def lower_reduce(ctx: LoweringContext) -> None:
    p: ReduceParams = ctx.params
    x, out = ctx.inputs[0], ctx.outputs[0]
    if (p.op == 4 and len(p.in_shape) == 4 and p.axes == (1, 2) and x.type in _FLOATS and out.type == x.type
            and emit_whole_image_pool(ctx, "average", *p.in_shape, float_act(-math.inf, math.inf))):
        return  # a float MEAN over an NHWC image's pixels is a global average pool
    strides = row_strides(p.in_shape)
    kept = [(p.in_shape[a], strides[a]) for a in p.kept]
    reduced = [(p.in_shape[a], strides[a]) for a in p.axes]
    d = _walk_defines(numel(p.output_shapes[0]), kept, reduced)
    d.update(_value_defines(x, out), OP=p.op, INIT=_extreme_init(x, p.op) if p.op in (2, 3) else 0,
             COUNT=p.reduced_count, DIVISOR=fdef(p.reduced_count))
    ctx.emit("reduction.cl", d, [ctx.input(0)], [ctx.output(0)], (d["OUT_COUNT"],), Work.ROWS)


def lower_arg(ctx: LoweringContext) -> None:
    p: ArgParams = ctx.params
    x, out = ctx.inputs[0], ctx.outputs[0]
    kept = [(p.outer_size, p.axis_size * p.inner_size), (p.inner_size, 1)]
    d = _walk_defines(p.outer_size * p.inner_size, kept, [(p.axis_size, p.inner_size)])
    d.update(_value_defines(x, out), OP=p.op, INIT=0, COUNT=p.axis_size, DIVISOR=1.0)
    ctx.emit("reduction.cl", d, [ctx.input(0)], [ctx.output(0)], (d["OUT_COUNT"],), Work.ROWS)


def lower_topk(ctx: LoweringContext) -> None:
    p: TopKParams = ctx.params
    x = ctx.inputs[0]
    d = {"T": ctype(x), "KIND": 0 if x.type in _FLOATS else 1, **float_io(x), "ROWS": p.rows, "N": p.row_size,
         "K": p.k}
    ctx.emit("reduction_topk.cl", d, [ctx.input(0)], [ctx.output(0), ctx.output(1)], (p.rows * p.row_size,),
             Work.ROWS)


# ---- the operations ----------------------------------------------------------------------------------

_REDUCE = dict(reference=reference_reduce, lower=lower_reduce, supports=supports_reduction, value_inputs=(1,))
_ARG = dict(signature=ARG_SIGNATURE, reference=reference_arg, lower=lower_arg, supports=supports_reduction)

for _op_type, _signature in ((OperationType.REDUCE_ALL, REDUCE_BOOL_SIGNATURE),
                             (OperationType.REDUCE_ANY, REDUCE_BOOL_SIGNATURE),
                             (OperationType.REDUCE_MAX, REDUCE_EXTREME_SIGNATURE),
                             (OperationType.REDUCE_MIN, REDUCE_EXTREME_SIGNATURE),
                             (OperationType.REDUCE_PROD, REDUCE_FLOAT_SIGNATURE),
                             (OperationType.REDUCE_SUM, REDUCE_FLOAT_SIGNATURE)):
    operation(_op_type, signature=_signature, **_REDUCE)(_define_reduce(_op_type))


@operation(OperationType.MEAN, signature=MEAN_SIGNATURE, **_REDUCE)
def mean(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ReduceParams:
    return _reduce(OperationType.MEAN, inputs, inputs[2].scalar() > 0)


@operation(OperationType.ARGMAX, **_ARG)
def argmax(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ArgParams:
    return _define_arg(OperationType.ARGMAX, inputs)


@operation(OperationType.ARGMIN, **_ARG)
def argmin(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ArgParams:
    return _define_arg(OperationType.ARGMIN, inputs)


@operation(OperationType.TOPK_V2, signature=TOPK_SIGNATURE, reference=reference_topk, lower=lower_topk,
           supports=supports_reduction)
def topk_v2(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> TopKParams:
    name = "TOPK_V2"
    shape = inputs[0].dims()
    require(len(shape) >= 1, name, "input must have rank ≥ 1")
    k = inputs[1].scalar()
    n = shape[-1]
    require(1 <= k, name, f"k must be ≥ 1, got {k}")
    require_nonempty(shape, name)
    require(k <= n, name, f"k = {k} exceeds the last dimension {n}")
    out = tuple(shape[:-1]) + (k,)
    return TopKParams(output_shapes=[out, out], k=k, rows=numel(shape[:-1]), row_size=n)
