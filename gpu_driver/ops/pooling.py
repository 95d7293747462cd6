"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (HAL 1.0, with the FL3 layout flag).

Explicit: input, pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, filter_w, filter_h,
fuse, [layout].  Implicit: input, padding code, stride_w, stride_h, filter_w, filter_h, fuse, [layout].
Dilation is always 1; quantized outputs must have the input's scale / zero point; L2_POOL_2D is
float only.  Only the in-bounds cells of a window take part (see :class:`Pool2DParams`).

Lowering: either layout, every type (float16 stored as half, computed in float); quantized results
equal the reference exactly (integer sums, rounding half away from zero).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler import autotune
from ..compiler.ir import Work
from ..compiler.lowering_helpers import act_defines, ceil_div, ctype, float_io, known, params_ok, trailing_scalars_constant
from ..hal.types import FLT_MAX, OperationType
from .definition import TensorInfo, require, same_quant_as_input
from .fused_activation import activation_fields, finish_float, std_max
from .layout import from_nhwc, image_strides, nhwc_dims, to_nhwc
from .registry import operation
from .signature import F32, FLOAT_TYPES, LAYOUT, Q8A, RANK4, STD_TYPES, OpSignature, Variant, i32
from .window import Window2DParams, decode_window_args, pad_spatial, resolve_window, window_fields, window_taps

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class Pool2DParams(Window2DParams):
    """A 2-D pool; ``out_c == in_c``, dilation 1.  Only in-bounds cells of a window take part:

    - AVERAGE: mean over the in-bounds cells (count = in-bounds cells of that window);
      quantized: integer sum of stored values s over n cells, (s + n//2)//n rounded half away.
    - MAX: max over the in-bounds cells; float: AOSP's ``acc = std::max(acc, x)`` from −FLT_MAX, so
      NaN and −inf cells never win (a window of only NaN gives −FLT_MAX).
    - L2: sqrt(Σx² / count) (float only).

    ``kind`` is "average", "max" or "l2".  Quantized clamp bounds (act_min/act_max) are in the
    (shared) input/output quantization.
    """

    kind: str = "average"


# ---- signatures -------------------------------------------------------------------------------------

_POOL_VARIANTS = (
    Variant("implicit", ("T", i32, i32, i32, i32, i32, i32), ("T",), (LAYOUT,)),
    Variant("explicit", ("T", i32, i32, i32, i32, i32, i32, i32, i32, i32), ("T",), (LAYOUT,)),
)

#: AVERAGE_POOL_2D and MAX_POOL_2D
POOL_SIGNATURE = OpSignature(STD_TYPES, _POOL_VARIANTS, ranks={0: RANK4}, out_ranks={0: RANK4},
                             same_quant=((0, 0),))
L2_POOL_SIGNATURE = OpSignature(FLOAT_TYPES, _POOL_VARIANTS, ranks={0: RANK4}, out_ranks={0: RANK4})


# ---- definition helpers -----------------------------------------------------------------------------

_KINDS = {OperationType.AVERAGE_POOL_2D: "average", OperationType.MAX_POOL_2D: "max",
          OperationType.L2_POOL_2D: "l2"}


