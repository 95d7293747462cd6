"""AXIS_ALIGNED_BBOX_TRANSFORM and DETECTION_POSTPROCESSING (regular and fast NMS) on each
accelerator device vs the reference, every type they allow; a bad batch index fails on both.
BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS (data-dependent output sizes) are reported unsupported."""
import numpy as np
import pytest

from gpu_driver import DriverError, ErrorStatus

from .harness import check_op, run_model
from .models import F32, OP, OT, Q8A, In, Out, Scalar, i32, random_data, single_op

F16, Q8AS, Q16A, I32 = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_INT32


def _transform_case(t, rng, rois=5, classes=3, batches=2):
    quant = t in (Q8A, Q8AS)
    bt = Q16A if quant else t
    bq = (0.125, 0) if quant else ()
    args = [In(bt, (rois, 4), *bq), In(t, (rois, 4 * classes), *((0.05, 4 if t == Q8A else -4) if quant else ())),
            In(I32, (rois,)), In(bt, (batches, 2), *bq)]
    xy = np.sort(rng.uniform(0, 40, (rois, 2, 2)), axis=1)          # [roi, (lo, hi), (x, y)]
    boxes = np.concatenate([xy[:, 0], xy[:, 1]], axis=1)
    image = rng.uniform(30, 50, (batches, 2))
    if quant:
        boxes, image = np.floor(boxes * 8).astype(np.uint16), np.floor(image * 8).astype(np.uint16)
    else:
        dtype = np.float16 if t == F16 else np.float32
        boxes, image = boxes.astype(dtype), image.astype(dtype)
    deltas = random_data(args[1], rng, -0.5, 0.5)
    return args, [Out(bt, *bq)], [boxes, deltas, rng.integers(0, batches, rois).astype(np.int32), image]


@pytest.mark.parametrize("t", [F32, F16, Q8A, Q8AS])
def test_axis_aligned_bbox_transform(accelerator, t):
    rng = np.random.default_rng(51)
    args, outs, data = _transform_case(t, rng)
    tol = dict(atol=5e-2, rtol=1e-2) if t == F16 else dict(atol=1e-4, rtol=1e-5)
    check_op(accelerator, OP.AXIS_ALIGNED_BBOX_TRANSFORM, args, outs, data=data, quant_tol=1, **tol)


def test_axis_aligned_bbox_transform_bad_batch(accelerator):
    rng = np.random.default_rng(52)
    args, outs, data = _transform_case(F32, rng)
    data[2][0] = 7
    model, _ = single_op(OP.AXIS_ALIGNED_BBOX_TRANSFORM, args, outs)
    with pytest.raises(DriverError) as info:
        run_model(accelerator, model, data)
    assert info.value.status == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("regular,max_classes,background", [(True, 1, False), (False, 2, False), (False, 1, True)])
def test_detection_postprocessing(accelerator, t, regular, max_classes, background):
    rng = np.random.default_rng(53)
    b, a, k = 2, 12, 4
    sc = (lambda v: Scalar(OT.FLOAT16 if t == F16 else OT.FLOAT32, v))
    args = [In(t, (b, a, k)), In(t, (b, a, 5)), In(t, (a, 4)), sc(10.0), sc(10.0), sc(5.0), sc(5.0),
            Scalar(OT.BOOL, regular), i32(5), i32(max_classes), i32(2), sc(0.3), sc(0.4), Scalar(OT.BOOL, background)]
    outs = [Out(t), Out(t), Out(I32), Out(I32)]
    dtype = np.float16 if t == F16 else np.float32
    anchors = np.concatenate([rng.uniform(0, 4, (a, 2)), rng.uniform(1, 3, (a, 2))], axis=1).astype(dtype)
    scores = rng.permutation(np.linspace(0, 1, b * a * k)).reshape(b, a, k).astype(dtype)  # no ties
    data = [scores, rng.uniform(-1, 1, (b, a, 5)).astype(dtype), anchors]
    tol = dict(atol=1e-2, rtol=1e-2) if t == F16 else {}
    check_op(accelerator, OP.DETECTION_POSTPROCESSING, args, outs, data=data, **tol)


def test_data_dependent_sizes_unsupported(accelerator):
    args = [In(F32, (3, 2)), In(F32, (3, 8)), In(I32, (3,)), Scalar(OT.FLOAT32, 0.3), i32(-1), i32(0),
            Scalar(OT.FLOAT32, 0.5), Scalar(OT.FLOAT32, 0.5), Scalar(OT.FLOAT32, 0.1)]
    model, _ = single_op(OP.BOX_WITH_NMS_LIMIT, args, [Out(F32, shape=(0,)), Out(F32, shape=(0, 4)),
                                                       Out(I32, shape=(0,)), Out(I32, shape=(0,))])
    assert accelerator.get_supported_operations(model) == [False]
