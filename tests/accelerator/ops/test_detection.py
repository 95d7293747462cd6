"""AXIS_ALIGNED_BBOX_TRANSFORM, DETECTION_POSTPROCESSING (regular and fast NMS), BOX_WITH_NMS_LIMIT
(hard, linear, gaussian) and GENERATE_PROPOSALS (both layouts) on each accelerator device vs the
reference, every type they allow; bad data fails on both.  The last two have data-dependent output
sizes: their tensors stay on the device, only each one's row count is read back."""
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


def _nms_case(t, rng, rois=7, classes=3, batches=(0, 0, 0, 1, 1, 1, 1)):
    quant = t in (Q8A, Q8AS)
    bt = Q16A if quant else t
    sq = (0.01, 3 if t == Q8A else -3) if quant else ()
    bq = (0.125, 0) if quant else ()
    xy = np.sort(rng.uniform(0, 30, (rois, classes, 2, 2)), axis=2)   # overlapping boxes, ordered corners
    boxes = np.concatenate([xy[:, :, 0], xy[:, :, 1]], axis=-1).reshape(rois, 4 * classes)
    if quant:
        scores = rng.integers(0 if t == Q8A else -128, 128 if t == Q8AS else 256, (rois, classes))
        scores, boxes = scores.astype(np.uint8 if t == Q8A else np.int8), np.floor(boxes * 8).astype(np.uint16)
    else:
        dtype = np.float16 if t == F16 else np.float32
        scores, boxes = rng.uniform(0, 1, (rois, classes)).astype(dtype), boxes.astype(dtype)
    f = OT.FLOAT16 if t == F16 else OT.FLOAT32
    data = [scores, boxes, np.asarray(batches, np.int32)]
    return [In(t, (rois, classes), *sq), In(bt, (rois, 4 * classes), *bq), In(I32, (rois,))], f, data, sq, bq


@pytest.mark.parametrize("t", [F32, F16, Q8A, Q8AS])
@pytest.mark.parametrize("kernel,max_det", [(0, -1), (1, 3), (2, 5)])
def test_box_with_nms_limit(accelerator, t, kernel, max_det):
    ins, f, data, sq, bq = _nms_case(t, np.random.default_rng(40 + kernel))
    bt = ins[1].type
    args = [*ins, Scalar(f, 0.2), i32(max_det), i32(kernel), Scalar(f, 0.4), Scalar(f, 0.5), Scalar(f, 0.3)]
    outs = [Out(t, *sq, shape=(0,)), Out(bt, *bq, shape=(0, 4)), Out(I32, shape=(0,)), Out(I32, shape=(0,))]
    tol = dict(atol=2e-3, rtol=2e-3) if t == F16 else dict(atol=1e-5, rtol=1e-5)
    act, _ = check_op(accelerator, OP.BOX_WITH_NMS_LIMIT, args, outs, data=data, what=f"{t.name} {kernel}", **tol)
    assert 0 < len(act[0]) < 7 * 2  # some candidates suppressed, some kept


def test_box_with_nms_limit_unordered_box_fails(accelerator):
    ins, f, data, _, _ = _nms_case(F32, np.random.default_rng(3))
    data[1][0, :4] = [5, 5, 1, 1]                                  # x1 > x2
    args = [*ins, Scalar(f, 0.2), i32(-1), i32(0), Scalar(f, 0.4), Scalar(f, 0.5), Scalar(f, 0.3)]
    model, _ = single_op(OP.BOX_WITH_NMS_LIMIT, args, [Out(F32, shape=(0,)), Out(F32, shape=(0, 4)),
                                                       Out(I32, shape=(0,)), Out(I32, shape=(0,))])
    with pytest.raises(DriverError) as err:
        run_model(accelerator, model, data)
    assert err.value.status == ErrorStatus.GENERAL_FAILURE and "x1 > x2" in err.value.message


@pytest.mark.parametrize("t,nchw,pre,post", [(F32, False, -1, -1), (F32, True, 6, 4), (F16, False, 10, 3),
                                             (Q8A, True, 0, 5), (Q8AS, False, 8, -1)])