def _pool(op: OperationType, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    name = op.name
    inp = inputs[0]
    explicit = len(inputs) >= 10
    args = decode_window_args(inputs, 1, 2, explicit, name)
    filter_w, filter_h = args.extras
    n, h, w, c = nhwc_dims(inp, args.nchw, name)
    win = resolve_window(args, h, w, filter_h, filter_w, name, pad_limit_uses_dilation=False)
    out = outputs[0]
    if inp.is_quantized and out.type == inp.type:
        same_quant_as_input(inp, out, name)
    require(not (op == OperationType.L2_POOL_2D and inp.is_quantized), name, "quantized types are not supported")
    return Pool2DParams(**window_fields(args, win, n, h, w, c, c, filter_h, filter_w),
                        **activation_fields(inputs[args.activation_index], out, name), kind=_KINDS[op])


# ---- reference kernels ------------------------------------------------------------------------------

def _axis_counts(out: int, stride: int, pad: int, k: int, size: int) -> np.ndarray:
    """In-bounds cells of each window along one axis."""
    start = np.arange(out) * stride - pad
    return np.minimum(start + k, size) - np.maximum(start, 0)


def _counts(p: Pool2DParams) -> np.ndarray:
    """[out_h, out_w, 1] in-bounds cell count of every window."""
    ch = _axis_counts(p.out_h, p.stride_h, p.pad_top, p.kernel_h, p.in_h)
    cw = _axis_counts(p.out_w, p.stride_w, p.pad_left, p.kernel_w, p.in_w)
    return (ch[:, None] * cw[None, :])[..., None].astype(np.int64)


def _window_sum(x: np.ndarray, p: Pool2DParams) -> np.ndarray:
    xp = pad_spatial(x, p, 0)
    acc = np.zeros((p.batch, p.out_h, p.out_w, p.in_c), dtype=x.dtype)
    for _, _, view in window_taps(xp, p):
        acc += view
    return acc


def _run(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo], body) -> list[np.ndarray]:
    """Apply ``body(x, quantized)`` to the NHWC input (int64 stored values or float64), then clamp /
    finish to the output type and layout."""
    out = outputs[0]
    if p.batch == 0:
        return [np.zeros(p.output_shapes[0], dtype=out.dtype)]
    x = to_nhwc(inputs[0].array(), p.nchw)
    if inputs[0].is_quantized:
        r = np.clip(body(x.astype(np.int64), True), p.act_min, p.act_max).astype(out.dtype)
    else:
        r = finish_float(body(x.astype(np.float64), False), p, out.dtype)
    return [from_nhwc(r, p.nchw)]


