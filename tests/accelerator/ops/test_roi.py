"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT on each accelerator device vs the reference: every
type, NHWC and NCHW, fixed and adaptive sampling, several batches; a bad box fails on both devices.
Float and quantized results agree exactly in these cases (fp16 within its tolerance)."""
import numpy as np
import pytest

from gpu_driver import DriverError, ErrorStatus

from .harness import check_op, run_model
from .models import F32, OP, OT, Q8A, In, Out, Scalar, i32, random_data, single_op

F16, Q8AS, Q16A, I32 = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_INT32
TYPES = [F32, F16, Q8A, Q8AS]


def _quant(t, zp=3):
    return (0.1, zp if t == Q8A else -zp) if t in (Q8A, Q8AS) else ()


def _box_type(t):
    return Q16A if t in (Q8A, Q8AS) else t


def _boxes(rng, count, height, width, t):
    """Valid (x1, y1, x2, y2) boxes inside a height × width image, stored as type ``t``'s boxes."""
    xs = np.sort(rng.uniform(0, 0.95 * width, (count, 2)), axis=1)
    ys = np.sort(rng.uniform(0, 0.95 * height, (count, 2)), axis=1)
    b = np.stack([xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]], axis=1)
    bt = _box_type(t)
    if bt == Q16A:
        return np.floor(b * 8).astype(np.uint16)
    return b.astype(np.float16 if bt == F16 else np.float32)


def _scalar(t, v):
    return Scalar(OT.FLOAT16 if t == F16 else OT.FLOAT32, v)


def _roi_case(op, t, nchw, sampling, rng, batches=2, shape=(5, 6, 3), rois=4, out_hw=(2, 3), strides=(2.0, 1.5)):
    h, w, c = shape
    xshape = (batches, c, h, w) if nchw else (batches, h, w, c)
    bt = _box_type(t)
    args = [In(t, xshape, *_quant(t)), In(bt, (rois, 4), *((0.125, 0) if bt == Q16A else ())), In(I32, (rois,)),
            i32(out_hw[0]), i32(out_hw[1]), _scalar(t, strides[0]), _scalar(t, strides[1])]
    if op == OP.ROI_ALIGN:
        args += [i32(sampling[0]), i32(sampling[1])]
    args.append(Scalar(OT.BOOL, nchw))
    out = Out(t, *(_quant(t, 7) if op == OP.ROI_ALIGN else _quant(t)))
    data = [random_data(args[0], rng), _boxes(rng, rois, h * strides[0], w * strides[1], t),
            rng.integers(0, batches, rois).astype(np.int32)]
    return args, [out], data


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("nchw,sampling", [(False, (2, 2)), (True, (0, 0)), (False, (1, 3))])
def test_roi_align(accelerator, t, nchw, sampling):
    rng = np.random.default_rng(41)
    args, outs, data = _roi_case(OP.ROI_ALIGN, t, nchw, sampling, rng)
    tol = dict(atol=1e-2, rtol=1e-2) if t == F16 else {}
    check_op(accelerator, OP.ROI_ALIGN, args, outs, data=data, **tol)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_roi_pooling(accelerator, t, nchw):
    rng = np.random.default_rng(42)
    args, outs, data = _roi_case(OP.ROI_POOLING, t, nchw, None, rng, out_hw=(3, 2))
    check_op(accelerator, OP.ROI_POOLING, args, outs, data=data)


@pytest.mark.parametrize("op", [OP.ROI_ALIGN, OP.ROI_POOLING])
def test_roi_bad_box_fails(accelerator, op):
    rng = np.random.default_rng(43)
    args, outs, data = _roi_case(op, F32, False, (2, 2), rng)
    data[1][1] = [3.0, 1.0, 2.0, 4.0]   # x1 > x2
    model, _ = single_op(op, args, outs)
    assert all(accelerator.get_supported_operations(model))
    with pytest.raises(DriverError) as info:
        run_model(accelerator, model, data)
    assert info.value.status == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_heatmap_max_keypoint(accelerator, t, nchw):
    rng = np.random.default_rng(44)
    r, s, k = 3, 5, 4
    bt = _box_type(t)
    args = [In(t, (r, k, s, s) if nchw else (r, s, s, k), *_quant(t)),
            In(bt, (r, 4), *((0.125, 0) if bt == Q16A else ())), Scalar(OT.BOOL, nchw)]
    outs = [Out(t, *_quant(t, 9)), Out(bt, *((0.125, 0) if bt == Q16A else ()))]
    data = [random_data(args[0], rng), _boxes(rng, r, 20, 30, t)]
    tol = dict(atol=5e-2, rtol=1e-2) if t == F16 else {}
    check_op(accelerator, OP.HEATMAP_MAX_KEYPOINT, args, outs, data=data, **tol)
