"""TF Lite operators with no single NNAPI equivalent, imported as compositions of NNAPI operations
(or folded to constants at import): one-operator models run by LiteRT — the independent oracle —
and, imported, on every device of the driver."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import DriverError, tflite
from gpu_driver.tflite.writer import TfliteWriter

from .oracle import assert_matches, litert

RNG = np.random.default_rng(11)
DEVICES = [d.name for d in gpu_driver.get_devices()]


def model(name, inputs, outputs, options=None, follow_add=False):
    """A one-operator model.  ``inputs``: ("in", shape, type) with a feed array, or ("const", array,
    type); ``outputs``: [(shape, type)].  With ``follow_add`` the (float) output is added to itself by
    a second operator, so an operator folded at import feeds a real operation."""
    w = TfliteWriter()
    ins, feed, model_inputs = [], [], []
    for k, (kind, value, ttype) in enumerate(inputs):
        if kind == "in":
            t = w.tensor(f"in{k}", list(value.shape), ttype)
            model_inputs.append(t)
            feed.append(value)
        else:
            t = w.tensor(f"c{k}", list(np.shape(value)), ttype, data=np.asarray(value))
        ins.append(t)
    outs = [w.tensor(f"out{k}", shape, ttype) for k, (shape, ttype) in enumerate(outputs)]
    w.operator(name, ins, outs, options=options)
    if follow_add:
        shape, ttype = outputs[0]
        doubled = w.tensor("doubled", shape, ttype)
        w.operator("ADD", [outs[0], outs[0]], [doubled], options=("AddOptions", {}))
        outs = [doubled]
    return w.finish(model_inputs, outs), feed


def f32(*shape, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def i32(*values):
    return np.asarray(values, np.int32)


#: name → (operator, inputs, outputs, options, follow_add)
CASES = {
    "COS": ("COS", [("in", f32(3, 5), "FLOAT32")], [([3, 5], "FLOAT32")], None, False),
    "SIGN_float": ("SIGN", [("in", np.array([[-2.5, 0.0, 3.0], [1e-30, -0.0, -1e-30]], np.float32), "FLOAT32")],
                   [([2, 3], "FLOAT32")], None, False),
    "SIGN_int32": ("SIGN", [("in", i32(-7, 0, 4, -1), "INT32")], [([4], "INT32")], None, False),
    "ROUND_half_to_even": ("ROUND", [("in", np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6, 7.0, 1e8],
                                                     np.float32), "FLOAT32")], [([10], "FLOAT32")], None, False),
    "ROUND_random": ("ROUND", [("in", f32(4, 6, low=-20, high=20), "FLOAT32")], [([4, 6], "FLOAT32")], None, False),
    "FLOOR_MOD_int32": ("FLOOR_MOD", [("in", i32(7, -7, 7, -7, 0, 9), "INT32"), ("const", i32(3, 3, -3, -3, 5, 4),
                                                                              "INT32")],
                        [([6], "INT32")], None, False),
    "RANGE": ("RANGE", [("const", np.float32(1.0), "FLOAT32"), ("const", np.float32(4.0), "FLOAT32"),
                        ("const", np.float32(0.5), "FLOAT32")], [([6], "FLOAT32")], None, True),
    "GATHER_ND_constant_indices": ("GATHER_ND", [("in", f32(3, 4, 2), "FLOAT32"),
                                                 ("const", i32(2, 1, 0, 3, 2, 1).reshape(3, 2), "INT32")],
                                   [([3, 2], "FLOAT32")], None, False),
    "GATHER_ND_input_indices": ("GATHER_ND", [("in", f32(3, 4, 2), "FLOAT32"),
                                              ("in", i32(2, 1, 1, 0, 0, 1, 2, 1, 0, 0, 1, 1, 2, 3, 0).reshape(5, 3),
                                               "INT32")],
                                [([5], "FLOAT32")], None, False),
    "GATHER_ND_rows_int32": ("GATHER_ND", [("in", RNG.integers(-9, 9, (4, 3)).astype(np.int32), "INT32"),
                                           ("in", i32(3, 0, 3).reshape(3, 1), "INT32")],
                             [([3, 3], "INT32")], None, False),
    "CUMSUM_axis1": ("CUMSUM", [("in", f32(2, 7, 3), "FLOAT32"), ("const", i32(1), "INT32")],
                     [([2, 7, 3], "FLOAT32")], ("CumsumOptions", {}), False),
    "CUMSUM_exclusive_reverse": ("CUMSUM", [("in", f32(3, 5), "FLOAT32"), ("const", i32(-1), "INT32")],
                                 [([3, 5], "FLOAT32")], ("CumsumOptions", {"Exclusive": True, "Reverse": True}),
                                 False),
    "CUMSUM_int32_exclusive": ("CUMSUM", [("in", RNG.integers(-50, 50, (2, 9)).astype(np.int32), "INT32"),
                                          ("const", i32(1), "INT32")],
                               [([2, 9], "INT32")], ("CumsumOptions", {"Exclusive": True}), False),
    "CUMSUM_int32_reverse": ("CUMSUM", [("in", RNG.integers(-50, 50, (5, 2)).astype(np.int32), "INT32"),
                                        ("const", i32(0), "INT32")],
                             [([5, 2], "INT32")], ("CumsumOptions", {"Reverse": True}), False),
    "ONE_HOT_last_axis": ("ONE_HOT", [("in", i32(0, 3, 1, 5, -1, 2).reshape(2, 3), "INT32"),
                                      ("const", i32(4), "INT32"), ("const", np.float32(2.5), "FLOAT32"),
                                      ("const", np.float32(-1.0), "FLOAT32")],
                          [([2, 3, 4], "FLOAT32")], ("OneHotOptions", {"Axis": -1}), False),
    "ONE_HOT_axis0_int32": ("ONE_HOT", [("in", i32(2, 0, 1), "INT32"), ("const", i32(3), "INT32"),
                                        ("const", i32(7), "INT32"), ("const", i32(0), "INT32")],
                            [([3, 3], "INT32")], ("OneHotOptions", {"Axis": 0}), False),
    "MATRIX_DIAG": ("MATRIX_DIAG", [("in", f32(2, 4), "FLOAT32")], [([2, 4, 4], "FLOAT32")], None, False),
    "SEGMENT_SUM": ("SEGMENT_SUM", [("in", f32(5, 3), "FLOAT32"), ("const", i32(0, 0, 1, 2, 2), "INT32")],
                    [([3, 3], "FLOAT32")], None, False),
    "UNSORTED_SEGMENT_SUM": ("UNSORTED_SEGMENT_SUM", [("in", f32(4, 2, 2), "FLOAT32"),
                                                      ("const", i32(2, 0, 2, 1), "INT32"), ("const", i32(3), "INT32")],
                             [([3, 2, 2], "FLOAT32")], None, False),
    "BUCKETIZE": ("BUCKETIZE", [("in", np.array([[-5, 0, 2.5], [3, 10, 100]], np.float32), "FLOAT32")],
                  [([2, 3], "INT32")], ("BucketizeOptions", {"Boundaries": np.array([0, 3, 10], np.float32)}), False),
    "REVERSE_V2_two_axes": ("REVERSE_V2", [("in", f32(2, 3, 4), "FLOAT32"), ("const", i32(0, 1), "INT32")],
                            [([2, 3, 4], "FLOAT32")], None, False),
    "SELECT_V2_broadcast": ("SELECT_V2", [("in", np.array([[True], [False]]), "BOOL"), ("in", f32(1, 3), "FLOAT32"),
                                          ("in", f32(2, 3), "FLOAT32")], [([2, 3], "FLOAT32")], None, False),
    "SELECT_V2_scalar_condition": ("SELECT_V2", [("in", np.array([False]), "BOOL"), ("in", f32(3), "FLOAT32"),
                                                 ("in", f32(2, 3), "FLOAT32")], [([2, 3], "FLOAT32")], None, False),
}


@pytest.mark.parametrize("key", sorted(CASES))
@pytest.mark.parametrize("device_name", DEVICES)
def test_composed_operator_matches_litert(device_name, key):
    name, inputs, outputs, options, follow_add = CASES[key]
    data, feed = model(name, inputs, outputs, options, follow_add)
    expected = litert(data, feed)
    imported = tflite.load_model(data)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(imported.model)), f"{key}: unsupported on {device_name}"
    actual = device.prepare_model(imported.model).execute(feed)
    assert_matches(actual, expected, key, tolerance=2e-5)


def test_hand_worked_values():
    """The compositions on the reference device against values worked by hand."""
    ref = gpu_driver.get_device("reference")

    def run(name, inputs, outputs, options=None):
        data, feed = model(name, inputs, outputs, options)
        return ref.prepare_model(tflite.load_model(data).model).execute(feed)[0]

    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49], np.float32)
    assert run("ROUND", [("in", x, "FLOAT32")], [([7], "FLOAT32")]).tolist() == [-2, -2, -0, 0, 2, 2, 3]
    assert run("CUMSUM", [("in", i32(1, 2, 3, 4), "INT32"), ("const", i32(0), "INT32")], [([4], "INT32")],
               ("CumsumOptions", {"Exclusive": True})).tolist() == [0, 1, 3, 6]
    assert run("CUMSUM", [("in", i32(1, 2, 3, 4), "INT32"), ("const", i32(0), "INT32")], [([4], "INT32")],
               ("CumsumOptions", {"Reverse": True})).tolist() == [10, 9, 7, 4]
    assert run("FLOOR_MOD", [("in", i32(-7, 7), "INT32"), ("const", i32(3, -3), "INT32")],
               [([2], "INT32")]).tolist() == [2, -2]
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert run("GATHER_ND", [("in", params, "FLOAT32"), ("in", i32(2, 3, 0, 1).reshape(2, 2), "INT32")],
               [([2], "FLOAT32")]).tolist() == [11.0, 1.0]


def test_folded_constant_as_model_output():
    """An output the importer computes (RANGE of constants) still reaches the caller."""
    data, _ = model("RANGE", [("const", i32(2), "INT32"), ("const", i32(11), "INT32"), ("const", i32(3), "INT32")],
                    [([3], "INT32")])
    imported = tflite.load_model(data)
    out = gpu_driver.get_device("reference").prepare_model(imported.model).execute([])[0]
    assert out.tolist() == [2, 5, 8]


@pytest.mark.parametrize("case", ["float_floor_mod", "unsorted_ids_out_of_range", "segment_ids_skip"])
def test_refused_with_the_reason(case):
    if case == "float_floor_mod":
        data, _ = model("FLOOR_MOD", [("in", f32(3), "FLOAT32"), ("const", f32(3), "FLOAT32")], [([3], "FLOAT32")])
        reason = "no exact float remainder"
    elif case == "segment_ids_skip":
        data, _ = model("SEGMENT_SUM", [("in", f32(3, 2), "FLOAT32"), ("const", i32(0, 2, 2), "INT32")],
                        [([3, 2], "FLOAT32")])
        reason = "rise by 0 or 1"
    else:
        data, _ = model("UNSORTED_SEGMENT_SUM", [("in", f32(3, 2), "FLOAT32"), ("const", i32(0, 4, 1), "INT32"),
                                                 ("const", i32(2), "INT32")], [([2, 2], "FLOAT32")])
        reason = "segment ids"
    with pytest.raises(DriverError) as err:
        tflite.load_model(data)
    assert "operator 0" in err.value.message and reason in err.value.message
