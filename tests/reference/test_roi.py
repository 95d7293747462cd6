"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT on the reference device: hand-worked values, an
AOSP example (roi_align.mod.py TEST 1), layouts and types, and invalid instances."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import F16S, BOOL, Const, In, Out, boolean, expect_status, f32, i32, run_executor, run_op

F32, F16, Q8A, Q8AS, Q16A = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                             T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM)
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE
MAP = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)    # v[y, x] = 4y + x


def _quant(t):
    """Quantization (scale, zero point) of a test tensor of type ``t``: real = 0.5·(q − 2) for Q8A."""
    return {Q8A: (0.5, 2), Q8AS: (0.5, -126)}.get(t, (0.0, 0))


def roi(op, x, boxes, batches, out_hw, strides=(1.0, 1.0), sampling=(1, 1), nchw=False, t=F32,
        out_quant=None, boxes_type=None):
    x, boxes = np.asarray(x), np.asarray(boxes)
    bt = boxes_type or (Q16A if t in (Q8A, Q8AS) else t)
    scalar = (lambda v: Const(F16S, v)) if t == F16 else f32
    ins = [In(t, list(x.shape), *_quant(t)), In(bt, list(boxes.shape), 0.125 if bt == Q16A else 0.0),
           In(T.TENSOR_INT32, [len(batches)]), i32(out_hw[0]), i32(out_hw[1]), scalar(strides[0]), scalar(strides[1])]
    if op == O.ROI_ALIGN:
        ins += [i32(sampling[0]), i32(sampling[1])]
    ins.append(boolean(nchw))
    out = Out(t, [], *(out_quant or _quant(t)))
    return run_op(op, ins, [out], [x, boxes, np.asarray(batches, np.int32)])[0]


def test_roi_align_hand_worked():
    # box (0, 0, 4, 4) → bins of 2, one sample at the centre (1 or 3); 3 is the last column/row
    r = roi(O.ROI_ALIGN, MAP, [[0, 0, 4, 4]], [0], (2, 2))
    np.testing.assert_allclose(r.reshape(2, 2), [[5, 7], [13, 15]])
    # stride 2: the same box covers (0, 0)–(2, 2); samples at 0.25 and 0.75 of 1-wide bins, 2×2 each
    r = roi(O.ROI_ALIGN, MAP, [[0, 0, 4, 4]], [0], (2, 2), strides=(2.0, 2.0), sampling=(2, 2))
    np.testing.assert_allclose(r.reshape(2, 2), [[2.5, 3.5], [6.5, 7.5]], rtol=1e-6)
    # a box narrower than 1 is widened to 1; adaptive sampling = ceil(bin) = 1
    r = roi(O.ROI_ALIGN, MAP, [[1, 1, 1, 1]], [0], (1, 1), sampling=(0, 0))
    np.testing.assert_allclose(r.ravel(), [7.5])    # sample (1.5, 1.5): mean of 5, 6, 9, 10


def test_roi_align_aosp_example_and_layouts():
    # roi_align.mod.py TEST 1 (NHWC [1, 4, 4, 1], strides 2, sampling 4)
    x = np.array([-10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5], np.float32).reshape(1, 4, 4, 1)
    boxes = np.array([[2, 2, 4, 4], [0, 0, 8, 8], [2, 0, 4, 8], [0, 2, 8, 4]], np.float32)
    want = np.array([0.375, 5.125, -0.375, 2.875, -0.5, -0.3125, 3.1875, 1.125, 0.25, 4.25,
                     4.875, 0.625, -0.1875, 1.125, 0.9375, -2.625], np.float32).reshape(4, 2, 2, 1)
    r = roi(O.ROI_ALIGN, x, boxes, [0] * 4, (2, 2), strides=(2.0, 2.0), sampling=(4, 4))
    np.testing.assert_allclose(r, want, atol=1e-5)
    r = roi(O.ROI_ALIGN, x.transpose(0, 3, 1, 2), boxes, [0] * 4, (2, 2), strides=(2.0, 2.0), sampling=(4, 4),
            nchw=True)
    np.testing.assert_allclose(r, want.transpose(0, 3, 1, 2), atol=1e-5)
    r16 = roi(O.ROI_ALIGN, x.astype(np.float16), boxes.astype(np.float16), [0] * 4, (2, 2), strides=(2.0, 2.0),
              sampling=(4, 4), t=F16)
    assert r16.dtype == np.float16
    np.testing.assert_allclose(r16.astype(np.float32), want, atol=1e-2)


