"""Detection post-processing: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS,
DETECTION_POSTPROCESSING (all FL3; quant8 signed FL4).

- Boxes are (x1, y1, x2, y2) of the float type, or TENSOR_QUANT16_ASYMM (scale 0.125, zero point 0)
  beside quantized scores / deltas (GENERATE_PROPOSALS' anchors: TENSOR_QUANT16_SYMM, scale 0.125).
  Quantized tensors are dequantized to fp32 ((q − zp)·scale), every computation is fp32 in AOSP's
  order, and quantized outputs are quantized back (round half away, saturated); fp16 is widened.
- The box transform (op 41): w = x2 − x1, cx = (x1 + x2)/2, w' = e^dw·w, cx' = cx + dx·w, corners
  cx' ∓ w'/2, clipped to [0, image width] (likewise y).  A bad batch index or x1 > x2 / y1 > y2 fails
  the execution (GENERAL_FAILURE).
- NMS follows AOSP's in-place algorithm exactly: pick the first maximum of the remaining candidates,
  then visit the rest in order, moving a discarded one to the end (swapped with the last remaining
  one); IoU uses areas without "+1".  BOX_WITH_NMS_LIMIT decays scores with the hard / linear /
  gaussian kernel and drops candidates whose decayed score < nms_score_threshold; hard NMS elsewhere
  drops IoU ≥ threshold.  Sorts by score are stable (descending).
- BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS have data-dependent output sizes: their definitions
  raise ShapeUnknown until the data is known and the reference kernels return the actual outputs
  (possibly zero-sized).  DETECTION_POSTPROCESSING's outputs have fixed sizes (unused slots zero):
  max_num_detections (regular NMS) or max_num_detections·max_classes_per_detection (fast NMS).

The accelerator runs AXIS_ALIGNED_BBOX_TRANSFORM (one work item per box and class) and
DETECTION_POSTPROCESSING (decoding one work item per anchor, NMS one work item per batch) with
``detection.cl``.  The two operations with data-dependent sizes register a ``data_dependent`` launch
instead of a lowering (``box_nms.cl``, ``proposals.cl``: one work item runs AOSP's sequential
algorithm, writes the outputs at their largest and the row count); accelerators run them as steps of
their own (accelerator.control_flow), reading back only that count.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..compiler.ir import DataDependentKernel
from ..compiler.lowering_helpers import ctype, fdef, float_io, known, params_ok, trailing_scalars_constant, Work
from ..errors import failure
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType
from .definition import OpParams, ShapeUnknown, TensorInfo, float_values, require, require_nonempty, stored_values
from .registry import operation
from .signature import BOOL, F16, F32, I32, Q8A, Q8AS, RANK4, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

Q16A = OperandType.TENSOR_QUANT16_ASYMM
Q16S = OperandType.TENSOR_QUANT16_SYMM
_QUANT8 = (Q8A, Q8AS)
#: the scale of quantized boxes, anchors and image sizes
BOX_SCALE = 0.125
_BOX_TYPES = frozenset((F32, F16, Q16A))
_ANCHOR_TYPES = frozenset((F32, F16, Q16S))


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class TransformParams(OpParams):
    """AXIS_ALIGNED_BBOX_TRANSFORM: ``num_rois`` boxes, ``classes`` deltas each, ``batches`` images."""

    num_rois: int = 0
    classes: int = 0
    batches: int = 0


@dataclass
class NmsParams(OpParams):
    """BOX_WITH_NMS_LIMIT (``output_shapes`` empty: known after the computation)."""

    score_threshold: float = 0.0
    max_detections: int = -1
    kernel: int = 0
    iou_threshold: float = 0.0
    sigma: float = 1.0
    nms_score_threshold: float = 0.0


@dataclass
class ProposalParams(OpParams):
    """GENERATE_PROPOSALS (``output_shapes`` empty: known after the computation)."""

    height_stride: float = 1.0
    width_stride: float = 1.0
    pre_nms_top_n: int = 0
    post_nms_top_n: int = -1
    iou_threshold: float = 0.0
    min_size: float = 0.0
    nchw: bool = False


@dataclass
class PostprocessParams(OpParams):
    """DETECTION_POSTPROCESSING: ``slots`` detections per batch (see the module docstring)."""

    batches: int = 0
    anchors: int = 0
    classes: int = 0
    box_length: int = 4
    scales: tuple = (1.0, 1.0, 1.0, 1.0)   # y, x, h, w
    regular: bool = True
    max_detections: int = 1
    max_classes_per_detection: int = 1
    max_detections_per_class: int = 1
    score_threshold: float = 0.0
    iou_threshold: float = 0.0
    background_in_label: bool = False
    slots: int = 1


# ---- signatures --------------------------------------------------------------------------------------

def _require_type(ctx: OpContext, operand, want: OperandType, what: str, scale: float | None = None) -> None:
    """``operand`` has type ``want`` and, when quantized, scale ``scale`` and zero point 0."""
    if operand.type != want:
        ctx.fail(f"{what} has type {OperandType(operand.type).name}, expected {want.name}")
    if scale is not None and (float(operand.scale) != scale or operand.zero_point != 0):
        ctx.fail(f"{what} must have scale {scale} and zeroPoint 0, got ({operand.scale}, {operand.zero_point})")


def _boxes(ctx: OpContext, t: OperandType, operand, what: str, quantized: OperandType = Q16A) -> None:
    """A box-like tensor beside data of type ``t``: the float type, or ``quantized`` at scale 0.125."""
    if t in _QUANT8:
        _require_type(ctx, operand, quantized, what, BOX_SCALE)
    else:
        _require_type(ctx, operand, t, what)


def _check_transform(ctx: OpContext, t: OperandType) -> int:
    for operand, what in ((ctx.inp(0), "input 0 (rois)"), (ctx.inp(3), "input 3 (image info)"),
                          (ctx.out(0), "output 0")):
        _boxes(ctx, t, operand, what)
    return 3


def _check_nms(ctx: OpContext, t: OperandType) -> int:
    _boxes(ctx, t, ctx.inp(1), "input 1 (rois)")
    _boxes(ctx, t, ctx.out(1), "output 1 (rois)")
    return 3


def _check_proposals(ctx: OpContext, t: OperandType) -> int:
    _boxes(ctx, t, ctx.inp(2), "input 2 (anchors)", Q16S)
    _boxes(ctx, t, ctx.inp(3), "input 3 (image info)")
    _boxes(ctx, t, ctx.out(1), "output 1 (rois)")
    return 3


_TYPES = {F32: 3, F16: 3, Q8A: 3, Q8AS: 4}
AXIS_ALIGNED_BBOX_TRANSFORM_SIGNATURE = OpSignature(
    _TYPES, (Variant("transform", (_BOX_TYPES, "T", I32, _BOX_TYPES), (_BOX_TYPES,)),), primary=1,
    ranks={0: (2, 2), 1: (2, 2), 2: (1, 1), 3: (2, 2)}, out_ranks={0: (2, 2)}, check=_check_transform)
BOX_WITH_NMS_LIMIT_SIGNATURE = OpSignature(
    _TYPES, (Variant("nms", ("T", _BOX_TYPES, I32, "F", i32, i32, "F", "F", "F"), ("T", _BOX_TYPES, I32, I32)),),
    ranks={0: (2, 2), 1: (2, 2), 2: (1, 1)}, out_ranks={0: (1, 1), 1: (2, 2), 2: (1, 1), 3: (1, 1)},
    same_quant=((0, 0),), check=_check_nms)
GENERATE_PROPOSALS_SIGNATURE = OpSignature(
    _TYPES, (Variant("proposals", ("T", "T", _ANCHOR_TYPES, _BOX_TYPES, "F", "F", i32, i32, "F", "F", BOOL),
                     ("T", _BOX_TYPES, I32)),),
    ranks={0: RANK4, 1: RANK4, 2: (2, 2), 3: (2, 2)}, out_ranks={0: (1, 1), 1: (2, 2), 2: (1, 1)},
    same_quant=((0, 0),), check=_check_proposals)
DETECTION_POSTPROCESSING_SIGNATURE = OpSignature(
    {F32: 3, F16: 3},
    (Variant("postprocess", ("T", "T", "T", "F", "F", "F", "F", BOOL, i32, i32, i32, "F", "F", BOOL),
             ("T", "T", I32, I32)),),
    ranks={0: (3, 3), 1: (3, 3), 2: (2, 2)}, out_ranks={0: (2, 2), 1: (3, 3), 2: (2, 2), 3: (1, 1)})


# ---- shared numerics ---------------------------------------------------------------------------------

def _std_max(a, b):
    """C++ std::max(a, b) = a < b ? b : a."""
    return np.where(a < b, b, a)


def _std_min(a, b):
    """C++ std::min(a, b) = b < a ? b : a."""
    return np.where(b < a, b, a)


def transform_boxes(rois: np.ndarray, deltas: np.ndarray, height: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Op 41 on fp32 rois [N, 4] with deltas [N, K, 4] and each roi's image size [N]: boxes [N, K, 4]."""
    two, zero = np.float32(2.0), np.float32(0.0)
    x1, y1, x2, y2 = (rois[:, i:i + 1] for i in range(4))
    w, h = x2 - x1, y2 - y1
    cx, cy = (x1 + x2) / two, (y1 + y2) / two
    dx, dy, dw, dh = (deltas[..., i] for i in range(4))
    with np.errstate(all="ignore"):
        nw, nh = np.exp(dw) * w, np.exp(dh) * h
        nx, ny = cx + dx * w, cy + dy * h
        corners = (nx - nw / two, ny - nh / two, nx + nw / two, ny + nh / two)
    limits = (width[:, None], height[:, None]) * 2
    return np.stack([_std_min(_std_max(c, zero), lim) for c, lim in zip(corners, limits)], axis=-1).astype(np.float32)


