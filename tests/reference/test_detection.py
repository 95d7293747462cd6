"""AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and DETECTION_POSTPROCESSING
on the reference device: hand-worked values (hard / linear / gaussian NMS), AOSP examples
(generate_proposals.mod.py and detection_postprocess.mod.py TEST 1), zero-sized inputs and
outputs, execution failures and invalid instances."""
from __future__ import annotations

import math

import numpy as np

from gpu_driver import ErrorStatus, OperandType as T, OperationType as O

from .single_op import BOOL, Const, In, Out, boolean, expect_status, f32, i32, run_executor, run_op

F32, F16, Q8A, Q8AS, Q16A, Q16S, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                                        T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM,
                                        T.TENSOR_QUANT16_SYMM, T.TENSOR_INT32)
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE


def transform(rois, deltas, batches, image, t=F32, delta_quant=(0.0, 0)):
    rois, deltas, image = np.asarray(rois), np.asarray(deltas), np.asarray(image)
    bq = (0.125, 0) if t == Q16A else (0.0, 0)
    dt = Q8A if t == Q16A else t
    ins = [In(t, list(rois.shape), *bq), In(dt, list(deltas.shape), *delta_quant), In(I32, [len(batches)]),
           In(t, list(image.shape), *bq)]
    return run_op(O.AXIS_ALIGNED_BBOX_TRANSFORM, ins, [Out(t, [], *bq)],
                  [rois, deltas, np.asarray(batches, np.int32), image])[0]


def test_transform_hand_worked():
    rois = np.array([[0, 0, 10, 10], [2, 2, 4, 6]], np.float32)
    deltas = np.array([[0, 0, 0, 0, 0.1, -0.2, math.log(2), 0],
                       [0, 0, 0, 0, 0, 0, math.log(0.5), math.log(2)]], np.float32)
    r = transform(rois, deltas, [0, 0], [[8, 20]])
    # class 0 unchanged but clipped to the image height 8; class 1: centre (6, 3), size (20, 10)
    # → (−4, −2, 16, 8) clipped to (0, 0, 16, 8); roi 1 class 1: centre (3, 4), size (1, 8)
    want = [[0, 0, 10, 8, 0, 0, 16, 8], [2, 2, 4, 6, 2.5, 0, 3.5, 8]]
    np.testing.assert_allclose(r, want, rtol=1e-6, atol=1e-6)
    # TENSOR_QUANT16_ASYMM boxes and image in eighths, deltas (0.1, 128)
    q = transform((rois * 8).astype(np.uint16), np.round(deltas / 0.1 + 128).astype(np.uint8), [0, 0],
                  (np.array([[8, 20]]) * 8).astype(np.uint16), Q16A, (0.1, 128))
    assert q.dtype == np.uint16 and np.abs(q / 8.0 - want).max() <= 0.5


def test_transform_zero_rois_and_failures():
    ins = [In(F32, [0, 4]), In(F32, [0, 8]), In(I32, [0]), In(F32, [1, 2])]
    feeds = [np.zeros((0, 4), np.float32), np.zeros((0, 8), np.float32), np.zeros(0, np.int32),
             np.array([[8, 8]], np.float32)]
    r = run_executor(O.AXIS_ALIGNED_BBOX_TRANSFORM, ins, [Out(F32, [0, 8])], feeds)[0]
    assert r.shape == (0, 8)
    expect_status(FAILURE, transform, [[0, 0, 1, 1]], [[0, 0, 0, 0]], [1], [[8, 8]])   # batch index
    expect_status(FAILURE, transform, [[2, 0, 1, 1]], [[0, 0, 0, 0]], [0], [[8, 8]])   # x1 > x2
    expect_status(INVALID, transform, [[0, 0, 1, 1]], [[0, 0, 0]], [0], [[8, 8]])      # deltas not 4·K


# three boxes of class 1 (class 0 is background): IoU(b0, b1) = 81/119, b2 apart
NMS_SCORES = np.array([[0.1, 0.9], [0.1, 0.8], [0.1, 0.7]], np.float32)
NMS_BOXES = np.array([[0, 0, 1, 1, 0, 0, 10, 10], [0, 0, 1, 1, 1, 1, 11, 11], [0, 0, 1, 1, 20, 20, 30, 30]],
                     np.float32)


