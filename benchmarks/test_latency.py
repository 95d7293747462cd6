"""MobileNet v1/v2 (1.0, 224×224, float32) on the OpenCL device vs the reference device, same run;
GFLOP/s of CONV_2D layers vs the machine's measured BLAS peak.

Layer GFLOP/s are given twice: from the wall time of a whole execution (input and output copied
through shared memory every time, as a one-layer model must) and from the device time of the kernel
alone (OpenCL profiling events, Timing.time_on_device)."""
import statistics

import pytest

from gpu_driver.zoo import conv_layer, mobilenet_v1, mobilenet_v2

MODELS = {"mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2}


@pytest.fixture(scope="module", params=sorted(MODELS))
def bench_model(request):
    return MODELS[request.param]()


@pytest.mark.parametrize("device_name", ["opencl", "reference"])
def test_mobilenet_latency(benchmark, bench_model, device_name, pocl, reference):
    device = pocl if device_name == "opencl" else reference
    pm = device.prepare_model(bench_model.model)
    x = bench_model.random_input()
    pm.execute([x])
    rounds = 10 if device_name == "opencl" else 3
    benchmark.group = bench_model.name
    benchmark.extra_info.update(device=device.name, gflop=bench_model.flops / 1e9)
    benchmark.pedantic(pm.execute, args=([x],), rounds=rounds, iterations=1, warmup_rounds=1)
    benchmark.extra_info["gflops_per_s"] = bench_model.flops / benchmark.stats.stats.median / 1e9


@pytest.mark.parametrize("shape", [(112, 32, 64, 1), (56, 128, 128, 1), (28, 256, 256, 1), (14, 512, 512, 1),
                                   (112, 16, 32, 3)])
def test_conv_gflops(benchmark, shape, pocl, machine_peak_gflops):
    h, cin, cout, k = shape
    bm = conv_layer(h, cin, cout, k)
    pm = pocl.prepare_model(bm.model)
    x = bm.random_input()
    pm.execute([x])
    benchmark.group = "conv2d"
    benchmark.pedantic(pm.execute, args=([x],), rounds=20, iterations=1, warmup_rounds=2)
    gflops = bm.conv_flops / benchmark.stats.stats.median / 1e9
    device_us = statistics.median(pm.execute([x], measure_timing=1, return_timing=True)[1].time_on_device
                                  for _ in range(20))
    kernel_gflops = bm.conv_flops / (device_us * 1e-6) / 1e9
    benchmark.extra_info.update(layer=bm.name, gflop=bm.conv_flops / 1e9, gflops_per_s=gflops,
                                kernel_us=device_us, kernel_gflops_per_s=kernel_gflops,
                                machine_peak_gflops=machine_peak_gflops,
                                fraction_of_peak=gflops / machine_peak_gflops,
                                kernel_fraction_of_peak=kernel_gflops / machine_peak_gflops)
