"""Per-layer GFLOP/s of the MobileNet convolution layers (float32, +RELU6) and its classifier on the
OpenCL device against numpy's BLAS sgemm peak, measured in the same process: each round times the
layer's kernels (device time, OpenCL profiling: Timing.time_on_device; after 0.15 s of untimed
runs, in which numpy's BLAS threads stop spinning) and then one 2048² float32 matmul, so both see
the same machine state; the figure is the median over the rounds.

``layer_rows(device)`` gives the table rows for the results page
(``python -m benchmarks.test_mobilenet_onnxruntime --out PAGE``)."""
from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from gpu_driver.builder import ModelBuilder
from gpu_driver.hal.types import MeasureTiming, OperandType as T, OperationType as O
from gpu_driver.latency import BLAS_SPIN_S, warm_up
from gpu_driver.zoo import RELU6, SAME, BenchModel

ROUNDS = 15
PEAK_N = 2048
# each layer runs untimed for BLAS_SPIN_S before its timed run: OpenBLAS's threads spin about 0.1 s
# after a matmul, and a layer timed inside that took twice as long (1×1 112²×32→64 on PoCL, 2-core
# VM: 265 µs right after the matmul, 131 µs after 0.15 s of runs)


def _layer(kind: str, h: int, cin: int, cout: int, k: int, stride: int, seed: int = 0) -> BenchModel:
    """One layer as in MobileNet: CONV_2D (k×k, SAME) / DEPTHWISE_CONV_2D (3×3, SAME) with RELU6, or
    FULLY_CONNECTED [1, cin] → cout."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    if kind == "fc":
        shape = (1, cin)
        x = b.add_input(T.TENSOR_FLOAT32, shape)
        w = b.add_constant(T.TENSOR_FLOAT32, [cout, cin], rng.standard_normal((cout, cin)).astype(np.float32) * 0.05)
        bias = b.add_constant(T.TENSOR_FLOAT32, [cout], rng.uniform(-0.05, 0.05, cout).astype(np.float32))
        y = b.add_operand(T.TENSOR_FLOAT32, (1, cout))
        b.add_operation(O.FULLY_CONNECTED, [x, w, bias, i32(0)], [y])
        flops, name = 2 * cin * cout, f"fully connected 1×{cin}→{cout}"
    else:
        shape = (1, h, h, cin)
        ho = -(-h // stride)
        x = b.add_input(T.TENSOR_FLOAT32, shape)
        y = b.add_operand(T.TENSOR_FLOAT32, (1, ho, ho, cout))
        scale = np.float32(np.sqrt(2.0 / (k * k * (1 if kind == "dw" else cin))))
        bias = b.add_constant(T.TENSOR_FLOAT32, [cout], rng.uniform(-0.05, 0.05, cout).astype(np.float32))
        if kind == "dw":
            w = b.add_constant(T.TENSOR_FLOAT32, [1, 3, 3, cout],
                               rng.standard_normal((1, 3, 3, cout)).astype(np.float32) * scale)
            b.add_operation(O.DEPTHWISE_CONV_2D,
                            [x, w, bias, i32(SAME), i32(stride), i32(stride), i32(1), i32(RELU6)], [y])
            flops, name = 2 * ho * ho * cout * 9, f"depthwise 3×3 s{stride} {h}²×{cin}"
        else:
            w = b.add_constant(T.TENSOR_FLOAT32, [cout, k, k, cin],
                               rng.standard_normal((cout, k, k, cin)).astype(np.float32) * scale)
            b.add_operation(O.CONV_2D, [x, w, bias, i32(SAME), i32(stride), i32(stride), i32(RELU6)], [y])
            flops, name = 2 * ho * ho * cout * k * k * cin, f"conv {k}×{k} s{stride} {h}²×{cin}→{cout}"
    b.set_outputs([y])
    return BenchModel(name, b.finish(), shape, flops)


#: (kind, h, cin, cout, k, stride): MobileNet v1's and v2's distinct heavy layers
LAYERS = [("conv", 224, 3, 32, 3, 2),
          ("conv", 112, 32, 64, 1, 1), ("conv", 56, 128, 128, 1, 1), ("conv", 28, 256, 256, 1, 1),
          ("conv", 14, 512, 512, 1, 1), ("conv", 7, 1024, 1024, 1, 1), ("conv", 56, 24, 144, 1, 1),
          ("conv", 56, 144, 24, 1, 1), ("conv", 14, 96, 576, 1, 1), ("conv", 7, 320, 1280, 1, 1),
          ("dw", 112, 32, 32, 3, 1), ("dw", 112, 96, 96, 3, 2), ("dw", 56, 144, 144, 3, 1),
          ("dw", 28, 256, 256, 3, 1), ("dw", 14, 512, 512, 3, 1), ("dw", 7, 1024, 1024, 3, 1),
          ("fc", 1, 1024, 1001, 1, 1)]


def _peak_seconds(a: np.ndarray) -> float:
    t0 = time.perf_counter()
    a @ a
    return time.perf_counter() - t0


def measure_layer(device, spec, rounds: int = ROUNDS) -> dict:
    """Median device time of the layer and median sgemm peak over alternating rounds."""
    bm = _layer(*spec)
    pm = device.prepare_model(bm.model)
    x = bm.random_input()
    a = np.random.default_rng(0).standard_normal((PEAK_N, PEAK_N)).astype(np.float32)
    for _ in range(2):
        pm.execute([x])
        _peak_seconds(a)
    layer_s, peak_gflops = [], []
    for _ in range(rounds):
        warm_up(lambda: pm.execute([x]), BLAS_SPIN_S)
        timing = pm.execute([x], measure_timing=MeasureTiming.YES, return_timing=True)[1]
        layer_s.append(timing.time_on_device * 1e-6)
        peak_gflops.append(2 * PEAK_N ** 3 / _peak_seconds(a) / 1e9)
    seconds = statistics.median(layer_s)
    peak = statistics.median(peak_gflops)
    gflops = bm.flops / seconds / 1e9
    return {"layer": bm.name, "ms": seconds * 1e3, "gflops": gflops, "peak_gflops": peak,
            "fraction_of_peak": gflops / peak}


def layer_rows(device) -> list[dict]:
    return [measure_layer(device, spec) for spec in LAYERS]


@pytest.mark.parametrize("spec", LAYERS, ids=lambda s: "-".join(map(str, s)))
def test_layer_gflops_vs_sgemm_peak(benchmark, pocl, spec):
    row = measure_layer(pocl, spec)
    benchmark.group = "conv layers"
    benchmark.extra_info.update(row)
    bm = _layer(*spec)
    pm = pocl.prepare_model(bm.model)
    x = bm.random_input()
    benchmark.pedantic(pm.execute, args=([x],), rounds=5, iterations=1, warmup_rounds=1)