@pytest.mark.parametrize("t", [Q8A, Q8AS])
def test_roi_align_quantized(t):
    # real values v = 0.5·(q − 2): the map 0..15 is q = 2v + 2; boxes in eighths
    offset = 0 if t == Q8A else -128
    q = (2 * MAP + 2 + offset).astype(np.uint8 if t == Q8A else np.int8)
    boxes = (np.array([[0, 0, 4, 4]]) * 8).astype(np.uint16)
    # output (0.25, 10): real 5 → 30; quantized weights 255 per sample, multiplier 0.5/255/0.25
    r = roi(O.ROI_ALIGN, q, boxes, [0], (2, 2), t=t, out_quant=(0.25, 10 + offset))
    assert r.reshape(-1).astype(int).tolist() == [v + offset for v in (30, 38, 62, 70)]


def test_roi_pooling_hand_worked():
    # box (0, 0, 3, 3): rounded bounds 0..3, width 4, bins [0, 2) and [2, 4)
    r = roi(O.ROI_POOLING, MAP, [[0, 0, 3, 3]], [0], (2, 2))
    np.testing.assert_allclose(r.reshape(2, 2), [[5, 7], [13, 15]])
    # stride 2: box (2, 2, 6, 6) → (1, 1)..(3, 3); 3 wide → bins of 1.5: [1, 3) and [2, 4)
    r = roi(O.ROI_POOLING, MAP, [[2, 2, 6, 6]], [0], (2, 2), strides=(2.0, 2.0))
    np.testing.assert_allclose(r.reshape(2, 2), [[10, 11], [14, 15]])
    # NaN first in a bin stays; later NaNs are skipped
    x = MAP.copy()
    x[0, 0, 0, 0], x[0, 2, 3, 0] = np.nan, np.nan
    r = roi(O.ROI_POOLING, x, [[0, 0, 3, 3]], [0], (2, 2)).reshape(2, 2)
    assert np.isnan(r[0, 0]) and r[1, 1] == 15 and r[0, 1] == 7
    # quantized: the stored values, output quantization = the input's; NCHW
    q = (MAP + 5).astype(np.uint8).transpose(0, 3, 1, 2)
    r = roi(O.ROI_POOLING, q, (np.array([[0, 0, 3, 3]]) * 8).astype(np.uint16), [0], (2, 2), nchw=True, t=Q8A)
    assert r.reshape(-1).tolist() == [10, 12, 18, 20]


def test_roi_batches_and_zero_boxes():
    x = np.concatenate([MAP, MAP + 100])
    r = roi(O.ROI_ALIGN, x, [[0, 0, 4, 4], [0, 0, 4, 4]], [1, 0], (1, 1), sampling=(2, 2))
    np.testing.assert_allclose(r.ravel(), [110, 10])    # samples at 1 and 3: (5 + 7 + 13 + 15)/4
    # zero boxes: ROI_ALIGN gives an empty output, ROI_POOLING fails
    ins = [In(F32, [1, 4, 4, 1]), In(F32, [0, 4]), In(T.TENSOR_INT32, [0]), i32(2), i32(2), f32(1.0), f32(1.0)]
    feeds = [MAP, np.zeros((0, 4), np.float32), np.zeros(0, np.int32)]
    r = run_executor(O.ROI_ALIGN, ins + [i32(1), i32(1), boolean(False)], [Out(F32, [0, 2, 2, 1])], feeds)[0]
    assert r.shape == (0, 2, 2, 1)
    expect_status(FAILURE, run_executor, O.ROI_POOLING, ins + [boolean(False)], [Out(F32, [0, 2, 2, 1])], feeds)


@pytest.mark.parametrize("op", [O.ROI_ALIGN, O.ROI_POOLING])
def test_roi_bad_data_fails(op):
    for boxes, batch in (([[0, 0, 4, 4]], 1), ([[-1, 0, 4, 4]], 0), ([[0, 0, 5, 4]], 0), ([[3, 0, 2, 4]], 0)):
        expect_status(FAILURE, roi, op, MAP, boxes, [batch], (2, 2))


def test_roi_invalid():
    expect_status(INVALID, roi, O.ROI_ALIGN, MAP, [[0, 0, 4, 4]], [0], (0, 2))
    expect_status(INVALID, roi, O.ROI_ALIGN, MAP, [[0, 0, 4, 4]], [0], (2, 2), strides=(0.0, 1.0))
    expect_status(INVALID, roi, O.ROI_ALIGN, MAP, [[0, 0, 4, 4]], [0], (2, 2), sampling=(-1, 1))
    expect_status(INVALID, roi, O.ROI_POOLING, MAP, [[0, 0, 4]], [0], (2, 2))
    # quantized map needs TENSOR_QUANT16_ASYMM boxes at (0.125, 0); a float map needs its own type
    q = MAP.astype(np.uint8)
    expect_status(INVALID, roi, O.ROI_ALIGN, q, [[0, 0, 4, 4]], [0], (2, 2), t=Q8A, boxes_type=F32)
    expect_status(INVALID, roi, O.ROI_POOLING, MAP, [[0, 0, 4, 4]], [0], (2, 2), boxes_type=F16)