def nms(scores, boxes, batches, kernel=0, max_det=-1, iou=0.5, sigma=0.5, nms_thr=0.1, score_thr=0.3, t=F32):
    scores, boxes = np.asarray(scores), np.asarray(boxes)
    q = (0.01, 0) if t in (Q8A, Q8AS) else (0.0, 0)
    bt, bq = (Q16A, (0.125, 0)) if t in (Q8A, Q8AS) else (t, (0.0, 0))
    sc = (lambda v: Const(T.FLOAT16, v)) if t == F16 else f32
    ins = [In(t, list(scores.shape), *q), In(bt, list(boxes.shape), *bq), In(I32, [len(batches)]), sc(score_thr),
           i32(max_det), i32(kernel), sc(iou), sc(sigma), sc(nms_thr)]
    outs = [Out(t, [0], *q), Out(bt, [0, 4], *bq), Out(I32, [0]), Out(I32, [0])]
    return run_executor(O.BOX_WITH_NMS_LIMIT, ins, outs, [scores, boxes, np.asarray(batches, np.int32)])


def test_nms_hard_linear_gaussian():
    iou = 81 / 119
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 0])
    np.testing.assert_allclose(s, [0.9, 0.7])
    np.testing.assert_array_equal(b, [[0, 0, 10, 10], [20, 20, 30, 30]])
    assert c.tolist() == [1, 1] and n.tolist() == [0, 0]
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 0], kernel=1)
    np.testing.assert_allclose(s, [0.9, 0.7, 0.8 * (1 - iou)], rtol=1e-5)
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 0], kernel=2)
    np.testing.assert_allclose(s, [0.9, 0.7, 0.8 * math.exp(-iou * iou / 0.5)], rtol=1e-5)
    # max_detections 1; two images (batch runs) are processed separately
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 0], kernel=1, max_det=1)
    np.testing.assert_allclose(s, [0.9])
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 3])
    np.testing.assert_allclose(s, [0.9, 0.7])
    assert n.tolist() == [0, 3]


def test_nms_classes_order_and_types():
    # two classes: outputs ordered by class, then by score
    scores = np.array([[0, 0.5, 0.9], [0, 0.8, 0.4]], np.float32)
    boxes = np.array([[0, 0, 1, 1, 0, 0, 4, 4, 10, 10, 14, 14], [0, 0, 1, 1, 20, 20, 24, 24, 30, 30, 34, 34]],
                     np.float32)
    s, b, c, n = nms(scores, boxes, [0, 0])
    np.testing.assert_allclose(s, [0.8, 0.5, 0.9, 0.4])
    assert c.tolist() == [1, 1, 2, 2]
    np.testing.assert_array_equal(b, [[20, 20, 24, 24], [0, 0, 4, 4], [10, 10, 14, 14], [30, 30, 34, 34]])
    sq, bq, cq, nq = nms(np.round(scores / 0.01).astype(np.uint8), (boxes * 8).astype(np.uint16), [0, 0], t=Q8A)
    assert sq.tolist() == [80, 50, 90, 40] and bq.dtype == np.uint16 and cq.tolist() == [1, 1, 2, 2]
    s16, b16, c16, _ = nms(scores.astype(np.float16), boxes.astype(np.float16), [0, 0], t=F16)
    assert s16.dtype == np.float16 and c16.tolist() == [1, 1, 2, 2]


def test_nms_zero_sized_and_invalid():
    s, b, c, n = nms(np.zeros((0, 2), np.float32), np.zeros((0, 8), np.float32), [])
    assert s.shape == (0,) and b.shape == (0, 4) and c.shape == (0,) and n.shape == (0,)
    s, b, c, n = nms(NMS_SCORES, NMS_BOXES, [0, 0, 0], score_thr=0.95)        # nothing above the threshold
    assert s.shape == (0,) and b.shape == (0, 4)
    expect_status(FAILURE, nms, NMS_SCORES, NMS_BOXES, [0, 0, 0], kernel=3)
    expect_status(FAILURE, nms, NMS_SCORES, np.where(NMS_BOXES == 1, -1, NMS_BOXES), [0, 0, 0])   # x1 > x2
    expect_status(INVALID, nms, NMS_SCORES[:, 1:], NMS_BOXES[:, 4:], [0, 0, 0])                # one class