def reference_average_pool_2d(p: Pool2DParams, inputs: list[TensorInfo],
                              outputs: list[TensorInfo]) -> list[np.ndarray]:
    def body(x, quantized):
        s, n = _window_sum(x, p), _counts(p)
        if not quantized:
            return s / n
        # integer mean of the stored values, rounded half away from zero (operands.md §8.5)
        return np.where(s >= 0, (s + n // 2) // n, -((-s + n // 2) // n))

    return _run(p, inputs, outputs, body)


def reference_max_pool_2d(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    def body(x, quantized):
        low = np.iinfo(np.int64).min if quantized else -np.inf  # padding never wins
        xp = pad_spatial(x, p, low)
        acc = np.full((p.batch, p.out_h, p.out_w, p.in_c), low if quantized else -FLT_MAX, dtype=x.dtype)
        for _, _, view in window_taps(xp, p):
            acc = std_max(acc, view)
        return acc

    return _run(p, inputs, outputs, body)


def reference_l2_pool_2d(p: Pool2DParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    return _run(p, inputs, outputs, lambda x, _q: np.sqrt(_window_sum(x * x, p) / _counts(p)))


# ---- lowering ---------------------------------------------------------------------------------------

_KIND_CODES = {"average": 0, "max": 1, "l2": 2}  # KIND in pooling.cl
#: channels per work item of pooling.cl (CB): the widest of these that divides the channel count;
#: below the target's min_work_items (backends.base.LaunchTuning; a global pool has one output cell)
#: CB halves, down to 1: on a GPU one work item summing a whole image for 16 channels is one thread
#: doing the whole pool, while on PoCL 16 work items each reading every 16th value took 7x as long
#: as one reading them all (selfie_segmentation's 128x128x16 global pool)
_CHANNEL_BLOCKS = (16, 8, 4, 2, 1)


def supports_pool(ctx: LoweringContext) -> bool:
    """Shapes known, constant scalars, output type = input type."""
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 1):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    return known(x, out) and x.type == out.type


#: a float pool whose one window is the whole image is summed in chunks of image rows of about this
#: many elements (pooling_global.cl) once the image holds two of them: on PoCL (2 CPUs) one work item
#: summing selfie_segmentation's 128x128x16 pool took 47 µs, 16 chunks 25 µs
GLOBAL_POOL_CHUNK = 16384
#: ... when one pass would run fewer work items (images x channel blocks) than this: MobileNet v2's
#: 7x7x1280 pool already spreads over 80 channel blocks
GLOBAL_POOL_FEW_ITEMS = 16


def emit_whole_image_pool(ctx: LoweringContext, kind: str, batch: int, h: int, w: int, c: int, act: dict) -> bool:
    """Emit pooling_global.cl for a ``kind`` ("average", "max", "l2") pool of node input 0, a float NHWC
    [batch, h, w, c] image, over the whole image into node output 0 (batch x c values, channels
    contiguous), with the float activation defines ``act``: partial results of row chunks per image
    and channel block, then one work item per image and channel combines them.  False (nothing
    emitted) when the image is quantized, too small to split, or has channel blocks enough."""
    x = ctx.inputs[0]
    chunks = min(h, h * w * c // GLOBAL_POOL_CHUNK)
    cb = next(b for b in _CHANNEL_BLOCKS if c % b == 0)
    if x.is_quantized or chunks < 2 or batch * c // cb >= GLOBAL_POOL_FEW_ITEMS:
        return False
    rows = ceil_div(h, chunks)
    chunks = ceil_div(h, rows)                                 # no empty chunk
    d = {"T": ctype(x), "KIND": _KIND_CODES[kind], "N": batch, "H": h, "W": w, "C": c, "G": chunks, "RC": rows,
         "CB": cb, "XN": h * w * c, "XY": w * c, "XX": c, "ON": c, "OC": 1, **float_io(x), **act}
    part = ctx.scratch(np.float32, batch * chunks * c)
    ctx.emit("pooling_global.cl", dict(d, STAGE=1), [ctx.input(0)], [part], (c // d["CB"], chunks, batch), Work.CHUNKS)
    ctx.emit("pooling_global.cl", dict(d, STAGE=2), [part], [ctx.output(0)], (c, batch))
    return True


def lower_pool(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch == 0:
        return
    x, out = ctx.inputs[0], ctx.outputs[0]
    d = {"T": ctype(x), "QUANT": int(x.is_quantized), "KIND": _KIND_CODES[p.kind], "H": p.in_h, "W": p.in_w,
         "C": p.in_c, "OH": p.out_h, "OW": p.out_w, "KH": p.kernel_h, "KW": p.kernel_w, "SH": p.stride_h,
         "SW": p.stride_w, "PT": p.pad_top, "PL": p.pad_left, "ROWS": p.batch * p.out_h}
    d.update(zip(("XN", "XY", "XX", "XC"), image_strides(p.batch, p.in_h, p.in_w, p.in_c, p.nchw)))
    d.update(zip(("ON", "OY", "OX", "OC"), image_strides(p.batch, p.out_h, p.out_w, p.in_c, p.nchw)))
    d.update(float_io(x))
    act = act_defines(p, out)
    d.update(act)
    whole = (p.out_h == p.out_w == 1 and p.kernel_h == p.in_h and p.kernel_w == p.in_w and not p.nchw
             and p.pad_top == p.pad_left == p.pad_bottom == p.pad_right == 0)
    if whole and emit_whole_image_pool(ctx, p.kind, p.batch, p.in_h, p.in_w, p.in_c, act):
        return
    cb = next(b for b in _CHANNEL_BLOCKS if p.in_c % b == 0)
    few = autotune.target_tuning().min_work_items
    while cb > 1 and p.in_c // cb * p.out_w * p.batch * p.out_h < few:
        cb //= 2   # the blocks are powers of two: a half still divides C
    d["CB"] = cb
    ctx.emit("pooling.cl", d, [ctx.input(0)], [ctx.output(0)], (p.in_c // d["CB"], p.out_w, p.batch * p.out_h))


# ---- the operations ---------------------------------------------------------------------------------

@operation(OperationType.AVERAGE_POOL_2D, signature=POOL_SIGNATURE, reference=reference_average_pool_2d,
           lower=lower_pool, supports=supports_pool)
def average_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.AVERAGE_POOL_2D, inputs, outputs)


@operation(OperationType.MAX_POOL_2D, signature=POOL_SIGNATURE, reference=reference_max_pool_2d,
           lower=lower_pool, supports=supports_pool)
def max_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.MAX_POOL_2D, inputs, outputs)


@operation(OperationType.L2_POOL_2D, signature=L2_POOL_SIGNATURE, reference=reference_l2_pool_2d,
           lower=lower_pool, supports=supports_pool)
def l2_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.L2_POOL_2D, inputs, outputs)