def heatmap(maps, boxes, t=F32, nchw=False, score_quant=(0.0, 0)):
    maps, boxes = np.asarray(maps), np.asarray(boxes)
    bt = Q16A if t in (Q8A, Q8AS) else t
    ins = [In(t, list(maps.shape), *_quant(t)), In(bt, list(boxes.shape), 0.125 if bt == Q16A else 0.0),
           boolean(nchw)]
    outs = [Out(t, [], *score_quant), Out(bt, [], 0.125 if bt == Q16A else 0.0)]
    return run_op(O.HEATMAP_MAX_KEYPOINT, ins, outs, [maps, boxes])


def test_heatmap_hand_worked():
    # a symmetric peak at the centre of a 3×3 map: b = 0, δ = 0, score = the peak
    m = np.array([[1, 2, 1], [2, 5, 2], [1, 2, 1]], np.float32).reshape(1, 3, 3, 1)
    scores, points = heatmap(m, [[0, 0, 3, 6]])
    np.testing.assert_allclose(scores.ravel(), [5])
    np.testing.assert_allclose(points.ravel(), [1.5, 3.0])     # ((1 + 0.5)/3)·3, ((1 + 0.5)/3)·6
    # peak at a corner (0, 0) of a 2×2 map: mirrored grid, G = [[4, 3, 4], [3, 1, 3], [4, 3, 4]] with
    # 1 at the centre; b = 0 so δ = 0
    m = np.array([[1, 3], [3, 4]], np.float32)[::-1, ::-1].reshape(1, 2, 2, 1)
    m = np.array([[9, 3], [3, 4]], np.float32).reshape(1, 2, 2, 1)
    scores, points = heatmap(m, [[0, 0, 2, 2]])
    np.testing.assert_allclose(scores.ravel(), [9])
    np.testing.assert_allclose(points.ravel(), [0.5, 0.5])
    # an off-centre peak: G row 1 = [2, 4, 3], column 1 = [2, 4, 3] → b = (−0.5, −0.5),
    # A = diag(−3, −3) (corners 0) → δ = (1/6, 1/6), score = 4 + 1/12 + 1/12 − 1/12 − … = 4 + 1/12
    m = np.array([[0, 2, 0], [2, 4, 3], [0, 3, 0]], np.float32).reshape(1, 3, 3, 1)
    scores, points = heatmap(m, [[0, 0, 3, 3]])
    np.testing.assert_allclose(scores.ravel(), [4 + 1 / 12], rtol=1e-6)
    np.testing.assert_allclose(points.ravel(), [1.5 + 1 / 6, 1.5 + 1 / 6], rtol=1e-6)


def test_heatmap_layouts_and_types():
    rng = np.random.default_rng(3)
    maps = rng.normal(size=(2, 4, 4, 3)).astype(np.float32)
    boxes = np.array([[0, 0, 8, 8], [1, 2, 5, 9]], np.float32)
    s, p = heatmap(maps, boxes)
    s2, p2 = heatmap(maps.transpose(0, 3, 1, 2), boxes, nchw=True)
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(p, p2)
    s16, p16 = heatmap(maps.astype(np.float16), boxes.astype(np.float16), F16)
    np.testing.assert_allclose(s16.astype(np.float32), s, atol=2e-2, rtol=1e-2)
    np.testing.assert_allclose(p16.astype(np.float32), p, atol=2e-2, rtol=1e-2)
    for t in (Q8A, Q8AS):
        q = np.clip(np.round(maps / 0.5) + _quant(t)[1], -128 if t == Q8AS else 0,
                    127 if t == Q8AS else 255).astype(np.uint8 if t == Q8A else np.int8)
        sq, pq = heatmap(q, (boxes * 8).astype(np.uint16), t, score_quant=(0.25, 0))
        assert pq.dtype == np.uint16 and sq.shape == (2, 3)


def test_heatmap_invalid_and_failures():
    m = np.zeros((1, 3, 3, 1), np.float32)
    expect_status(FAILURE, heatmap, m, [[2, 0, 1, 3]])
    expect_status(INVALID, heatmap, np.zeros((1, 3, 4, 1), np.float32), [[0, 0, 1, 1]])   # not square
    expect_status(INVALID, heatmap, np.zeros((1, 1, 1, 1), np.float32), [[0, 0, 1, 1]])   # size < 2
    expect_status(INVALID, heatmap, m, [[0, 0, 1, 1], [0, 0, 1, 1]])                      # box count