def proposals(scores, deltas, anchors, image, pre=-1, post=-1, iou=0.3, min_size=1.0, nchw=False, t=F32):
    scores, deltas, anchors, image = (np.asarray(v) for v in (scores, deltas, anchors, image))
    quant = t in (Q8A, Q8AS)
    ins = [In(t, list(scores.shape), *((0.01, 100) if quant else (0.0, 0))),
           In(t, list(deltas.shape), *((0.05, 128) if quant else (0.0, 0))),
           In(Q16S if quant else t, list(anchors.shape), 0.125 if quant else 0.0),
           In(Q16A if quant else t, list(image.shape), 0.125 if quant else 0.0),
           f32(4.0), f32(4.0), i32(pre), i32(post), f32(iou), f32(min_size), boolean(nchw)]
    outs = [Out(t, [0], *((0.01, 100) if quant else (0.0, 0))), Out(Q16A if quant else t, [0, 4],
                                                                     0.125 if quant else 0.0), Out(I32, [0])]
    return run_executor(O.GENERATE_PROPOSALS, ins, outs, [scores, deltas, anchors, image])


# generate_proposals.mod.py TEST 1
GP_SCORES = np.array([0.8, 0.9, 0.85, 0.85, 0.75, 0.8, 0.9, 0.95], np.float32).reshape(1, 2, 2, 2)
GP_DELTAS = np.array([0.5, 0.1, 0.1, 0.1, 0.5, 0.1, 0.5, 0.1, -0.25, 0.1, -0.1, -0.1, -0.25, 0.1, 0.2, 0.1,
                      0.4, -0.1, -0.2, 0.2, 0.4, -0.1, -0.2, 0.2, -0.2, -0.2, 0.2, 0.2, -0.2, -0.2, 0.2, 0.2],
                     np.float32).reshape(1, 2, 2, 8)
GP_ANCHORS = np.array([[0, 1, 4, 3], [1, 0, 3, 4]], np.float32)
GP_OUT = np.array([[4.3785973, 2.7571943, 6.8214025, 7.642805], [1.3512788, 0.18965816, 4.648721, 4.610342],
                   [3.1903253, 1.2951627, 6.8096747, 3.1048374], [1.9812691, 3.1571944, 3.6187308, 8.042806]])


def test_generate_proposals_aosp_example():
    s, r, b = proposals(GP_SCORES, GP_DELTAS, GP_ANCHORS, [[32, 32]])
    np.testing.assert_allclose(s, [0.95, 0.9, 0.85, 0.8], rtol=1e-6)
    np.testing.assert_allclose(r, GP_OUT, rtol=1e-5)
    assert b.tolist() == [0, 0, 0, 0]
    s, r, b = proposals(GP_SCORES.transpose(0, 3, 1, 2), GP_DELTAS.transpose(0, 3, 1, 2), GP_ANCHORS, [[32, 32]],
                        nchw=True)
    np.testing.assert_allclose(r, GP_OUT, rtol=1e-5)
    # pre_nms_top_n 2 keeps the two best scores (0.95, 0.9); post_nms_top_n 0 gives no output
    s, r, b = proposals(GP_SCORES, GP_DELTAS, GP_ANCHORS, [[32, 32]], pre=2)
    np.testing.assert_allclose(s, [0.95, 0.9], rtol=1e-6)
    s, r, b = proposals(GP_SCORES, GP_DELTAS, GP_ANCHORS, [[32, 32]], post=0)
    assert s.shape == (0,) and r.shape == (0, 4)
    # quantized: scores (0.01, 100), deltas (0.05, 128), anchors / image in eighths
    s, r, b = proposals(np.round(GP_SCORES / 0.01 + 100).astype(np.uint8),
                        np.round(GP_DELTAS / 0.05 + 128).astype(np.uint8), (GP_ANCHORS * 8).astype(np.int16),
                        np.array([[256, 256]], np.uint16), t=Q8A)
    assert s.tolist() == [195, 190, 185, 180]
    assert np.abs(r / 8.0 - GP_OUT).max() <= 0.0625 + 1e-6