def test_generate_proposals(accelerator, t, nchw, pre, post):
    rng = np.random.default_rng(50)
    b, h, w, a = 2, 3, 4, 2
    quant = t in (Q8A, Q8AS)
    sq = (0.01, 5 if t == Q8A else -5) if quant else ()
    dq = (0.005, 128 if t == Q8A else 0) if quant else ()
    bt, at = (Q16A, OT.TENSOR_QUANT16_SYMM) if quant else (t, t)
    bq = (0.125, 0) if quant else ()
    shape = (b, a, h, w) if nchw else (b, h, w, a)
    dshape = (b, 4 * a, h, w) if nchw else (b, h, w, 4 * a)
    anchors = np.array([[0, 0, 6, 5], [1, 2, 9, 10]], np.float64)
    image = np.array([[20, 24], [18, 22]], np.float64)
    if quant:
        data = [random_data(In(t, shape), rng), random_data(In(t, dshape), rng),
                np.floor(anchors * 8).astype(np.int16), np.floor(image * 8).astype(np.uint16)]
    else:
        dtype = np.float16 if t == F16 else np.float32
        data = [rng.uniform(0, 1, shape).astype(dtype), rng.uniform(-0.3, 0.3, dshape).astype(dtype),
                anchors.astype(dtype), image.astype(dtype)]
    f = OT.FLOAT16 if t == F16 else OT.FLOAT32
    args = [In(t, shape, *sq), In(t, dshape, *dq), In(at, (a, 4), *bq), In(bt, (b, 2), *bq), Scalar(f, 2.0),
            Scalar(f, 2.5), i32(pre), i32(post), Scalar(f, 0.5), Scalar(f, 1.0), Scalar(OT.BOOL, nchw)]
    outs = [Out(t, *sq, shape=(0,)), Out(bt, *bq, shape=(0, 4)), Out(I32, shape=(0,))]
    tol = dict(atol=2e-2, rtol=2e-3) if t == F16 else dict(atol=1e-4, rtol=1e-5)
    act, _ = check_op(accelerator, OP.GENERATE_PROPOSALS, args, outs, data=data, what=f"{t.name} {nchw}", **tol)
    assert len(act[0]) > 0


def test_detection_tensors_stay_on_the_device(accelerator):
    """BOX_WITH_NMS_LIMIT feeding ROI_ALIGN: besides the model's output, the only bytes read back are
    the row count of the data-dependent operation and ROI_ALIGN's status word."""
    import gpu_driver as gd
    ins, f, data, _, _ = _nms_case(F32, np.random.default_rng(7))
    b = gd.ModelBuilder()
    s, r, bi = (b.add_input(x.type, x.shape) for x in ins)
    feat = b.add_input(F32, (2, 8, 8, 2))
    outs = [b.add_operand(F32, (0,)), b.add_operand(F32, (0, 4)), b.add_operand(I32, (0,)), b.add_operand(I32, (0,))]
    scal = [b.add_scalar(OT.FLOAT32, v) for v in (0.2,)] + [b.add_scalar(OT.INT32, v) for v in (-1, 0)] + \
        [b.add_scalar(OT.FLOAT32, v) for v in (0.4, 0.5, 0.3)]
    b.add_operation(OP.BOX_WITH_NMS_LIMIT, [s, r, bi, *scal], outs)
    pooled = b.add_operand(F32, (0, 2, 2, 2))
    b.add_operation(OP.ROI_ALIGN, [feat, outs[1], outs[3], b.add_scalar(OT.INT32, 2), b.add_scalar(OT.INT32, 2),
                                   b.add_scalar(OT.FLOAT32, 4.0), b.add_scalar(OT.FLOAT32, 4.0),
                                   b.add_scalar(OT.INT32, 2), b.add_scalar(OT.INT32, 2),
                                   b.add_scalar(OT.BOOL, False)], [pooled])
    b.set_outputs([pooled])
    model = b.finish()
    feats = np.random.default_rng(8).uniform(-1, 1, (2, 8, 8, 2)).astype(np.float32)
    feeds = [*data, feats]
    want = run_model(gd.get_device("reference"), model, feeds)[0]
    # the HAL level, with room for any output: one execution (execute() would retry with a larger buffer)
    from gpu_driver.hal.model import DataLocation, Request, RequestArgument
    raw = b"".join(np.ascontiguousarray(v).tobytes() for v in feeds)
    pool_in, pool_out = gd.SharedMemory(len(raw)), gd.SharedMemory(4096)
    pool_in.write(0, raw)
    args, offset = [], 0
    for v in feeds:
        args.append(RequestArgument(DataLocation(0, offset, v.nbytes), list(v.shape)))
        offset += v.nbytes
    request = Request(args, [RequestArgument(DataLocation(1, 0, 4096))], [pool_in, pool_out])
    prepared = accelerator.prepare_model(model)
    prepared.execute_synchronously(request)
    counters = accelerator.backend.allocator.counters
    counters.reset()
    (shape,), _ = prepared.execute_synchronously(request)
    got = np.frombuffer(pool_out.read(0, want.nbytes), np.float32).reshape(shape.dimensions)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    # the output, the row count, and ROI_ALIGN's 4-byte status word (its kernel checks the batch indices)
    assert counters.snapshot()["d2h_bytes"] == got.nbytes + 4 + 4


