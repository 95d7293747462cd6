"""gpu_driver.trace: per-kernel Chrome trace / Perfetto JSON of one execution, and ``gpu-driver trace``."""
import json

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.trace import format_summary, trace_execution

from .test_cli import _cli


def _conv_add_relu():
    """CONV_2D → ADD → RELU (the RELU fuses); inputs x [1,8,8,3], y [1,8,8,4]."""
    b = gd.ModelBuilder()
    s = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    x = b.add_input(T.TENSOR_FLOAT32, [1, 8, 8, 3])
    w = b.add_constant(T.TENSOR_FLOAT32, [4, 3, 3, 3],
                       np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.add_constant(T.TENSOR_FLOAT32, [4], np.zeros(4, np.float32))
    c = b.add_operand(T.TENSOR_FLOAT32, [1, 8, 8, 4])
    b.add_operation(O.CONV_2D, [x, w, bias, s(1), s(1), s(1), s(1), s(1), s(1), s(0)], [c])
    y = b.add_input(T.TENSOR_FLOAT32, [1, 8, 8, 4])
    a = b.add_operand(T.TENSOR_FLOAT32, [1, 8, 8, 4])
    b.add_operation(O.ADD, [c, y, s(0)], [a])
    r = b.add_operand(T.TENSOR_FLOAT32, [1, 8, 8, 4])
    b.add_operation(O.RELU, [a], [r])
    b.set_outputs([r])
    rng = np.random.default_rng(1)
    return b.finish(), [rng.standard_normal((1, 8, 8, 3)).astype(np.float32),
                        rng.standard_normal((1, 8, 8, 4)).astype(np.float32)]


def _device_events(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["tid"] == 2]


def _thread_names(trace):
    return {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}


def test_opencl_trace_has_one_device_event_per_kernel(tmp_path):
    try:
        device = gd.get_device("opencl")
    except gd.DriverError:
        pytest.skip("no OpenCL device")
    model, inputs = _conv_add_relu()
    prepared = device.prepare_model(model)
    plan = prepared._static.compiled.plan
    path = tmp_path / "trace.json"
    trace = trace_execution(prepared, inputs, path)
    assert _thread_names(trace) == {1: "host", 2: "device"}
    events = _device_events(trace)
    assert [e["name"] for e in events] == [k.name for k in plan.kernels]
    assert len(events) == len(plan.kernels) == prepared.memory_plan["kernels"]
    ops = model.main.operations
    for e, k in zip(events, plan.kernels):
        assert e["ph"] == "X" and e["cat"] == "kernel" and e["dur"] >= 0 and e["ts"] >= 0
        assert e["args"]["node"] == k.node and e["args"]["operation"] == ops[k.node].type.name
        assert e["ts"] >= e["args"]["host_enqueue_us"]  # clocks aligned: never before its enqueue
    for before, after in zip(events, events[1:]):  # in-order queue: ordered, not overlapping
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-3
    host = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and e["tid"] == 1}
    assert {"upload inputs", "download outputs", "execution"} <= host
    np.testing.assert_array_equal(trace.outputs[0], prepared.execute(inputs)[0])
    assert json.loads(path.read_text()) == json.loads(json.dumps(trace))
    assert plan.kernels[0].name in format_summary(trace)


def test_several_runs_and_the_reference_device_trace_per_operation():
    model, inputs = _conv_add_relu()
    prepared = gd.get_device("reference").prepare_model(model)
    trace = trace_execution(prepared, inputs, runs=2)
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "operation"]
    assert [e["name"] for e in ops] == ["CONV_2D", "ADD", "RELU"] * 2
    assert [e["args"]["run"] for e in ops] == [0, 0, 0, 1, 1, 1]
    assert all(e["dur"] >= 0 and e["tid"] == 1 for e in ops)
    assert trace["otherData"]["events"] == "operations"
    np.testing.assert_array_equal(trace.outputs[0], prepared.execute(inputs)[0])
    assert json.loads(json.dumps(trace)) == dict(trace)


def test_cli_writes_a_trace_of_a_zoo_model(tmp_path):
    out = tmp_path / "t.json"
    r = _cli("trace", "mobilenet_v1:0.25:96", "--out", str(out), "--runs", "2", state_dir=tmp_path)
    assert r.returncode == 0, r.stderr
    trace = json.loads(out.read_text())
    assert any(e.get("ph") == "X" for e in trace["traceEvents"])
    assert "written to" in r.stdout and "µs/run" in r.stdout
    assert 2 <= len(r.stdout.splitlines()) <= 12  # header line, table header, at most 10 rows
