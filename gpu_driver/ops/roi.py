"""Regions of interest: ROI_ALIGN, ROI_POOLING, HEATMAP_MAX_KEYPOINT (all FL3; quant8 signed FL4).

- Boxes are (x1, y1, x2, y2) in image coordinates, of the feature map's float type, or
  TENSOR_QUANT16_ASYMM (scale 0.125, zero point 0) with a quantized feature map; a box is read as
  the fp32 value (q − zp)·scale.  Every computation is fp32 in AOSP's order; fp16 tensors are
  widened to fp32 and the results rounded once.
- ROI_ALIGN / ROI_POOLING: input 2 holds each box's batch index; ``height_stride`` /
  ``width_stride`` divide image coordinates into feature-map ones (multiplied by 1/stride in fp32).
  A batch index outside [0, N), a negative coordinate, a scaled coordinate beyond the map or
  x1 > x2 / y1 > y2 fail the execution (GENERAL_FAILURE).  ROI_ALIGN takes zero boxes (empty output);
  ROI_POOLING fails on them.
- ROI_ALIGN averages bilinear samples (``sampling_ratio`` per bin and axis, 0 = ceil(bin size));
  a sample at or beyond the last row/column reads that row/column.  Quantized: the four bilinear
  weights are rounded to multiples of 1/255, Σ w·(q − zp) accumulates in int32, and
  MBQM(Σ, s_in·(1/255)/s_out/samples) + zp_out is saturated; a multiplier ≥ 1 fails the execution.
- ROI_POOLING takes the maximum of each bin [floor(start), ceil(end)) (clipped to the map) as
  ``first || v > max`` (a NaN first element stays, later NaNs are skipped; quantized: the stored
  values, output quantization = the input's); an empty bin gives the zero point.
- HEATMAP_MAX_KEYPOINT: the first maximum of each S×S map (values > −FLT_MAX), refined by a
  quadratic fit of its mirrored 3×3 neighbourhood (operations.md op 56; det tolerance 1e-5, 1e-3 for
  fp16); quantized inputs are dequantized and the outputs quantized (round half away, saturate).

The accelerator kernels (``roi.cl``, one work item per output element or per box·keypoint) run every
type; their quantized ROI_ALIGN reads the per-sample-count multipliers from a table made here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import QRANGE, ctype, float_io, known, numel, params_ok, trailing_scalars_constant, \
    Work
from ..errors import failure
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, float_values, require, require_nonempty, stored_values
from .layout import ImageSizes, from_nhwc, image_strides, nhwc_dims, stored_shape, to_nhwc
from .registry import operation
from .signature import BOOL, F16, F32, I32, Q8A, Q8AS, RANK4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

Q16A = OperandType.TENSOR_QUANT16_ASYMM
_QUANT8 = (Q8A, Q8AS)
#: the scale of TENSOR_QUANT16_ASYMM boxes
BOX_SCALE = 0.125
#: the types a box tensor may have (checked against the feature map's type)
_BOX_TYPES = frozenset((F32, F16, Q16A))
#: ROI_ALIGN's quantized bilinear weight step
_WEIGHT_SCALE = np.float32(1.0) / np.float32(255.0)
_FLT_MAX = np.float32(np.finfo(np.float32).max)
_OP_CODES = {OperationType.ROI_ALIGN: 0, OperationType.ROI_POOLING: 1}


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class RoiParams(OpParams, ImageSizes):
    """ROI_ALIGN / ROI_POOLING: sizes NHWC-normalised (``batch`` = the feature map's N, ``out_h`` /
    ``out_w`` the pooled size, ``num_rois`` the output's batch), the strides and sampling ratios."""

    num_rois: int = 0
    height_stride: float = 1.0
    width_stride: float = 1.0
    sampling_h: int = 0
    sampling_w: int = 0


@dataclass
class HeatmapParams(OpParams):
    """HEATMAP_MAX_KEYPOINT: ``num_boxes`` maps of ``size``×``size`` per keypoint."""

    num_boxes: int = 0
    size: int = 0
    keypoints: int = 0
    nchw: bool = False


# ---- signatures --------------------------------------------------------------------------------------

def box_type_for(t: OperandType) -> OperandType:
    """The box tensor type that goes with a feature map / score tensor of type ``t``."""
    return Q16A if t in _QUANT8 else t


def check_box_operand(ctx: OpContext, operand, t: OperandType, what: str) -> None:
    """A box tensor of ``t``'s box type; TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0."""
    want = box_type_for(t)
    if operand.type != want:
        ctx.fail(f"{what} has type {OperandType(operand.type).name}, expected {want.name}")
    if want == Q16A and (float(operand.scale) != BOX_SCALE or operand.zero_point != 0):
        ctx.fail(f"{what} must have scale 0.125 and zeroPoint 0, got ({operand.scale}, {operand.zero_point})")


def _check_roi_boxes(ctx: OpContext, t: OperandType) -> int:
    check_box_operand(ctx, ctx.inp(1), t, "input 1 (rois)")
    return 3


def _check_heatmap_boxes(ctx: OpContext, t: OperandType) -> int:
    check_box_operand(ctx, ctx.inp(1), t, "input 1 (boxes)")
    check_box_operand(ctx, ctx.out(1), t, "output 1 (keypoints)")
    return 3


_ROI_TYPES = {F32: 3, F16: 3, Q8A: 3, Q8AS: 4}
_ROI_RANKS = dict(ranks={0: RANK4, 1: (2, 2), 2: (1, 1)}, out_ranks={0: RANK4})
ROI_ALIGN_SIGNATURE = OpSignature(
    _ROI_TYPES, (Variant("roi_align", ("T", _BOX_TYPES, I32, i32, i32, "F", "F", i32, i32, BOOL), ("T",)),),
    check=_check_roi_boxes, **_ROI_RANKS)
ROI_POOLING_SIGNATURE = OpSignature(
    _ROI_TYPES, (Variant("roi_pooling", ("T", _BOX_TYPES, I32, i32, i32, "F", "F", BOOL), ("T",)),),
    same_quant=((0, 0),), check=_check_roi_boxes, **_ROI_RANKS)
HEATMAP_MAX_KEYPOINT_SIGNATURE = OpSignature(
    _ROI_TYPES, (Variant("heatmap", ("T", _BOX_TYPES, BOOL), ("T", _BOX_TYPES)),),
    ranks={0: RANK4, 1: (2, 2)}, out_ranks={0: (2, 2), 1: (3, 3)}, check=_check_heatmap_boxes)


# ---- definitions -------------------------------------------------------------------------------------

def _define_roi(inputs: list[TensorInfo], outputs: list[TensorInfo], name: str, layout_index: int,
                sampling: bool) -> RoiParams:
    """ROI_ALIGN (``sampling``: inputs 7, 8 are the sampling ratios) or ROI_POOLING (no zero boxes)."""
    x, rois, batches = inputs[0], inputs[1], inputs[2]
    nchw = bool(inputs[layout_index].scalar())
    n, h, w, c = nhwc_dims(x, nchw, name)
    require(n > 0, name, "the feature map's batch must be > 0")
    rd, bd = rois.dims(), batches.dims()
    require(len(rd) == 2 and rd[1] == 4, name, f"rois must be [num_rois, 4], got {list(rd)}")
    require(len(bd) == 1 and bd[0] == rd[0], name, f"batch indices must be [{rd[0]}], got {list(bd)}")
    out_h, out_w = inputs[3].scalar(), inputs[4].scalar()
    hs, ws = inputs[5].scalar(), inputs[6].scalar()
    require(out_h > 0 and out_w > 0, name, f"output size must be > 0, got {out_h}×{out_w}")
    require(hs > 0 and ws > 0, name, f"strides must be > 0, got {hs}, {ws}")
    sh = sw = 0
    if sampling:
        sh, sw = inputs[7].scalar(), inputs[8].scalar()
        require(sh >= 0 and sw >= 0, name, f"sampling ratios must be ≥ 0, got {sh}, {sw}")
    r = rd[0]
    if not sampling:
        require_nonempty(tuple(rd), name)
    return RoiParams(output_shapes=[stored_shape(r, out_h, out_w, c, nchw)], batch=n, in_h=h, in_w=w, in_c=c,
                     out_h=out_h, out_w=out_w, out_c=c, nchw=nchw, num_rois=r, height_stride=hs, width_stride=ws,
                     sampling_h=sh, sampling_w=sw)


# ---- reference kernels -------------------------------------------------------------------------------

def _checked_box(p: RoiParams, box: np.ndarray, batch: int, name: str) -> tuple[np.float32, ...]:
    """The box scaled to feature-map coordinates (x1, y1, x2, y2), after the reference's checks."""
    if not 0 <= batch < p.batch:
        raise failure(f"{name}: batch index {batch} outside [0, {p.batch})")
    hscale = np.float32(1.0) / np.float32(p.height_stride)
    wscale = np.float32(1.0) / np.float32(p.width_stride)
    x1, y1, x2, y2 = (np.float32(v) for v in box)
    sx1, sy1, sx2, sy2 = x1 * wscale, y1 * hscale, x2 * wscale, y2 * hscale
    if not (x1 >= 0 and y1 >= 0 and x2 >= 0 and y2 >= 0 and sx1 <= p.in_w and sy1 <= p.in_h
            and sx2 <= p.in_w and sy2 <= p.in_h and x1 <= x2 and y1 <= y2):
        raise failure(f"{name}: box {[float(v) for v in box]} is outside the feature map or inverted")
    return sx1, sy1, sx2, sy2


def _align_axis(start: np.float32, end: np.float32, out: int, ratio: int, size: int):
    """Per output position and sample of one ROI_ALIGN axis: (lower index, upper index, fraction)
    and the number of samples."""
    length = max(end - start, np.float32(1.0))
    step = np.float32(length / np.float32(out))
    samples = ratio if ratio > 0 else int(math.ceil(step))
    bin_size = np.float32(step / np.float32(samples))
    o = np.arange(out, dtype=np.float32)[:, None]
    s = np.arange(samples, dtype=np.float32)[None, :]
    pos = ((step * o + start) + bin_size / np.float32(2.0)) + bin_size * s
    lo = np.floor(pos).astype(np.int64)
    frac = (pos - lo.astype(np.float32)).astype(np.float32)
    edge = lo >= size - 1
    lo = np.where(edge, size - 1, lo)
    return lo, np.where(edge, size - 1, lo + 1), np.where(edge, np.float32(0), frac), samples


def align_multiplier(x: TensorInfo, out: TensorInfo, samples: int) -> tuple[int, int] | None:
    """Quantized ROI_ALIGN's (multiplier, shift) for ``samples`` sampling points (fp32 real value, as
    the reference); None when the real multiplier is not below 1 (the execution fails)."""
    real = float(np.float32(np.float32(np.float32(x.scale) * _WEIGHT_SCALE) / np.float32(out.scale))
                 / np.float32(samples))
    if not 0.0 <= real < 1.0:
        return None
    return quant.quantize_multiplier(real)


def _roi_align_box(p: RoiParams, img: np.ndarray, box, x: TensorInfo, out: TensorInfo) -> np.ndarray:
    """One box's [out_h, out_w, C] result (img: the batch's [H, W, C] stored values)."""
    sx1, sy1, sx2, sy2 = box
    y_lo, y_hi, fy, ny = _align_axis(sy1, sy2, p.out_h, p.sampling_h, p.in_h)
    x_lo, x_hi, fx, nx = _align_axis(sx1, sx2, p.out_w, p.sampling_w, p.in_w)
    quantized = x.is_quantized
    acc = np.zeros((p.out_h, p.out_w, p.in_c), np.int64 if quantized else np.float32)
    data = img.astype(np.int64) - x.zero_point if quantized else img.astype(np.float32)
    one = np.float32(1.0)
    for yi in range(ny):
        dy1 = fy[:, yi][:, None, None]
        dy2 = one - dy1
        rows_lo, rows_hi = data[y_lo[:, yi]], data[y_hi[:, yi]]
        for xi in range(nx):
            dx1 = fx[:, xi][None, :, None]
            dx2 = one - dx1
            corners = (rows_lo[:, x_lo[:, xi]], rows_lo[:, x_hi[:, xi]], rows_hi[:, x_lo[:, xi]],
                       rows_hi[:, x_hi[:, xi]])
            weights = (dx2 * dy2, dx1 * dy2, dx2 * dy1, dx1 * dy1)
            if quantized:
                acc += sum(quant.round_half_away(w / _WEIGHT_SCALE).astype(np.int64) * v
                           for w, v in zip(weights, corners))
            else:
                interp = weights[0] * corners[0]
                for w, v in zip(weights[1:], corners[1:]):
                    interp = interp + w * v
                acc = acc + interp
    if not quantized:
        return acc / np.float32(ny * nx)
    mult = align_multiplier(x, out, ny * nx)
    if mult is None:
        raise failure("ROI_ALIGN: the quantized output multiplier is not below 1")
    r = quant.multiply_by_quantized_multiplier(acc, *mult) + out.zero_point
    return np.clip(r, *out.qrange)


def _roi_pool_box(p: RoiParams, img: np.ndarray, box, x: TensorInfo, out: TensorInfo) -> np.ndarray:
    """One box's [out_h, out_w, C] maxima (img: the batch's [H, W, C] stored values)."""
    xs, ys, xe, ye = (int(quant.round_half_away_scalar(float(v))) for v in box)
    result = np.full((p.out_h, p.out_w, p.in_c), x.zero_point if x.is_quantized else 0, dtype=img.dtype)
    hstep = np.float32(np.float32(max(ye - ys + 1, 1)) / np.float32(p.out_h))
    wstep = np.float32(np.float32(max(xe - xs + 1, 1)) / np.float32(p.out_w))

    def bounds(step, o, start, size):
        lo = int(math.floor(step * np.float32(o) + np.float32(start)))
        hi = int(math.ceil(step * np.float32(o + 1) + np.float32(start)))
        return min(max(lo, 0), size), min(max(hi, 0), size)

    for i in range(p.out_h):
        h0, h1 = bounds(hstep, i, ys, p.in_h)
        for j in range(p.out_w):
            w0, w1 = bounds(wstep, j, xs, p.in_w)
            if h0 >= h1 or w0 >= w1:
                continue
            cell = img[h0:h1, w0:w1].reshape(-1, p.in_c)
            first = cell[0]
            if cell.dtype.kind == "f":
                best = np.fmax.reduce(cell.astype(np.float32), axis=0)
                result[i, j] = np.where(np.isnan(first), first, best)
            else:
                result[i, j] = cell.max(axis=0)
    return result


def _roi_reference(compute):
    def reference(params: RoiParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
        p, x, out = params, inputs[0], outputs[0]
        name = "ROI_ALIGN" if compute is _roi_align_box else "ROI_POOLING"
        result = np.zeros((p.num_rois, p.out_h, p.out_w, p.in_c), out.dtype)
        if p.num_rois:
            img = to_nhwc(x.array(), p.nchw)
            boxes = float_values(inputs[1]).reshape(-1, 4)
            batches = np.asarray(inputs[2].array()).reshape(-1)
            for r in range(p.num_rois):
                box = _checked_box(p, boxes[r], int(batches[r]), name)
                with np.errstate(over="ignore", invalid="ignore"):
                    result[r] = compute(p, img[int(batches[r])], box, x, out).astype(out.dtype)
        return [from_nhwc(result, p.nchw)]
    reference.__name__ = f"reference_{compute.__name__.strip('_')}"
    return reference


reference_roi_align = _roi_reference(_roi_align_box)
reference_roi_pooling = _roi_reference(_roi_pool_box)


def _solve_for_delta(g: np.ndarray, score: np.ndarray, tol: float):
    """The quadratic refinement of op 56 on grids g[..., 3, 3] (fp32, AOSP's order): (δx, δy, score)."""
    two = np.float32(2.0)
    b0 = -(g[..., 1, 2] - g[..., 1, 0]) / two
    b1 = -(g[..., 2, 1] - g[..., 0, 1]) / two
    a00 = g[..., 1, 0] - two * g[..., 1, 1] + g[..., 1, 2]
    a01 = (g[..., 2, 2] - g[..., 2, 0] - g[..., 0, 2] + g[..., 0, 0]) / np.float32(4.0)
    a11 = g[..., 0, 1] - two * g[..., 1, 1] + g[..., 2, 1]
    cross = a00 * a11
    det = cross - a01 * a01
    solve = ~(np.abs(det) < np.float32(tol) + np.float32(tol) * cross)
    safe = np.where(solve, det, np.float32(1.0))
    d0 = (a11 * b0 - a01 * b1) / safe
    d1 = (a00 * b1 - a01 * b0) / safe
    big = np.maximum(np.abs(d0), np.abs(d1))
    clip = (np.abs(d0) > np.float32(1.5)) | (np.abs(d1) > np.float32(1.5))
    scale = np.where(clip, np.float32(1.5) / np.where(clip, big, np.float32(1.0)), np.float32(1.0))
    d0 = np.where(clip, d0 * scale, d0)
    d1 = np.where(clip, d1 * scale, d1)
    refined = g[..., 1, 1] - b0 * d0 - b1 * d1 + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / two
    zero = np.float32(0.0)
    return np.where(solve, d0, zero), np.where(solve, d1, zero), np.where(solve, refined, score)


def heatmap_tolerance(t: OperandType) -> float:
    """The determinant tolerance (absolute and relative) of the refinement."""
    return 1e-3 if t == F16 else 1e-5


def reference_heatmap_max_keypoint(params: HeatmapParams, inputs: list[TensorInfo],
                                   outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    maps = to_nhwc(float_values(inputs[0]), p.nchw)           # [R, S, S, K]
    boxes = float_values(inputs[1]).reshape(-1, 4)
    if p.num_boxes and not np.all((boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3])):
        raise failure("HEATMAP_MAX_KEYPOINT: a box has x1 > x2 or y1 > y2")
    s = p.size
    flat = maps.reshape(p.num_boxes, s * s, p.keypoints)
    valid = flat > -_FLT_MAX
    idx = np.argmax(np.where(valid, flat, -np.inf), axis=1)             # first maximum: [R, K]
    has = valid.any(axis=1)
    idx = np.where(has, idx, 0)
    score = np.where(has, np.take_along_axis(flat, idx[:, None, :], 1)[:, 0], -_FLT_MAX).astype(np.float32)
    mh, mw = idx // s, idx % s
    offs = np.arange(-1, 2)
    hh = mh[..., None] + offs
    ww = mw[..., None] + offs
    hh = np.where(hh < 0, 1, np.where(hh >= s, s - 2, hh))
    ww = np.where(ww < 0, 1, np.where(ww >= s, s - 2, ww))
    r_idx = np.arange(p.num_boxes)[:, None, None, None]
    k_idx = np.arange(p.keypoints)[None, :, None, None]
    grid = maps[r_idx, hh[..., :, None], ww[..., None, :], k_idx]       # [R, K, 3, 3]
    with np.errstate(all="ignore"):
        d0, d1, refined = _solve_for_delta(grid.astype(np.float32), score, heatmap_tolerance(inputs[0].type))
        x1, y1 = boxes[:, 0:1], boxes[:, 1:2]
        width, height = boxes[:, 2:3] - x1, boxes[:, 3:4] - y1
        fs = np.float32(s)
        kx = ((mw.astype(np.float32) + d0 + np.float32(0.5)) / fs) * width + x1
        ky = ((mh.astype(np.float32) + d1 + np.float32(0.5)) / fs) * height + y1
    keypoints = np.stack([kx, ky], axis=-1).astype(np.float32)
    return [stored_values(refined, outputs[0]).reshape(p.num_boxes, p.keypoints),
            stored_values(keypoints, outputs[1]).reshape(p.num_boxes, p.keypoints, 2)]


# ---- lowering ----------------------------------------------------------------------------------------

def supports_roi(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not trailing_scalars_constant(ctx, 3):
        return False
    x, out = ctx.inputs[0], ctx.outputs[0]
    if not known(*ctx.inputs[:3], out) or x.type not in (F32, F16, Q8A, Q8AS):
        return False
    p = ctx.params
    if ctx.node.type == OperationType.ROI_POOLING and p.num_rois == 0:
        return False  # the reference fails on zero boxes
    return True


def _multiplier_table(p: RoiParams, x: TensorInfo, out: TensorInfo) -> np.ndarray:
    """Quantized ROI_ALIGN: (multiplier, shift) for every possible sample count 1..max (rows; a
    multiplier of −1 marks a count whose real multiplier is not below 1)."""
    most_h = p.sampling_h or max(1, math.ceil(p.in_h / p.out_h))
    most_w = p.sampling_w or max(1, math.ceil(p.in_w / p.out_w))
    rows = [(-1, 0)]  # count 0 never occurs
    for count in range(1, most_h * most_w + 1):
        rows.append(align_multiplier(x, out, count) or (-1, 0))
    return np.asarray(rows, np.int32)


#: every literal of roi.cl (the template serves all three operations)
_LITERALS = dict.fromkeys(
    ("OP", "COUNT", "QUANT", "N", "H", "W", "C", "OH", "OW", "HSCALE", "WSCALE", "SAMPLING_H", "SAMPLING_W",
     "ZP", "ZO", "QMIN", "QMAX", "MULT_TABLE", "TABLE_ROWS", "XN", "XY", "XX", "XC", "ON", "OY", "OX", "OC",
     "S", "K", "TOL", "SR", "SY", "SX", "SK", "XQUANT", "XSCALE", "XZP", "WEIGHT_SCALE", "OQUANT", "OSCALE", "OZP",
     "OQMIN", "OQMAX", "KQUANT", "KSCALE", "KQMAX", "FLT_MAX_NEG"), 0)


def _literals(ctx: LoweringContext, x: TensorInfo, boxes: TensorInfo, **values) -> dict:
    """roi.cl's literals: the defaults, the storage types and load/store macros, and ``values``."""
    d = dict(_LITERALS, T=ctype(x), BT=ctype(boxes), STATUS_CODE=ctx.status_code,
             BOX_SCALE=BOX_SCALE if boxes.type == Q16A else 1.0, **float_io(x), **float_io(boxes, "B"),
             KSTORE=float_io(boxes)["STORE"])
    d.update(values)
    return d


def lower_roi(ctx: LoweringContext) -> None:
    """ROI_ALIGN / ROI_POOLING: one roi.cl work item per output element."""
    p = ctx.params
    count = numel(p.output_shapes[0])
    if count == 0:
        return
    x, out = ctx.inputs[0], ctx.outputs[0]
    qmin, qmax = QRANGE.get(x.type, (0, 0))
    d = _literals(ctx, x, ctx.inputs[1], OP=_OP_CODES[ctx.node.type], QUANT=int(x.type in QRANGE), COUNT=count,
                  N=p.batch, H=p.in_h, W=p.in_w, C=p.in_c, OH=p.out_h, OW=p.out_w,
                  HSCALE=float(np.float32(1.0) / np.float32(p.height_stride)),
                  WSCALE=float(np.float32(1.0) / np.float32(p.width_stride)), SAMPLING_H=p.sampling_h,
                  SAMPLING_W=p.sampling_w, ZP=x.zero_point, ZO=out.zero_point, QMIN=qmin, QMAX=qmax,
                  WEIGHT_SCALE=float(_WEIGHT_SCALE))
    d.update(zip(("XN", "XY", "XX", "XC"), image_strides(p.batch, p.in_h, p.in_w, p.in_c, p.nchw)))
    d.update(zip(("ON", "OY", "OX", "OC"), image_strides(p.num_rois, p.out_h, p.out_w, p.out_c, p.nchw)))
    ins = [ctx.input(0), ctx.input(1), ctx.input(2)]
    if d["QUANT"] and ctx.node.type == OperationType.ROI_ALIGN:
        table = _multiplier_table(p, x, out)
        ins.append(ctx.constant(table))
        d["MULT_TABLE"], d["TABLE_ROWS"] = 1, len(table)
    outs = [ctx.output(0), ctx.status("a box is outside the feature map, inverted or has a bad batch index, "
                                      "or a quantized multiplier is not below 1")]
    ctx.emit("roi.cl", d, ins, outs, (count,), Work.ELEMENTS)


def supports_heatmap(ctx: LoweringContext) -> bool:
    return params_ok(ctx) and trailing_scalars_constant(ctx, 2) and known(*ctx.inputs[:2], *ctx.outputs) \
        and ctx.inputs[0].type in (F32, F16, Q8A, Q8AS)


def lower_heatmap(ctx: LoweringContext) -> None:
    """roi.cl OP 2: one work item per box and keypoint."""
    p = ctx.params
    count = p.num_boxes * p.keypoints
    if count == 0:
        return
    x, boxes, scores, points = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], ctx.outputs[1]
    s, k = p.size, p.keypoints
    # element strides of (box, y, x, keypoint)
    strides = (s * s * k, s, 1, s * s) if p.nchw else (s * s * k, s * k, k, 1)
    d = _literals(ctx, x, boxes, OP=2, COUNT=count, S=s, K=k, TOL=heatmap_tolerance(x.type),
                  XQUANT=int(x.is_quantized), XSCALE=float(np.float32(x.scale)), XZP=x.zero_point,
                  OQUANT=int(scores.is_quantized),
                  OSCALE=float(np.float32(scores.scale or 1.0)), OZP=scores.zero_point,
                  KQUANT=int(points.is_quantized), KSCALE=BOX_SCALE, FLT_MAX_NEG=float(-_FLT_MAX))
    d.update(zip(("SR", "SY", "SX", "SK"), strides))
    d["OQMIN"], d["OQMAX"] = scores.qrange if scores.is_quantized else (0, 0)
    d["KQMAX"] = points.qrange[1] if points.is_quantized else 0
    outs = [ctx.output(0), ctx.output(1), ctx.status("a box has x1 > x2 or y1 > y2")]
    ctx.emit("roi.cl", d, [ctx.input(0), ctx.input(1)], outs, (count,), Work.ROWS)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.ROI_ALIGN, signature=ROI_ALIGN_SIGNATURE, reference=reference_roi_align,
           lower=lower_roi, supports=supports_roi)
def roi_align(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> RoiParams:
    return _define_roi(inputs, outputs, "ROI_ALIGN", 9, sampling=True)


@operation(OperationType.ROI_POOLING, signature=ROI_POOLING_SIGNATURE, reference=reference_roi_pooling,
           lower=lower_roi, supports=supports_roi)
def roi_pooling(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> RoiParams:
    return _define_roi(inputs, outputs, "ROI_POOLING", 7, sampling=False)


@operation(OperationType.HEATMAP_MAX_KEYPOINT, signature=HEATMAP_MAX_KEYPOINT_SIGNATURE,
           reference=reference_heatmap_max_keypoint, lower=lower_heatmap, supports=supports_heatmap)
def heatmap_max_keypoint(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> HeatmapParams:
    name = "HEATMAP_MAX_KEYPOINT"
    nchw = bool(inputs[2].scalar())
    dims, bd = inputs[0].dims(), inputs[1].dims()
    require(len(dims) == 4 and len(bd) == 2, name, "heatmaps must be rank 4 and boxes rank 2")
    r, size = dims[0], dims[2]
    k = dims[1] if nchw else dims[3]
    require((dims[3] if nchw else dims[1]) == size, name, f"heatmaps must be square, got {list(dims)}")
    require(size >= 2, name, f"heatmap size must be ≥ 2, got {size}")
    require(bd[0] == r and bd[1] == 4, name, f"boxes must be [{r}, 4], got {list(bd)}")
    require_nonempty(tuple(dims), name)
    return HeatmapParams(output_shapes=[(r, k), (r, k, 2)], num_boxes=r, size=size, keypoints=k, nchw=nchw)