def _nms_then_pool(b, ins, t, pool, score_threshold, channels=2):
    """BOX_WITH_NMS_LIMIT over model inputs ``ins`` (specs of _nms_case) feeding ``pool`` (ROI_ALIGN or
    ROI_POOLING, 2 × 2 bins, NHWC) over a feature input [2, 8, 8, channels]; returns (the pooled
    operand, the feature input)."""
    sq = (ins[0].scale, ins[0].zp)
    f = OT.FLOAT16 if t == F16 else OT.FLOAT32
    s, r, bi = (b.add_input(x.type, x.shape, x.scale, x.zp) for x in ins)
    feat = b.add_input(t, (2, 8, 8, channels), *sq)
    outs = [b.add_operand(t, (0,), *sq), b.add_operand(ins[1].type, (0, 4), ins[1].scale, ins[1].zp),
            b.add_operand(I32, (0,)), b.add_operand(I32, (0,))]
    scal = [b.add_scalar(f, score_threshold), b.add_scalar(OT.INT32, -1), b.add_scalar(OT.INT32, 0),
            *(b.add_scalar(f, v) for v in (0.4, 0.5, 0.3))]
    b.add_operation(OP.BOX_WITH_NMS_LIMIT, [s, r, bi, *scal], outs)
    pooled = b.add_operand(t, (0, 2, 2, channels), *sq)
    args = [feat, outs[1], outs[3], b.add_scalar(OT.INT32, 2), b.add_scalar(OT.INT32, 2),
            b.add_scalar(f, 4.0), b.add_scalar(f, 4.0)]
    if pool == OP.ROI_ALIGN:
        args += [b.add_scalar(OT.INT32, 2), b.add_scalar(OT.INT32, 2)]
    b.add_operation(pool, [*args, b.add_scalar(OT.BOOL, False)], [pooled])
    return pooled, feat


@pytest.mark.parametrize("t", [F32, F16, Q8A, Q8AS])
def test_empty_detection_flows_downstream(accelerator, t):
    """No box passes the score threshold: BOX_WITH_NMS_LIMIT keeps zero rows, ROI_ALIGN of zero
    boxes is zero-sized, and concatenating it with x along axis 0 gives x (AOSP's zero-sized
    semantics), on the device, with the output's dimensions declared.  (ROI_POOLING refuses zero
    boxes on every device.)"""
    import gpu_driver as gd
    ins, _, data, sq, _ = _nms_case(t, np.random.default_rng(11))
    b = gd.ModelBuilder()
    pooled, _ = _nms_then_pool(b, ins, t, OP.ROI_ALIGN, score_threshold=5.0)  # every score is below 2.6
    x = b.add_input(t, (1, 2, 2, 2), *sq)
    out = b.add_operand(t, (1, 2, 2, 2), *sq)
    b.add_operation(OP.CONCATENATION, [pooled, x, b.add_scalar(OT.INT32, 0)], [out])
    b.set_outputs([out])
    model = b.finish()
    assert accelerator.get_supported_operations(model) == [True, True, True]
    rng = np.random.default_rng(12)
    feats = random_data(In(t, (2, 8, 8, 2)), rng)
    xv = random_data(In(t, (1, 2, 2, 2)), rng)
    (got,) = run_model(accelerator, model, [*data, feats, xv])
    np.testing.assert_array_equal(got, xv)


def test_detection_model_from_several_threads(accelerator):
    """One prepared model (BOX_WITH_NMS_LIMIT → ROI_ALIGN) executed from several threads at once, each
    with its own data (so different row counts): every result equals the reference device's."""
    import concurrent.futures

    import gpu_driver as gd
    b = gd.ModelBuilder()
    ins = _nms_case(F32, np.random.default_rng(0))[0]
    pooled, _ = _nms_then_pool(b, ins, F32, OP.ROI_ALIGN, score_threshold=0.2)
    b.set_outputs([pooled])
    model = b.finish()
    feeds = []
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        data = _nms_case(F32, rng)[2]
        data[0] = (data[0] * rng.uniform(0.3, 1.0)).astype(np.float32)  # fewer or more boxes above 0.2
        feeds.append([*data, rng.uniform(-1, 1, (2, 8, 8, 2)).astype(np.float32)])
    reference = gd.get_device("reference").prepare_model(model)
    want = [reference.execute(f)[0] for f in feeds]
    assert len({w.shape[0] for w in want}) > 1  # the threads' results have different row counts
    prepared = accelerator.prepare_model(model)

    def run(k):
        return [np.asarray(prepared.execute(feeds[k % len(feeds)])[0]) for _ in range(4)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(run, range(12)))
    for k, got in enumerate(results):
        for g in got:
            np.testing.assert_allclose(g, want[k % len(feeds)], atol=1e-5, rtol=1e-5)
    # the data-dependent step keeps its launches, scratch and counters: at most one per thread
    # that ran it at once, and a later execution takes one of those
    nms = prepared.program.steps[0]
    pooled = sum(len(slots) for slots in nms._slots.values())
    assert 1 <= pooled <= 6
    np.testing.assert_allclose(prepared.execute(feeds[0])[0], want[0], atol=1e-5, rtol=1e-5)
    assert sum(len(slots) for slots in nms._slots.values()) == pooled