def test_generate_proposals_invalid():
    expect_status(INVALID, proposals, GP_SCORES, GP_DELTAS[..., :4], GP_ANCHORS, [[32, 32]])
    expect_status(INVALID, proposals, GP_SCORES, GP_DELTAS, GP_ANCHORS[:1], [[32, 32]])


def postprocess(scores, deltas, anchors, regular, max_det=3, max_classes=1, per_class=1, score_thr=0.0, iou=0.5,
                bg=False, t=F32):
    scores, deltas, anchors = (np.asarray(v) for v in (scores, deltas, anchors))
    sc = (lambda v: Const(T.FLOAT16, v)) if t == F16 else f32
    ins = [In(t, list(scores.shape)), In(t, list(deltas.shape)), In(t, list(anchors.shape)), sc(10.0), sc(10.0),
           sc(5.0), sc(5.0), boolean(regular), i32(max_det), i32(max_classes), i32(per_class), sc(score_thr), sc(iou),
           boolean(bg)]
    outs = [Out(t, []), Out(t, []), Out(I32, []), Out(I32, [])]
    return run_op(O.DETECTION_POSTPROCESSING, ins, outs, [scores, deltas, anchors])


# detection_postprocess.mod.py TEST 1 (regular) and TEST 2 (fast)
DP_SCORES = np.array([0, .9, .8, 0, .75, .72, 0, .6, .5, 0, .93, .95, 0, .5, .4, 0, .3, .2], np.float32).reshape(1, 6, 3)
DP_DELTAS = np.array([0, 0, 0, 0, 0, 1, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
                     np.float32).reshape(1, 6, 4)
DP_ANCHORS = np.array([[0.5, 0.5, 1, 1]] * 3 + [[0.5, 10.5, 1, 1]] * 2 + [[0.5, 100.5, 1, 1]], np.float32)


def test_detection_postprocessing_regular_and_fast():
    s, b, c, n = postprocess(DP_SCORES, DP_DELTAS, DP_ANCHORS, True)
    np.testing.assert_allclose(s, [[0.95, 0.93, 0]], rtol=1e-6)
    np.testing.assert_allclose(b, [[[0, 10, 1, 11], [0, 10, 1, 11], [0, 0, 0, 0]]], atol=1e-5)
    assert c.tolist() == [[1, 0, 0]] and n.tolist() == [2]
    s, b, c, n = postprocess(DP_SCORES, DP_DELTAS, DP_ANCHORS, False)
    np.testing.assert_allclose(s, [[0.95, 0.9, 0.3]], rtol=1e-6)
    np.testing.assert_allclose(b, [[[0, 10, 1, 11], [0, 0, 1, 1], [0, 100, 1, 101]]], atol=1e-5)
    assert c.tolist() == [[1, 0, 0]] and n.tolist() == [3]
    # fast with two classes per detection: D = 6 slots; background in the label keeps class indices
    s, b, c, n = postprocess(DP_SCORES, DP_DELTAS, DP_ANCHORS, False, max_classes=2, bg=True)
    assert s.shape == (1, 6) and n.tolist() == [6]
    np.testing.assert_allclose(s, [[0.95, 0.93, 0.9, 0.8, 0.3, 0.2]], rtol=1e-6)
    assert c.tolist() == [[2, 1, 1, 2, 1, 2]]
    s16, _, c16, n16 = postprocess(DP_SCORES.astype(np.float16), DP_DELTAS.astype(np.float16),
                                   DP_ANCHORS.astype(np.float16), True, t=F16)
    assert s16.dtype == np.float16 and c16.tolist() == [[1, 0, 0]] and n16.tolist() == [2]


def test_detection_postprocessing_invalid():
    expect_status(INVALID, postprocess, DP_SCORES, DP_DELTAS, DP_ANCHORS, True, max_det=0)
    expect_status(INVALID, postprocess, DP_SCORES, DP_DELTAS, DP_ANCHORS, True, per_class=0)
    expect_status(INVALID, postprocess, DP_SCORES, DP_DELTAS, DP_ANCHORS, False, max_classes=0)
    expect_status(INVALID, postprocess, DP_SCORES[..., :1], DP_DELTAS, DP_ANCHORS, True)
    expect_status(INVALID, postprocess, DP_SCORES, DP_DELTAS[..., :3], DP_ANCHORS, True)