def _check_ordered(boxes: np.ndarray, name: str) -> None:
    if not np.all((boxes[..., 0] <= boxes[..., 2]) & (boxes[..., 1] <= boxes[..., 3])):
        raise failure(f"{name}: a box has x1 > x2 or y1 > y2")


def iou_with(boxes: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """IoU of each of ``boxes`` [M, 4] with ``picked`` [4] (fp32, AOSP's getIoUAxisAligned(box, picked))."""
    with np.errstate(all="ignore"):
        area1 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        area2 = (picked[2] - picked[0]) * (picked[3] - picked[1])
        x1, y1 = _std_max(boxes[:, 0], picked[0]), _std_max(boxes[:, 1], picked[1])
        x2, y2 = _std_min(boxes[:, 2], picked[2]), _std_min(boxes[:, 3], picked[3])
        zero = np.float32(0.0)
        inter = _std_max(x2 - x1, zero) * _std_max(y2 - y1, zero)
        return (inter / (area1 + area2 - inter)).astype(np.float32)


def nms(scores: np.ndarray, select: list[int], limit: int, keep: Callable[[int, np.ndarray], np.ndarray]) -> list[int]:
    """AOSP's in-place NMS over the candidate indices ``select`` (into ``scores``), at most ``limit``
    picks (< 0: no limit).  ``keep(picked, rest)`` says which of the indices ``rest`` survive the pick
    (and may decay their scores).  Returns the picks in order."""
    select = list(select)
    start, end = 0, len(select)
    limit = len(select) if limit < 0 else limit
    while start < end and start < limit:
        window = scores[select[start:end]]
        best = 0 if np.isnan(window[0]) else int(np.argmax(np.where(np.isnan(window), -np.inf, window)))
        select[start], select[start + best] = select[start + best], select[start]
        rest = np.asarray(select[start + 1:end], dtype=np.int64)
        survives = dict(zip(rest.tolist(), keep(select[start], rest).tolist())) if len(rest) else {}
        i = start + 1
        while i < end:
            if survives[select[i]]:
                i += 1
            else:
                end -= 1
                select[i], select[end] = select[end], select[i]
        start += 1
    return select[:start]


def hard_keep(boxes: np.ndarray, threshold: float) -> Callable[[int, np.ndarray], np.ndarray]:
    """Hard NMS: a candidate survives while its IoU with the pick is below ``threshold``."""
    return lambda picked, rest: ~(iou_with(boxes[rest], boxes[picked]) >= np.float32(threshold))


def sorted_by_score(indices: list[int], scores: np.ndarray, key: Callable[[int], object] | None = None) -> list[int]:
    """``indices`` stably sorted by score descending (by ``key`` first when given, ascending)."""
    def cmp(a: int, b: int) -> int:
        if key is not None and key(a) != key(b):
            return -1 if key(a) < key(b) else 1
        return -1 if scores[a] > scores[b] else 1 if scores[b] > scores[a] else 0
    return sorted(indices, key=functools.cmp_to_key(cmp))


# ---- AXIS_ALIGNED_BBOX_TRANSFORM ---------------------------------------------------------------------

def reference_axis_aligned_bbox_transform(params: TransformParams, inputs: list[TensorInfo],
                                          outputs: list[TensorInfo]) -> list[np.ndarray]:
    p, out = params, outputs[0]
    if p.num_rois == 0:
        return [np.zeros((0, 4 * p.classes), out.dtype)]
    rois = float_values(inputs[0]).reshape(-1, 4)
    deltas = float_values(inputs[1]).reshape(p.num_rois, p.classes, 4)
    batches = np.asarray(inputs[2].array()).reshape(-1).astype(np.int64)
    image = float_values(inputs[3]).reshape(-1, 2)
    if np.any((batches < 0) | (batches >= p.batches)):
        raise failure(f"AXIS_ALIGNED_BBOX_TRANSFORM: a batch index is outside [0, {p.batches})")
    _check_ordered(rois, "AXIS_ALIGNED_BBOX_TRANSFORM")
    boxes = transform_boxes(rois, deltas, image[batches, 0], image[batches, 1])
    return [stored_values(boxes, out).reshape(p.num_rois, 4 * p.classes)]


#: every literal of detection.cl (the template serves OP 0 transform, 1 decode, 2 selection)
_LITERALS = dict.fromkeys(
    ("OP", "COUNT", "K", "B", "RT", "DT", "T", "RQUANT", "DQUANT", "DSCALE", "DZP", "STATUS_CODE", "RLOAD",
     "DLOAD", "OSTORE", "LOAD", "STORE", "BATCHES", "A", "L", "SY", "SX", "SH", "SW", "REGULAR", "MAX_DET",
     "MAX_CLASSES", "MAX_PER_CLASS", "SCORE_THR", "IOU_THR", "LABEL_OFFSET", "SLOTS", "CANDIDATES"), 0)


def supports_transform(ctx: LoweringContext) -> bool:
    return params_ok(ctx) and known(*ctx.inputs, *ctx.outputs)


def lower_transform(ctx: LoweringContext) -> None:
    """detection.cl OP 0: one work item per box and class."""
    p = ctx.params
    count = p.num_rois * p.classes
    if count == 0:
        return
    rois, deltas = ctx.inputs[0], ctx.inputs[1]
    d = dict(_LITERALS, OP=0, COUNT=count, K=p.classes, B=p.batches, RT=ctype(rois), DT=ctype(deltas),
             T=ctype(deltas), RQUANT=int(rois.is_quantized), DQUANT=int(deltas.is_quantized),
             DSCALE=float(np.float32(deltas.scale)), DZP=deltas.zero_point, STATUS_CODE=ctx.status_code,
             RLOAD=float_io(rois)["LOAD"], DLOAD=float_io(deltas)["LOAD"], OSTORE=float_io(rois)["STORE"])
    d.update(float_io(rois))
    ins = [ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3)]
    outs = [ctx.output(0), ctx.status("a batch index is out of range or a box has x1 > x2 or y1 > y2")]
    ctx.emit("detection.cl", d, ins, outs, (count,), Work.ELEMENTS)


