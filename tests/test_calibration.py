"""Capability calibration: the HAL table built from measured ratios, and its persistence."""
import time

import numpy as np

import gpu_driver as gd
from gpu_driver import calibration
from gpu_driver.hal import FLT_MAX, OperandType as T


def test_capabilities_table_from_ratios():
    caps = calibration.capabilities({"TENSOR_FLOAT32": 0.5, "TENSOR_QUANT8_ASYMM": 0.25})
    types = [p.type for p in caps.operand_performance]
    assert types == sorted(types) and len(types) == len(set(types))           # sorted, unique
    assert T.SUBGRAPH not in types and T.OEM not in types                      # interface.md §3.1
    perf = {p.type: p.info for p in caps.operand_performance}
    assert (perf[T.TENSOR_FLOAT32].exec_time, perf[T.TENSOR_FLOAT32].power_usage) == (0.5, 0.5)
    assert perf[T.FLOAT32].exec_time == 0.5                                    # scalar takes the tensor figure
    assert perf[T.TENSOR_QUANT8_ASYMM].exec_time == 0.25
    assert perf[T.TENSOR_FLOAT16].exec_time == 0.5                              # computed in float32
    assert perf[T.TENSOR_QUANT8_ASYMM_SIGNED].exec_time == 0.25                 # the quant8 kernels
    assert perf[T.TENSOR_INT32].exec_time == FLT_MAX                            # nothing to derive it from
    assert perf[T.TENSOR_QUANT16_ASYMM].exec_time == FLT_MAX
    assert caps.relaxed_float32_to_float16_performance_tensor.exec_time == 0.5
    assert caps.if_performance.exec_time == FLT_MAX and caps.while_performance.exec_time == FLT_MAX
    assert all(p.info.exec_time > 0 and p.info.power_usage > 0 for p in caps.operand_performance)


def test_control_flow_figures_and_where_each_figure_comes_from():
    ratios = {"TENSOR_FLOAT32": 0.5, "IF": 3.0, "WHILE": 4.5}
    caps = calibration.capabilities(ratios)
    assert (caps.if_performance.exec_time, caps.if_performance.power_usage) == (3.0, 3.0)
    assert (caps.while_performance.exec_time, caps.while_performance.power_usage) == (4.5, 4.5)
    sources = calibration.figure_sources(ratios)
    assert sources["TENSOR_FLOAT32"] == "calibrated" and sources["IF"] == sources["WHILE"] == "calibrated"
    assert sources["TENSOR_FLOAT16"] == "calibrated as TENSOR_FLOAT32"
    assert sources["TENSOR_INT32"] == "default"
    assert calibration.figure_sources({})["WHILE"] == "default"


def test_control_flow_workloads_do_the_work_of_their_plain_twins():
    # on the reference device, each control-flow model and its plain twin compute the same thing,
    # checked against numpy: IF (condition true) x + 1, WHILE x + LOOP_ITERATIONS
    ref = gd.get_device("reference")
    expected = {"IF": 1.0, "WHILE": float(calibration.LOOP_ITERATIONS)}
    for name, workload in calibration.CONTROL_FLOW_WORKLOADS.items():
        flow, flow_feed, plain, plain_feed = workload()
        x = plain_feed[0]
        (y_flow,) = ref.prepare_model(flow).execute(flow_feed)
        (y_plain,) = ref.prepare_model(plain).execute(plain_feed)
        np.testing.assert_allclose(y_flow, x + expected[name], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(y_plain, x + expected[name], rtol=1e-6, err_msg=name)


def test_store_and_load_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path))
    dev = gd.get_device("reference")
    assert calibration.load(dev) is None and calibration.measured_at(dev) is None
    calibration.store(dev, {"TENSOR_FLOAT32": 0.75})
    assert calibration.load(dev) == {"TENSOR_FLOAT32": 0.75}
    assert calibration.measured_at(dev).startswith(time.strftime("%Y-%m-%d"))
    (tmp_path / calibration.CALIBRATION_FILE).write_text("{not json")          # damaged file: re-measure
    assert calibration.load(dev) is None


def test_measure_on_reference_is_close_to_one(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path))
    spreads, lines = {}, []
    ratios = calibration.measure(gd.get_device("reference"), rounds=5, spreads=spreads, progress=lines.append)
    types = {"TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_INT32"}
    assert set(ratios) == set(spreads) == types | {"IF", "WHILE"}
    assert all(0.2 < ratios[t] < 5 for t in types)   # the same work on the same device, paired: about 1
    assert ratios["IF"] > 0 and ratios["WHILE"] > 0  # a difference of small times: only its sign is sure
    assert all(s >= 0 for s in spreads.values()) and len(lines) == 5


class Sleeper:
    """A stand-in for a prepared model whose execution takes a known time."""

    def __init__(self, seconds):
        self.seconds = seconds

    def execute(self, _inputs):
        time.sleep(self.seconds)


# The sleeps are long against a loaded machine's scheduling delays (up to a millisecond beside the
# test suite's other worker): with 2 and 4 ms, one late wake-up in a round could double the spread.

def test_paired_ratio_of_a_known_slowdown():
    # one side sleeps 8 ms more than the other on every call: the paired median ratio is that of the
    # two durations, whatever the machine does meanwhile
    median, spread = calibration.measure_ratio(Sleeper(0.016), Sleeper(0.008), None, rounds=9)
    assert 1.5 < median < 2.5 and spread < 0.5


def test_paired_overhead_ratio_of_known_overheads():
    # control flow adds 16 ms on "mine" and 8 ms on the reference above the same 4 ms of work: 2
    sides = [(Sleeper(seconds), None) for seconds in (0.020, 0.004, 0.012, 0.004)]
    median, spread = calibration.measure_overhead_ratio(*sides, rounds=9, batch=1)
    assert 1.5 < median < 2.5 and spread < 0.5
