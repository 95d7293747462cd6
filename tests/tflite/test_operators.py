"""The importer operator by operator: one-operator TF Lite models (written by tflite_writer) run by
LiteRT — the independent oracle — and, imported, on every device of the driver."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite

from gpu_driver.tflite.writer import TfliteWriter

from .oracle import assert_matches, litert

RNG = np.random.default_rng(7)


def devices():
    return [pytest.param(d, id=d) for d in [dv.name for dv in gpu_driver.get_devices()]]


def one_op(name, inputs, output_shapes, options=None, out_type="FLOAT32", out_quant=None, custom=None):
    """A one-operator model.  ``inputs``: ("in", shape[, type, (scale, zp)]) model inputs or
    ("const", array[, type, (scale, zp)]) constants.  Returns (bytes, feed)."""
    w = TfliteWriter()
    ins, feed, model_inputs = [], [], []
    for k, spec in enumerate(inputs):
        kind, value = spec[0], spec[1]
        ttype = spec[2] if len(spec) > 2 else "FLOAT32"
        q = spec[3] if len(spec) > 3 else None
        qa = {"scale": q[0], "zero_point": q[1]} if q else {}
        if kind == "in":
            t = w.tensor(f"in{k}", value, ttype, **qa)
            model_inputs.append(t)
            if ttype == "FLOAT32":
                feed.append(RNG.uniform(-2, 2, value).astype(np.float32))
            else:
                info = np.iinfo({"UINT8": np.uint8, "INT8": np.int8, "INT32": np.int32}[ttype])
                feed.append(RNG.integers(max(info.min, -50), min(info.max, 50) + 1, value).astype(info.dtype))
        else:
            arr = np.asarray(value)
            t = w.tensor(f"c{k}", arr.shape, ttype, data=arr, **qa)
        ins.append(t)
    outs = []
    for k, shape in enumerate(output_shapes):
        oq = {"scale": out_quant[0], "zero_point": out_quant[1]} if out_quant else {}
        outs.append(w.tensor(f"out{k}", shape, out_type, **oq))
    w.operator(name, ins, outs, options=options, custom=custom)
    return w.finish(model_inputs, outs), feed


def f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


CASES = {
    "ADD_relu6_broadcast": ("ADD", [("in", [1, 2, 3]), ("in", [3])], [[1, 2, 3]],
                            ("AddOptions", {"FusedActivationFunction": 3})),
    "SUB": ("SUB", [("in", [2, 3]), ("const", f32(2, 3))], [[2, 3]], ("SubOptions", {})),
    "MUL_tanh": ("MUL", [("in", [2, 3]), ("in", [2, 3])], [[2, 3]], ("MulOptions", {"FusedActivationFunction": 4})),
    "DIV": ("DIV", [("in", [2, 3]), ("const", np.full((2, 3), 1.5, np.float32))], [[2, 3]], ("DivOptions", {})),
    "MAXIMUM": ("MAXIMUM", [("in", [4]), ("in", [4])], [[4]]),
    "CONV_2D_same_s2_relu": ("CONV_2D", [("in", [1, 7, 7, 3]), ("const", f32(4, 3, 3, 3)), ("const", f32(4))],
                             [[1, 4, 4, 4]], ("Conv2DOptions", {"Padding": 0, "StrideW": 2, "StrideH": 2,
                                                                "FusedActivationFunction": 1})),
    "CONV_2D_valid_dilated": ("CONV_2D", [("in", [1, 8, 8, 2]), ("const", f32(3, 3, 3, 2)), ("const", f32(3))],
                              [[1, 4, 4, 3]], ("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1,
                                                                 "DilationWFactor": 2, "DilationHFactor": 2})),
    "CONV_2D_grouped_depthwise": ("CONV_2D", [("in", [1, 6, 6, 4]), ("const", f32(8, 3, 3, 1)), ("const", f32(8))],
                                  [[1, 6, 6, 8]], ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1})),
    "CONV_2D_grouped_2": ("CONV_2D", [("in", [1, 6, 6, 4]), ("const", f32(6, 3, 3, 2)), ("const", f32(6))],
                          [[1, 3, 3, 6]], ("Conv2DOptions", {"Padding": 0, "StrideW": 2, "StrideH": 2,
                                                             "FusedActivationFunction": 1})),
    "DEPTHWISE_CONV_2D_m2": ("DEPTHWISE_CONV_2D", [("in", [1, 5, 5, 2]), ("const", f32(1, 3, 3, 4)), ("const", f32(4))],
                             [[1, 5, 5, 4]], ("DepthwiseConv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1,
                                                                         "DepthMultiplier": 2})),
    "AVERAGE_POOL_2D": ("AVERAGE_POOL_2D", [("in", [1, 6, 6, 3])], [[1, 3, 3, 3]],
                        ("Pool2DOptions", {"Padding": 0, "StrideW": 2, "StrideH": 2, "FilterWidth": 3,
                                           "FilterHeight": 3})),
    "MAX_POOL_2D": ("MAX_POOL_2D", [("in", [1, 6, 6, 3])], [[1, 2, 2, 3]],
                    ("Pool2DOptions", {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 3, "FilterHeight": 3})),
    "FULLY_CONNECTED_no_bias": ("FULLY_CONNECTED", [("in", [2, 6]), ("const", f32(5, 6))], [[2, 5]],
                                ("FullyConnectedOptions", {})),
    "SOFTMAX": ("SOFTMAX", [("in", [2, 5])], [[2, 5]], ("SoftmaxOptions", {"Beta": 0.5})),
    "CONCATENATION": ("CONCATENATION", [("in", [2, 3]), ("in", [2, 2])], [[2, 5]], ("ConcatenationOptions", {"Axis": -1})),
    "RESHAPE": ("RESHAPE", [("in", [2, 6]), ("const", np.array([3, 4], np.int32), "INT32")], [[3, 4]]),
    "PAD": ("PAD", [("in", [1, 3, 3, 2]), ("const", np.array([[0, 0], [1, 1], [2, 2], [0, 1]], np.int32), "INT32")],
            [[1, 5, 7, 3]]),
    "MEAN": ("MEAN", [("in", [1, 4, 4, 3]), ("const", np.array([1, 2], np.int32), "INT32")], [[1, 3]],
             ("ReducerOptions", {"KeepDims": False})),
    "RESIZE_BILINEAR_half_pixel": ("RESIZE_BILINEAR", [("in", [1, 3, 4, 2]), ("const", np.array([6, 8], np.int32), "INT32")],
                                   [[1, 6, 8, 2]], ("ResizeBilinearOptions", {"HalfPixelCenters": True})),
    "TRANSPOSE": ("TRANSPOSE", [("in", [2, 3, 4]), ("const", np.array([2, 0, 1], np.int32), "INT32")], [[4, 2, 3]]),
    "LOGISTIC": ("LOGISTIC", [("in", [3, 4])], [[3, 4]]),
    "HARD_SWISH": ("HARD_SWISH", [("in", [3, 4])], [[3, 4]]),
    "RELU6": ("RELU6", [("in", [3, 4])], [[3, 4]]),
    "LEAKY_RELU": ("LEAKY_RELU", [("in", [3, 4])], [[3, 4]], ("LeakyReluOptions", {"Alpha": 0.1})),
    "STRIDED_SLICE": ("STRIDED_SLICE", [("in", [4, 6]), ("const", np.array([1, 0], np.int32), "INT32"),
                                        ("const", np.array([3, 6], np.int32), "INT32"),
                                        ("const", np.array([1, 2], np.int32), "INT32")], [[2, 3]],
                      ("StridedSliceOptions", {})),
    "GATHER": ("GATHER", [("in", [4, 3]), ("const", np.array([3, 0, 3], np.int32), "INT32")], [[3, 3]],
               ("GatherOptions", {"Axis": 0})),
    "ARG_MAX": ("ARG_MAX", [("in", [3, 5]), ("const", np.array([1], np.int32), "INT32")], [[3]],
                ("ArgMaxOptions", {"OutputType": 2}), "INT32"),
    "BATCH_MATMUL": ("BATCH_MATMUL", [("in", [2, 3, 4]), ("in", [2, 4, 5])], [[2, 3, 5]], ("BatchMatMulOptions", {})),
    "CONV_2D_uint8": ("CONV_2D", [("in", [1, 5, 5, 3], "UINT8", (0.05, 128)),
                                  ("const", RNG.integers(0, 256, (4, 3, 3, 3)), "UINT8", (0.02, 120)),
                                  ("const", RNG.integers(-100, 100, (4,)), "INT32", (0.05 * 0.02, 0))],
                      [[1, 5, 5, 4]], ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1}), "UINT8",
                      (0.1, 128)),
    "QUANTIZE_requantize_int8": ("QUANTIZE", [("in", [2, 5], "INT8", (0.05, 3))], [[2, 5]], None, "INT8", (0.03, -7)),
    "QUANTIZE_uint8_to_int8": ("QUANTIZE", [("in", [6], "UINT8", (0.1, 128))], [[6]], None, "INT8", (0.1, 0)),
    "CEIL": ("CEIL", [("in", [2, 3])], [[2, 3]]),
    # quantized forms NNAPI lacks, computed in float (or, LEAKY_RELU, a quantized PRELU)
    "LEAKY_RELU_int8": ("LEAKY_RELU", [("in", [2, 8], "INT8", (0.05, 3))], [[2, 8]],
                        ("LeakyReluOptions", {"Alpha": 0.1}), "INT8", (0.03, -20)),
    "LEAKY_RELU_uint8": ("LEAKY_RELU", [("in", [2, 8], "UINT8", (0.05, 128))], [[2, 8]],
                         ("LeakyReluOptions", {"Alpha": 0.2}), "UINT8", (0.04, 100)),
    "EXP_int8": ("EXP", [("in", [2, 8], "INT8", (0.05, 3))], [[2, 8]], None, "INT8", (0.1, -128)),
    "LOG_int8": ("LOG", [("in", [2, 8], "INT8", (0.05, -128))], [[2, 8]], None, "INT8", (0.05, 0)),
    "ELU_int8": ("ELU", [("in", [2, 8], "INT8", (0.05, 3))], [[2, 8]], None, "INT8", (0.02, 50)),
    "GELU_int8": ("GELU", [("in", [2, 8], "INT8", (0.05, 3))], [[2, 8]], ("GeluOptions", {}), "INT8", (0.02, -80)),
    "SQUARED_DIFFERENCE_int8": ("SQUARED_DIFFERENCE", [("in", [2, 8], "INT8", (0.05, 3)),
                                                       ("in", [2, 8], "INT8", (0.04, -7))], [[2, 8]], None,
                                "INT8", (0.02, -128)),
    "MEAN_int8_rounds": ("MEAN", [("in", [1, 4, 4, 3], "INT8", (0.05, 3)),
                                  ("const", np.array([1, 2], np.int32), "INT32")], [[1, 3]],
                         ("ReducerOptions", {"KeepDims": False}), "INT8", (0.05, 3)),
    "LOGISTIC_int8_tiny_scale": ("LOGISTIC", [("in", [2, 8], "INT8", (1e-8, 0))], [[2, 8]], None, "INT8",
                                 (1.0 / 256, -128)),
    "FLOOR_DIV_float": ("FLOOR_DIV", [("in", [2, 3]), ("const", np.full((2, 3), 0.7, np.float32))], [[2, 3]]),
    "FLOOR_DIV_int32": ("FLOOR_DIV", [("in", [4], "INT32"), ("const", np.array([3, -3, 2, 5], np.int32), "INT32")],
                        [[4]], None, "INT32"),
    "RELU_0_TO_1": ("RELU_0_TO_1", [("in", [6])], [[6]]),
    "GELU_tanh_approximation": ("GELU", [("in", [2, 4])], [[2, 4]], ("GeluOptions", {"Approximate": True})),
    "GELU_exact": ("GELU", [("in", [3, 8])], [[3, 8]], ("GeluOptions", {"Approximate": False})),
    "SPLIT_V": ("SPLIT_V", [("in", [2, 7]), ("const", np.array([2, -1, 3], np.int32), "INT32"),
                            ("const", np.array(1, np.int32), "INT32")], [[2, 2], [2, 2], [2, 3]],
                ("SplitVOptions", {"NumSplits": 3})),
    "UNPACK_axis1": ("UNPACK", [("in", [3, 2, 4])], [[3, 4], [3, 4]], ("UnpackOptions", {"Num": 2, "Axis": 1})),
    "BROADCAST_TO": ("BROADCAST_TO", [("in", [3, 1]), ("const", np.array([2, 3, 4], np.int32), "INT32")],
                     [[2, 3, 4]]),
}


def _run_case(device_name, key):
    name, inputs, shapes, *rest = CASES[key]
    options = rest[0] if rest else None
    out_type = rest[1] if len(rest) > 1 else "FLOAT32"
    out_quant = rest[2] if len(rest) > 2 else None
    data, feed = one_op(name, inputs, shapes, options, out_type, out_quant)
    expected = litert(data, feed)
    imported = tflite.load_model(data)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(imported.model)), f"{key}: unsupported on {device_name}"
    actual = device.prepare_model(imported.model).execute(feed)
    # quantized: within one step of LiteRT's integer kernels
    assert_matches(actual, expected, key, integer_steps=1)


@pytest.mark.parametrize("key", sorted(CASES))
@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
def test_operator_matches_litert(device_name, key):
    _run_case(device_name, key)


def test_fp16_weights_behind_dequantize_are_folded():
    w = TfliteWriter()
    x = w.tensor("x", [1, 4, 4, 2], "FLOAT32")
    wh = w.tensor("w16", [3, 1, 1, 2], "FLOAT16", data=f32(3, 1, 1, 2).astype(np.float16))
    wf = w.tensor("w", [3, 1, 1, 2], "FLOAT32")
    b = w.tensor("b", [3], "FLOAT32", data=f32(3))
    y = w.tensor("y", [1, 4, 4, 3], "FLOAT32")
    w.operator("DEQUANTIZE", [wh], [wf])
    w.operator("CONV_2D", [x, wf, b], [y], options=("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1}))
    data = w.finish([x], [y])
    imported = tflite.load_model(data)
    ops = [op.type.name for op in imported.model.main.operations]
    assert ops == ["CONV_2D"]  # the DEQUANTIZE became a float32 constant
    feed = [f32(1, 4, 4, 2)]
    expected = litert(data, feed)[0]
    actual = gpu_driver.get_device("reference").prepare_model(imported.model).execute(feed)[0]
    np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("regular", [False, True], ids=["fast_nms", "regular_nms"])
@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
def test_ssd_detection_postprocess_custom_operator(device_name, regular):
    """TFLite_Detection_PostProcess (SSD models): NNAPI DETECTION_POSTPROCESSING plus CASTs of the
    class and count outputs to TF Lite's float32."""
    from flatbuffers import flexbuffers

    anchors_n, classes = 12, 3
    rng = np.random.default_rng(3)
    centers = rng.uniform(0.2, 0.8, (anchors_n, 2))
    anchors = np.concatenate([centers, rng.uniform(0.1, 0.3, (anchors_n, 2))], axis=1).astype(np.float32)
    w = TfliteWriter()
    boxes_in = w.tensor("box_encodings", [1, anchors_n, 4], "FLOAT32")
    scores_in = w.tensor("class_predictions", [1, anchors_n, classes + 1], "FLOAT32")
    anchor_t = w.tensor("anchors", [anchors_n, 4], "FLOAT32", data=anchors)
    outs = [w.tensor("boxes", [1, 4, 4], "FLOAT32"), w.tensor("classes", [1, 4], "FLOAT32"),
            w.tensor("scores", [1, 4], "FLOAT32"), w.tensor("count", [1], "FLOAT32")]
    options = flexbuffers.Dumps({"max_detections": 4, "max_classes_per_detection": 1, "detections_per_class": 4,
                                 "use_regular_nms": regular, "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5,
                                 "num_classes": classes, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
                                 "w_scale": 5.0})
    w.operator("TFLite_Detection_PostProcess", [boxes_in, scores_in, anchor_t], outs, custom=bytes(options))
    data = w.finish([boxes_in, scores_in], outs)
    feed = [rng.normal(0, 1, (1, anchors_n, 4)).astype(np.float32),
            rng.uniform(0, 1, (1, anchors_n, classes + 1)).astype(np.float32)]
    expected = litert(data, feed)
    assert int(expected[3][0]) > 0
    imported = tflite.load_model(data)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(imported.model))
    actual = device.prepare_model(imported.model).execute(feed)
    count = int(expected[3][0])
    assert int(actual[3][0]) == count
    for a, e in zip(actual[:3], expected[:3]):   # filled slots; the rest is unspecified padding
        assert np.shape(a) == e.shape
        np.testing.assert_allclose(np.asarray(a)[0, :count], e[0, :count], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
def test_shape_zeros_like_and_fill_fold_at_import(device_name):
    """SHAPE and ZEROS_LIKE of tensors of known dimensions, and FILL of constants, become constants."""
    w = TfliteWriter()
    x, z = w.tensor("x", [2, 3], "FLOAT32"), w.tensor("z", [6], "FLOAT32")
    shape, zeros = w.tensor("shape", [2], "INT32"), w.tensor("zeros", [2, 3], "FLOAT32")
    filled = w.tensor("filled", [2, 3], "FLOAT32")
    dims = w.tensor("dims", [2], "INT32", data=np.array([2, 3], np.int32))
    value = w.tensor("value", [], "FLOAT32", data=np.array(1.5, np.float32))
    r, s1, out = w.tensor("r", [2, 3], "FLOAT32"), w.tensor("s1", [2, 3], "FLOAT32"), w.tensor("out", [2, 3], "FLOAT32")
    w.operator("SHAPE", [x], [shape], options=("ShapeOptions", {"OutType": 2}))
    w.operator("RESHAPE", [z, shape], [r])
    w.operator("ZEROS_LIKE", [x], [zeros])
    w.operator("FILL", [dims, value], [filled])
    w.operator("ADD", [r, zeros], [s1], options=("AddOptions", {}))
    w.operator("ADD", [s1, filled], [out], options=("AddOptions", {}))
    data = w.finish([x, z], [out])
    feed = [f32(2, 3), f32(6)]
    expected = litert(data, feed)[0]
    np.testing.assert_allclose(expected, feed[1].reshape(2, 3) + 1.5, rtol=1e-6)   # worked by hand
    imported = tflite.load_model(data)
    assert "SHAPE" not in {op.type.name for op in imported.model.main.operations}
    device = gpu_driver.get_device(device_name)
    actual = device.prepare_model(imported.model).execute(feed)[0]
    np.testing.assert_allclose(actual, expected, rtol=1e-6)



def test_inputs_and_outputs_are_named_in_order():
    data, _ = one_op("CONCATENATION", [("in", [2, 3]), ("in", [2, 2])], [[2, 5]], ("ConcatenationOptions", {"Axis": 1}))
    imported = tflite.load_model(data)
    assert [s.name for s in imported.inputs] == ["in0", "in1"]
    assert [(s.name, s.shape, s.dtype) for s in imported.outputs] == [("out0", (2, 5), np.dtype(np.float32))]


def test_unsupported_operators_are_listed():
    w = TfliteWriter()
    x = w.tensor("x", [4], "FLOAT32")
    y = w.tensor("y", [4], "FLOAT32")
    z = w.tensor("z", [4], "FLOAT32")
    w.operator("ATAN2", [x, x], [y])
    w.operator("MyCustomOp", [y], [z], custom=b"")
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(w.finish([x], [z]))
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT
    assert "operator 0 (ATAN2)" in err.value.message and "operator 1 (MyCustomOp)" in err.value.message


def test_tensors_without_names_import():
    """Stripped models (names removed to save space) are valid TF Lite."""
    w = TfliteWriter()
    x, y = w.tensor(None, [3], "FLOAT32"), w.tensor(None, [3], "FLOAT32")
    w.operator("RELU", [x], [y])
    imported = tflite.load_model(w.finish([x], [y]))
    out = gpu_driver.get_device("reference").prepare_model(imported.model).execute([np.array([-1, 0, 2], np.float32)])
    np.testing.assert_array_equal(out[0], [0, 0, 2])


def test_an_input_without_an_nnapi_type_is_listed_not_raised():
    w = TfliteWriter()
    x, y = w.tensor("pcm", [4], "INT16"), w.tensor("y", [4], "INT16")
    w.operator("RELU", [x], [y])
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(w.finish([x], [y]))
    assert "model input 0 (pcm)" in err.value.message and "no quantization parameters" in err.value.message


@pytest.mark.parametrize("corrupt", [b"", b"not a model at all", "truncated", "flipped"])
def test_corrupt_files_give_driver_errors(corrupt):
    data, _ = one_op("ADD", [("in", [2]), ("in", [2])], [[2]], ("AddOptions", {}))
    if corrupt == "truncated":
        corrupt = data[: len(data) // 2]
    elif corrupt == "flipped":
        corrupt = data[:8] + bytes(b ^ 0xA5 for b in data[8:])
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(corrupt)
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT


def test_sources_path_and_file_object(tmp_path):
    data, _ = one_op("RELU", [("in", [3])], [[3]])
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    with open(path, "rb") as f:
        from_file = tflite.load_model(f)
    assert len(tflite.load_model(str(path)).model.main.operations) == len(from_file.model.main.operations) == 1
    with pytest.raises(gpu_driver.DriverError):
        tflite.load_model(tmp_path / "missing.tflite")


def counting_loop_model() -> bytes:
    """while i < 5: i += 1; x *= 2 — condition and body are TF Lite subgraphs 1 and 2; i and x are
    the model's inputs (the trip count depends on the data)."""
    w = TfliteWriter()
    i0, x0 = w.tensor("i", [], "INT32"), w.tensor("x", [2], "FLOAT32")
    i1, x1 = w.tensor("i_out", [], "INT32"), w.tensor("x_out", [2], "FLOAT32")
    w.operator("WHILE", [i0, x0], [i1, x1], options=("WhileOptions", {"CondSubgraphIndex": 1, "BodySubgraphIndex": 2}))
    cond = w.subgraph()
    ci, cx = cond.tensor("i", [], "INT32"), cond.tensor("x", [2], "FLOAT32")
    flag = cond.tensor("flag", [], "BOOL")
    cond.operator("LESS", [ci, cond.tensor("five", [], "INT32", data=np.array(5))], [flag])
    cond.set_io([ci, cx], [flag])
    body = w.subgraph()
    bi, bx = body.tensor("i", [], "INT32"), body.tensor("x", [2], "FLOAT32")
    bi2, bx2 = body.tensor("i2", [], "INT32"), body.tensor("x2", [2], "FLOAT32")
    body.operator("ADD", [bi, body.tensor("one", [], "INT32", data=np.array(1))], [bi2], options=("AddOptions", {}))
    body.operator("MUL", [bx, body.tensor("two", [2], "FLOAT32", data=np.array([2.0, 2.0]))], [bx2],
                  options=("MulOptions", {}))
    body.set_io([bi, bx], [bi2, bx2])
    return w.finish([i0, x0], [i1, x1])


def test_while_loop_subgraphs():
    data = counting_loop_model()
    feed = [np.array(1, np.int32), np.array([1.5, -1.0], np.float32)]
    expected = litert(data, feed)
    assert int(expected[0]) == 5 and list(expected[1]) == [24.0, -16.0]  # four iterations, worked by hand
    imported = tflite.load_model(data)
    assert [op.type.name for op in imported.model.main.operations] == ["WHILE"]
    actual = gpu_driver.get_device("reference").prepare_model(imported.model).execute(
        [np.array([1], np.int32), feed[1]])
    assert int(np.asarray(actual[0]).reshape(-1)[0]) == 5
    np.testing.assert_array_equal(actual[1], [24.0, -16.0])