@operation(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM, signature=AXIS_ALIGNED_BBOX_TRANSFORM_SIGNATURE,
           reference=reference_axis_aligned_bbox_transform, lower=lower_transform, supports=supports_transform)
def axis_aligned_bbox_transform(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> TransformParams:
    name = "AXIS_ALIGNED_BBOX_TRANSFORM"
    rd, dd, bd, idim = (t.dims() for t in inputs)
    require(len(rd) == 2 and rd[1] == 4, name, f"rois must be [num_rois, 4], got {list(rd)}")
    r = rd[0]
    require(len(dd) == 2 and dd[0] == r and dd[1] % 4 == 0 and dd[1] > 0, name,
            f"deltas must be [{r}, 4·classes], got {list(dd)}")
    require(bd == (r,), name, f"batch indices must be [{r}], got {list(bd)}")
    require(len(idim) == 2 and idim[0] > 0 and idim[1] == 2, name, f"image info must be [batches, 2], got {list(idim)}")
    return TransformParams(output_shapes=[(r, dd[1])], num_rois=r, classes=dd[1] // 4, batches=idim[0])


# ---- BOX_WITH_NMS_LIMIT ------------------------------------------------------------------------------

def _nms_kernel(p: NmsParams) -> Callable[[np.ndarray], np.ndarray]:
    thr, one = np.float32(p.iou_threshold), np.float32(1.0)
    if p.kernel == 0:
        return lambda iou: np.where(iou < thr, one, np.float32(0.0))
    if p.kernel == 1:
        return lambda iou: np.where(iou < thr, one, one - iou)
    if p.kernel == 2:
        sigma = np.float32(p.sigma)
        return lambda iou: np.exp(np.float32(-1.0) * iou * iou / sigma)
    raise failure(f"BOX_WITH_NMS_LIMIT: unsupported NMS kernel {p.kernel}")


def _batch_runs(batches: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of each run of equal batch indices."""
    runs: list[list[int]] = []
    for i, b in enumerate(batches.tolist()):
        if runs and batches[runs[-1][0]] == b:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return [(s, n) for s, n in runs]


def reference_box_with_nms_limit(params: NmsParams, inputs: list[TensorInfo],
                                 outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    r, k = inputs[0].dims()
    picks: list[tuple[int, float]] = []  # (global flat index, decayed score)
    raw_rois = np.asarray(inputs[1].array()).reshape(-1, 4)
    if r:
        kernel = _nms_kernel(p)
        scores = float_values(inputs[0]).reshape(-1).copy()
        boxes = float_values(inputs[1]).reshape(-1, 4)
        batches = np.asarray(inputs[2].array()).reshape(-1)
        for start, length in _batch_runs(batches):
            base = start * k
            # the reference checks the first `length` boxes of the run's flat box list
            _check_ordered(boxes[base:base + length], "BOX_WITH_NMS_LIMIT")
            sc, bx = scores[base:base + length * k], boxes[base:base + length * k]

            def keep(picked, rest, sc=sc, bx=bx):
                with np.errstate(all="ignore"):
                    sc[rest] = sc[rest] * kernel(iou_with(bx[rest], bx[picked]))
                return ~(sc[rest] < np.float32(p.nms_score_threshold))

            result: list[int] = []
            for c in range(1, k):
                candidates = [b * k + c for b in range(length) if sc[b * k + c] > np.float32(p.score_threshold)]
                result += nms(sc, candidates, p.max_detections, keep)
            result = sorted_by_score(result, sc)
            if p.max_detections >= 0:
                result = result[:p.max_detections]
            result = sorted_by_score(result, sc, key=lambda i: i % k)
            picks += [(base + i, float(sc[i])) for i in result]
    index = np.asarray([i for i, _ in picks], dtype=np.int64)
    out_scores = np.asarray([s for _, s in picks], dtype=np.float32)
    batches_out = np.asarray(inputs[2].array()).reshape(-1)[index // k] if r else np.zeros(0, np.int32)
    return [stored_values(out_scores, outputs[0]), raw_rois[index].reshape(-1, 4).astype(outputs[1].dtype),
            (index % k).astype(np.int32), batches_out.astype(np.int32)]


def _needs_data(inputs: list[TensorInfo], tensors: range) -> None:
    """ShapeUnknown until the data of every listed input is known (data-dependent output sizes)."""
    if any(inputs[i].value is None for i in tensors):
        raise ShapeUnknown("the output sizes depend on the input data")


def box_with_nms_limit_launch(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DataDependentKernel | None:
    """The accelerator's launch (box_nms.cl, one work item): every operand type, constant scalars."""
    scores, rois = inputs[0], inputs[1]
    if any(inputs[i].value is None for i in range(3, 9)) or scores.shape is None or len(scores.shape) != 2:
        return None
    kernel = int(inputs[5].value)
    quant = scores.type in _QUANT8
    if kernel not in (0, 1, 2) or rois.type != (Q16A if quant else scores.type) or outputs[0].type != scores.type \
            or outputs[1].type != rois.type:
        return None
    r, k = (int(d) for d in scores.shape)
    n = r * k
    out = outputs[0]
    d = {"T": ctype(scores), "TR": ctype(rois), **float_io(scores), **float_io(rois, "B_"), "R": r, "K": k,
         "S_QUANT": int(quant), "S_ZP": scores.zero_point, "S_SCALE": fdef(scores.scale),
         "B_QUANT": int(rois.type == Q16A), "B_ZP": rois.zero_point, "B_SCALE": fdef(rois.scale),
         "O_QUANT": int(quant), "O_SCALE": fdef(out.scale), "O_ZP": out.zero_point,
         "O_MIN": out.qrange[0] if quant else 0, "O_MAX": out.qrange[1] if quant else 0, "KERNEL": kernel,
         "SCORE_THR": fdef(inputs[3].value), "MAXDET": int(inputs[4].value), "IOU_THR": fdef(inputs[6].value),
         "SIGMA": fdef(inputs[7].value), "NMS_THR": fdef(inputs[8].value)}
    size = lambda info: OPERAND_TYPE_INFO[info.type].byte_size  # noqa: E731
    return DataDependentKernel("box_nms.cl", d, [0, 1, 2], [4 * n, 4 * n, 4 * n, 4 * n],
                               [n * size(scores), 4 * n * size(rois), 4 * n, 4 * n],
                               lambda c: [(c,), (c, 4), (c,), (c,)],
                               "BOX_WITH_NMS_LIMIT: a box has x1 > x2 or y1 > y2")


@operation(OperationType.BOX_WITH_NMS_LIMIT, signature=BOX_WITH_NMS_LIMIT_SIGNATURE,
           reference=reference_box_with_nms_limit, data_dependent=box_with_nms_limit_launch)
def box_with_nms_limit(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> NmsParams:
    name = "BOX_WITH_NMS_LIMIT"
    sd, rd, bd = (t.dims() for t in inputs[:3])
    require(len(sd) == 2 and sd[1] > 1, name, f"scores must be [num_rois, classes > 1], got {list(sd)}")
    r, k = sd
    require(rd == (r, 4 * k), name, f"rois must be [{r}, {4 * k}], got {list(rd)}")
    require(bd == (r,), name, f"batch indices must be [{r}], got {list(bd)}")
    params = NmsParams(output_shapes=[], score_threshold=inputs[3].scalar(), max_detections=inputs[4].scalar(),
                       kernel=inputs[5].scalar(), iou_threshold=inputs[6].scalar(), sigma=inputs[7].scalar(),
                       nms_score_threshold=inputs[8].scalar())
    _needs_data(inputs, range(3))
    return params


# ---- GENERATE_PROPOSALS ------------------------------------------------------------------------------

def reference_generate_proposals(params: ProposalParams, inputs: list[TensorInfo],
                                 outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    scores, deltas = float_values(inputs[0]), float_values(inputs[1])
    if p.nchw:
        scores, deltas = scores.transpose(0, 2, 3, 1), deltas.transpose(0, 2, 3, 1)
    b, h, w, a = scores.shape
    anchors = float_values(inputs[2]).reshape(a, 4)
    image = float_values(inputs[3]).reshape(b, 2)
    hs = np.arange(h, dtype=np.float32) * np.float32(p.height_stride)
    ws = np.arange(w, dtype=np.float32) * np.float32(p.width_stride)
    shift = np.stack(np.broadcast_arrays(ws[None, :, None], hs[:, None, None], ws[None, :, None],
                                         hs[:, None, None]), axis=-1)
    rois = (anchors[None, None] + shift).astype(np.float32).reshape(-1, 4)   # (h, w, a) order
    out_scores, out_rois, out_batches = [], [], []
    for n in range(b):
        _check_ordered(rois, "GENERATE_PROPOSALS")
        height, width = image[n]
        count = len(rois)
        boxes = transform_boxes(rois, deltas[n].reshape(count, 1, 4), np.full(count, height),
                                np.full(count, width))[:, 0]
        sc = scores[n].reshape(-1)
        select = list(range(count))
        if 0 < p.pre_nms_top_n < count:
            select = sorted_by_score(select, sc)[:p.pre_nms_top_n]
        bw, bh = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        two, min_size = np.float32(2.0), np.float32(p.min_size)
        ok = (bw > min_size) & (bh > min_size) & (boxes[:, 0] + bw / two < width) & (boxes[:, 1] + bh / two < height)
        select = [i for i in select if ok[i]]
        kept = nms(sc, select, p.post_nms_top_n, hard_keep(boxes, p.iou_threshold))
        out_scores.append(sc[kept])
        out_rois.append(boxes[kept])
        out_batches.append(np.full(len(kept), n, np.int32))
    return [stored_values(np.concatenate(out_scores), outputs[0]), stored_values(np.concatenate(out_rois).reshape(-1, 4), outputs[1]),
            np.concatenate(out_batches).astype(np.int32)]


def _dequant_defines(prefix: str, info: TensorInfo) -> dict:
    """{prefix}QUANT / _ZP / _SCALE: how a kernel reads ``info`` as float ((q − zp)·scale when quantized)."""
    return {f"{prefix}QUANT": int(info.is_quantized), f"{prefix}ZP": info.zero_point,
            f"{prefix}SCALE": fdef(info.scale)}


def _requant_defines(prefix: str, info: TensorInfo) -> dict:
    """{prefix}SCALE / _ZP / _MIN / _MAX: how a kernel stores a float into the quantized ``info``."""
    lo, hi = info.qrange if info.is_quantized else (0, 0)
    return {f"{prefix}SCALE": fdef(info.scale or 1.0), f"{prefix}ZP": info.zero_point, f"{prefix}MIN": lo,
            f"{prefix}MAX": hi}


def generate_proposals_launch(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DataDependentKernel | None:
    """The accelerator's launch (proposals.cl, one work item): every operand type, constant scalars."""
    if any(inputs[i].value is None for i in range(4, 11)) or inputs[0].shape is None or len(inputs[0].shape) != 4:
        return None
    scores, deltas, anchors, image = inputs[:4]
    nchw = bool(inputs[10].value)
    sd = tuple(int(v) for v in scores.shape)
    b, h, w, a = (sd[0], sd[2], sd[3], sd[1]) if nchw else sd
    n = h * w * a
    if nchw:
        strides = {"SN": a * h * w, "SY": w, "SX": 1, "SA": h * w, "SN4": 4 * a * h * w, "SY4": w, "SX4": 1, "SA4": h * w}
    else:
        strides = {"SN": h * w * a, "SY": w * a, "SX": a, "SA": 1, "SN4": h * w * 4 * a, "SY4": w * 4 * a, "SX4": 4 * a,
                   "SA4": 1}
    d = {"T": ctype(scores), "TD": ctype(deltas), "TA": ctype(anchors), "TI": ctype(image), "TB": ctype(outputs[1]),
         **float_io(scores), **float_io(deltas, "D_"), **float_io(anchors, "A_"), **float_io(image, "I_"),
         **float_io(outputs[1], "B_"), **_dequant_defines("S_", scores), **_dequant_defines("D_", deltas),
         **_dequant_defines("A_", anchors), **_dequant_defines("I_", image), **_requant_defines("O_", outputs[0]),
         **_requant_defines("OB_", outputs[1]), "B_QUANT": int(outputs[1].is_quantized), "B": b, "H": h, "W": w,
         "A": a, **strides, "HS": fdef(inputs[4].value), "WS": fdef(inputs[5].value), "PRE_TOP": int(inputs[6].value),
         "POST_TOP": int(inputs[7].value), "IOU_THR": fdef(inputs[8].value), "MIN_SIZE": fdef(inputs[9].value)}
    size = lambda info: OPERAND_TYPE_INFO[info.type].byte_size  # noqa: E731
    rows = b * n
    return DataDependentKernel("proposals.cl", d, [0, 1, 2, 3], [16 * n, 4 * n, 4 * n, 4 * n, 4 * n],
                               [rows * size(outputs[0]), 4 * rows * size(outputs[1]), 4 * rows],
                               lambda c: [(c,), (c, 4), (c,)], "GENERATE_PROPOSALS: an anchor has x1 > x2 or y1 > y2")


@operation(OperationType.GENERATE_PROPOSALS, signature=GENERATE_PROPOSALS_SIGNATURE,
           reference=reference_generate_proposals, data_dependent=generate_proposals_launch)
def generate_proposals(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ProposalParams:
    name = "GENERATE_PROPOSALS"
    nchw = bool(inputs[10].scalar())
    sd, dd, ad, idim = (t.dims() for t in inputs[:4])
    b, h, w, a = (sd[0], sd[2], sd[3], sd[1]) if nchw else sd
    want_deltas = (b, 4 * a, h, w) if nchw else (b, h, w, 4 * a)
    require(dd == want_deltas, name, f"deltas must be {list(want_deltas)}, got {list(dd)}")
    require(ad == (a, 4), name, f"anchors must be [{a}, 4], got {list(ad)}")
    require(idim == (b, 2), name, f"image info must be [{b}, 2], got {list(idim)}")
    require_nonempty(tuple(sd), name)
    params = ProposalParams(output_shapes=[], height_stride=inputs[4].scalar(), width_stride=inputs[5].scalar(),
                            pre_nms_top_n=inputs[6].scalar(), post_nms_top_n=inputs[7].scalar(),
                            iou_threshold=inputs[8].scalar(), min_size=inputs[9].scalar(), nchw=nchw)
    _needs_data(inputs, range(4))
    return params


# ---- DETECTION_POSTPROCESSING ------------------------------------------------------------------------

def decode_anchors(deltas: np.ndarray, anchors: np.ndarray, scales) -> np.ndarray:
    """Boxes (y1, x1, y2, x2) [A, 4] from deltas [A, ≥4] (dy, dx, dh, dw) and anchors [A, 4]
    (ctr_y, ctr_x, h, w), fp32 in AOSP's order."""
    sy, sx, sh, sw = (np.float32(s) for s in scales)
    half = np.float32(0.5)
    with np.errstate(all="ignore"):
        yc = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / sy
        xc = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / sx
        hh = anchors[:, 2] * np.exp(deltas[:, 2] / sh) * half
        wh = anchors[:, 3] * np.exp(deltas[:, 3] / sw) * half
        return np.stack([yc - hh, xc - wh, yc + hh, xc + wh], axis=-1).astype(np.float32)


def _first_max(row: np.ndarray) -> np.float32:
    """std::max_element's value: the first maximum, a NaN first element winning."""
    if np.isnan(row[0]):
        return row[0]
    return np.float32(np.max(np.where(np.isnan(row), -np.inf, row)))


def reference_detection_postprocessing(params: PostprocessParams, inputs: list[TensorInfo],
                                       outputs: list[TensorInfo]) -> list[np.ndarray]:
    p = params
    k, slots = p.classes, p.slots
    scores = float_values(inputs[0]).reshape(p.batches, p.anchors * k)
    deltas = float_values(inputs[1]).reshape(p.batches, p.anchors, p.box_length)
    anchors = float_values(inputs[2]).reshape(p.anchors, 4)
    out_scores = np.zeros((p.batches, slots), np.float32)
    out_boxes = np.zeros((p.batches, slots, 4), np.float32)
    out_classes = np.zeros((p.batches, slots), np.int32)
    counts = np.zeros(p.batches, np.int32)
    label_offset = 0 if p.background_in_label else 1
    for n in range(p.batches):
        boxes = decode_anchors(deltas[n], anchors, p.scales)
        sc = scores[n]
        rows = []  # (score, anchor, class)
        if p.regular:
            per_anchor = np.repeat(boxes, k, axis=0)
            select: list[int] = []
            for c in range(1, k):
                candidates = [a * k + c for a in range(p.anchors) if sc[a * k + c] > np.float32(p.score_threshold)]
                select += nms(sc, candidates, p.max_detections_per_class, hard_keep(per_anchor, p.iou_threshold))
            select = sorted_by_score(select, sc)[:p.max_detections]
            rows = [(sc[i], i // k, i % k) for i in select]
        else:
            per_class = min(k - 1, p.max_classes_per_detection)
            best = np.asarray([_first_max(sc[a * k + 1:(a + 1) * k]) for a in range(p.anchors)], np.float32)
            candidates = [a for a in range(p.anchors) if best[a] > np.float32(p.score_threshold)]
            for a in nms(best, candidates, p.max_detections, hard_keep(boxes, p.iou_threshold)):
                row = sc[a * k:(a + 1) * k]
                for c in sorted_by_score(list(range(1, k)), row)[:per_class]:
                    rows.append((row[c], a, c))
        for i, (score, a, c) in enumerate(rows):
            out_scores[n, i], out_boxes[n, i], out_classes[n, i] = score, boxes[a], c - label_offset
        counts[n] = len(rows)
    return [stored_values(out_scores, outputs[0]), stored_values(out_boxes, outputs[1]), out_classes, counts]


def supports_postprocessing(ctx: LoweringContext) -> bool:
    return params_ok(ctx) and trailing_scalars_constant(ctx, 3) and known(*ctx.inputs[:3], *ctx.outputs)


def lower_postprocessing(ctx: LoweringContext) -> None:
    """detection.cl OP 1 decodes every anchor (one work item each) into fp32 scratch boxes; OP 2 selects
    and writes the detections, one work item per batch, with scratch candidate lists (and, for fast
    NMS, each anchor's best class score)."""
    p = ctx.params
    x = ctx.inputs[0]
    candidates = p.anchors * (p.classes if p.regular else 1)
    d = dict(_LITERALS, T=ctype(x), BATCHES=p.batches, A=p.anchors, K=p.classes, L=p.box_length,
             SY=p.scales[0], SX=p.scales[1], SH=p.scales[2], SW=p.scales[3], REGULAR=int(p.regular),
             MAX_DET=p.max_detections, MAX_CLASSES=min(p.classes - 1, p.max_classes_per_detection),
             MAX_PER_CLASS=p.max_detections_per_class, SCORE_THR=float(np.float32(p.score_threshold)),
             IOU_THR=float(np.float32(p.iou_threshold)), LABEL_OFFSET=0 if p.background_in_label else 1,
             SLOTS=p.slots, CANDIDATES=candidates, **float_io(x))
    boxes = ctx.scratch(np.float32, p.batches * p.anchors * 4)
    ctx.emit("detection.cl", dict(d, OP=1, COUNT=p.batches * p.anchors), [ctx.input(1), ctx.input(2)], [boxes],
             (p.batches * p.anchors,), Work.ELEMENTS)
    select = ctx.scratch(np.int32, p.batches * candidates)
    best = ctx.scratch(np.float32, p.batches * p.anchors)
    outs = [ctx.output(0), ctx.output(1), ctx.output(2), ctx.output(3), select, best]
    ctx.emit("detection.cl", dict(d, OP=2, COUNT=p.batches), [ctx.input(0), boxes], outs, (p.batches,), Work.ROWS)


@operation(OperationType.DETECTION_POSTPROCESSING, signature=DETECTION_POSTPROCESSING_SIGNATURE,
           reference=reference_detection_postprocessing, lower=lower_postprocessing, supports=supports_postprocessing)
def detection_postprocessing(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> PostprocessParams:
    name = "DETECTION_POSTPROCESSING"
    sd, dd, ad = (t.dims() for t in inputs[:3])
    b, a, k = sd
    require(k > 1, name, f"scores must have more than one class, got {list(sd)}")
    require(dd[:2] == (b, a) and dd[2] >= 4, name, f"deltas must be [{b}, {a}, ≥ 4], got {list(dd)}")
    require(ad == (a, 4), name, f"anchors must be [{a}, 4], got {list(ad)}")
    require_nonempty(tuple(sd), name)
    scales = tuple(inputs[i].scalar() for i in range(3, 7))
    require(all(s > 0 for s in scales), name, f"box scales must be > 0, got {list(scales)}")
    regular = bool(inputs[7].scalar())
    max_det, max_classes, per_class = (inputs[i].scalar() for i in (8, 9, 10))
    score_thr, iou_thr = inputs[11].scalar(), inputs[12].scalar()
    require(score_thr >= 0 and iou_thr >= 0, name, f"thresholds must be ≥ 0, got {score_thr}, {iou_thr}")
    require(max_det > 0, name, f"max_num_detections must be > 0, got {max_det}")
    if regular:
        require(per_class > 0, name, f"max_detections_per_class must be > 0, got {per_class}")
    else:
        require(max_classes > 0, name, f"max_classes_per_detection must be > 0, got {max_classes}")
    slots = max_det if regular else max_det * max_classes
    return PostprocessParams(output_shapes=[(b, slots), (b, slots, 4), (b, slots), (b,)], batches=b, anchors=a,
                             classes=k, box_length=dd[2], scales=scales, regular=regular, max_detections=max_det,
                             max_classes_per_detection=max_classes, max_detections_per_class=per_class,
                             score_threshold=score_thr, iou_threshold=iou_thr,
                             background_in_label=bool(inputs[13].scalar()), slots=slots)
