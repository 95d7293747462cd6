"""The CUDA device against GPU peers on the same weights, in one process, runs alternating round by round:

* MobileNet v1/v2 (gpu_driver.zoo, float32, 1.0, 224², batch 1 and 8): ``PreparedModel.execute`` (host
  input in, host output back) against ONNX Runtime with its best provider (CUDA where onnxruntime-gpu is
  installed, else the CPU with every core) and against PyTorch on the GPU (cuDNN), eager and replayed
  as a CUDA graph.  Every peer runs the zoo model's ONNX export (benchmarks/test_mobilenet_onnxruntime);
  PyTorch runs it through :func:`torch_forward`, a small interpreter of that export.  Each peer's output
  is compared with ours before timing, and its times include the input and output copies.
* On a device whose GEMM runs in work groups (``LaunchTuning.group_gemm``), ours again with the CPU's
  GEMM kernel (one register tile per work item), the A/B of that kernel choice; and on CUDA the
  MobileNet layers that are matrix products and the depthwise ones, each with the GPU's and the CPU's
  kernel tuning, against cuBLAS's sgemm peak.
* The one-ADD model (16 floats): executeSynchronously, a burst and a reusable execution, against the
  floor of the same work in bare CuPy (two copies in, the kernel, the copy out, one synchronize).

The results page (``--device`` names another accelerator for a dry run of the script)::

    python -m benchmarks.test_cuda_gpu --out benchmarks/results/<date>-cuda.md

Without a CUDA device the pytest tests skip.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pytest

import gpu_driver as gd
from benchmarks.machine import cpu_model, load_average
from benchmarks.test_conv_layers import LAYERS, _layer
from benchmarks.test_execution_modes import _mode
from benchmarks.test_mobilenet_onnxruntime import MODELS, alternate_all, to_onnx
from benchmarks.test_overhead import _request
from gpu_driver.hal.types import MeasureTiming
from gpu_driver.zoo import add_model

ROUNDS = 50
ADD_ROUNDS = 2000
BATCHES = (1, 8)
GOAL_BURST_US = 20.0


# ---- peers ------------------------------------------------------------------------------------------

def onnxruntime_peer(onnx_bytes: bytes):
    """(label, run(x) -> output) of ONNX Runtime with CUDA where available, else every CPU core."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    gpu = "CUDAExecutionProvider" in ort.get_available_providers()
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if gpu else ["CPUExecutionProvider"]
    if not gpu:
        opts.intra_op_num_threads = os.cpu_count() or 1
    session = ort.InferenceSession(onnx_bytes, opts, providers=providers)
    label = f"ONNX Runtime {ort.__version__} " + ("CUDA" if gpu else f"CPU ({os.cpu_count()} threads)")
    return label, lambda x: session.run(None, {"input": x})[0]


def torch_forward(onnx_bytes: bytes, device):
    """A function of a torch tensor running the zoo model's ONNX export (Transpose, Conv, Clip, Add,
    GlobalAveragePool, Flatten, Gemm, Softmax) with torch.nn.functional on ``device``."""
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import helper, numpy_helper

    model = onnx.load_from_string(onnx_bytes)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    consts = {name: torch.from_numpy(np.array(a, copy=True)).to(device) for name, a in arrays.items()}
    steps = []
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        steps.append((node.op_type, list(node.input), node.output[0], attrs))
    input_name, output_name = model.graph.input[0].name, model.graph.output[0].name

    def run(x):
        env = dict(consts)
        env[input_name] = x
        for op, ins, out, a in steps:
            v = env[ins[0]]
            if op == "Transpose":
                r = v.permute(*a["perm"]).contiguous()
            elif op == "Conv":
                top, left, bottom, right = a["pads"]
                if (top, left) != (bottom, right):
                    v, padding = F.pad(v, (left, right, top, bottom)), 0
                else:
                    padding = (top, left)
                r = F.conv2d(v, env[ins[1]], env[ins[2]], stride=tuple(a["strides"]), padding=padding,
                             groups=a.get("group", 1))
            elif op == "Clip":
                r = torch.clamp(v, float(arrays[ins[1]].reshape(-1)[0]), float(arrays[ins[2]].reshape(-1)[0]))
            elif op == "Add":
                r = v + env[ins[1]]
            elif op == "GlobalAveragePool":
                r = v.mean(dim=(2, 3), keepdim=True)
            elif op == "Flatten":
                r = v.flatten(1)
            elif op == "Gemm":
                r = F.linear(v, env[ins[1]], env[ins[2]])
            elif op == "Softmax":
                r = torch.softmax(v, dim=a.get("axis", -1))
            else:
                raise NotImplementedError(op)
            env[out] = r
        return env[output_name]
    return run


def torch_peers(onnx_bytes: bytes, x: np.ndarray) -> dict:
    """{label: run(x) -> output} of PyTorch on the GPU: eager, and the same replayed as a CUDA graph."""
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False   # float32, as ours
    dev = torch.device("cuda")
    forward = torch_forward(onnx_bytes, dev)

    @torch.no_grad()
    def eager(host):
        return forward(torch.from_numpy(host).to(dev)).cpu().numpy()

    static_in = torch.from_numpy(x).to(dev)
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                forward(static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = forward(static_in)

    def replay(host):
        static_in.copy_(torch.from_numpy(host))
        graph.replay()
        return static_out.cpu().numpy()

    version = f"PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()})"
    return {f"{version} eager": eager, f"{version} CUDA graph": replay}


#: the label of ours with the CPU's GEMM kernel (one register tile per work item) instead of the GPU's
REGISTER_TILE_GEMM = "ours, GEMM in register tiles per work item (gemm.cl)"


#: the tuning of a CPU device's kernels for the A/B tables: (label, LaunchTuning attributes)
CPU_GEMM = ("gemm.cl: a register tile per work item", {"group_gemm": False})
CPU_DEPTHWISE = ("16 channels per work item", {"depthwise_lanes": 16})


def prepared_with(device, model, overrides: dict):
    """``model`` prepared on ``device`` with its launch tuning's attributes ``overrides`` (as a CPU
    device would choose), compiled afresh."""
    tuning = device.backend.tuning
    saved = {k: getattr(tuning, k) for k in overrides}, getattr(device, "private_cache", True)
    for k, v in overrides.items():
        setattr(tuning, k, v)
    device.private_cache = False
    try:
        return device.prepare_model(model)
    finally:
        for k, v in saved[0].items():
            setattr(tuning, k, v)
        device.private_cache = saved[1]


def mobilenet_runs(device, name: str, batch: int):
    """(x, {label: run}) for one MobileNet: ours, ours with the CPU's GEMM kernel where the device
    has a GPU's, and every peer that installs, outputs checked."""
    bm = MODELS[name](batch=batch)
    prepared = device.prepare_model(bm.model)
    x = bm.random_input()
    onnx_bytes = to_onnx(bm)
    runs = {"ours": lambda v: prepared.execute([v])[0]}
    if device.backend.tuning.group_gemm:
        register_tiles = prepared_with(device, bm.model, CPU_GEMM[1])
        runs[REGISTER_TILE_GEMM] = lambda v: register_tiles.execute([v])[0]
    label, ort_run = onnxruntime_peer(onnx_bytes)
    runs[label] = ort_run
    try:
        runs.update(torch_peers(onnx_bytes, x))
    except Exception as exc:   # no torch, or no GPU for it
        print(f"PyTorch peer unavailable: {type(exc).__name__}: {exc}")
    ours = runs["ours"](x)
    for label, run in runs.items():
        np.testing.assert_allclose(run(x), ours, atol=2e-4, rtol=2e-3, err_msg=label)
    return x, runs


# ---- GEMM layers: the two kernels against cuBLAS --------------------------------------------------------

#: the MobileNet layers that are products of matrices (1×1 convolutions, the classifier), the depthwise ones
GEMM_LAYERS = [spec for spec in LAYERS if spec[0] == "fc" or spec[4] == 1]
DEPTHWISE_LAYERS = [spec for spec in LAYERS if spec[0] == "dw"]
PEAK_N = 4096


def cublas_peak_gflops(device, n: int = PEAK_N, rounds: int = 10) -> float:
    """cuBLAS's float32 GFLOP/s on an n² matmul (cupy.matmul; TF32 off, CuPy's default), best of rounds."""
    cupy = device.backend.cupy
    with device.backend.launcher.device:
        a = cupy.random.standard_normal((n, n), dtype=cupy.float32)
        (a @ a).sum()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        best = float("inf")
        for _ in range(rounds):
            start.record()
            a @ a
            end.record()
            end.synchronize()
            best = min(best, cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return 2 * n ** 3 / best / 1e9


def cublas_same_shape_us(device, spec, rounds: int = 20) -> float:
    """Median µs of cuBLAS (cupy.matmul, float32) on the product of a GEMM layer of GEMM_LAYERS:
    [h², cin] · [cin, cout] (the classifier: [1, cin] · [cin, cout]); no bias or activation."""
    cupy = device.backend.cupy
    kind, h, cin, cout = spec[:4]
    m = 1 if kind == "fc" else h * h
    with device.backend.launcher.device:
        a = cupy.random.standard_normal((m, cin), dtype=cupy.float32)
        b = cupy.random.standard_normal((cin, cout), dtype=cupy.float32)
        a @ b
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(rounds):
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
    return statistics.median(times)


def layer_ab_rows(device, specs, cpu_overrides: dict, rounds: int = 20) -> list[dict]:
    """Per layer of ``specs`` (benchmarks.test_conv_layers): median device time of its kernels as this
    device tunes them ("gpu") and with ``cpu_overrides`` ("cpu"), alternating round by round, outputs
    compared."""
    rows = []
    for spec in specs:
        bm = _layer(*spec)
        models = {"gpu": device.prepare_model(bm.model), "cpu": prepared_with(device, bm.model, cpu_overrides)}
        x = bm.random_input()
        times: dict[str, list[float]] = {k: [] for k in models}
        for round_ in range(rounds + 2):
            for label, pm in models.items():
                timing = pm.execute([x], measure_timing=MeasureTiming.YES, return_timing=True)[1]
                if round_ >= 2:
                    times[label].append(timing.time_on_device * 1e-6)
        np.testing.assert_allclose(models["gpu"].execute([x])[0], models["cpu"].execute([x])[0],
                                   rtol=1e-4, atol=1e-4)
        row = {"layer": bm.name}
        for label, values in times.items():
            seconds = statistics.median(values)
            row[f"{label} µs"] = seconds * 1e6
            row[f"{label} GFLOP/s"] = bm.flops / seconds / 1e9
        rows.append(row)
        print(row, flush=True)
    return rows


# ---- one ADD: overhead --------------------------------------------------------------------------------

def bare_cupy_add(device):
    """The one-ADD work in bare CuPy on the device's stream: two copies in, the kernel, the copy out,
    one synchronize."""
    cupy = device.backend.cupy
    stream = device.backend.launcher.stream
    kernel = cupy.RawKernel('extern "C" __global__ void add(const float* a, const float* b, float* o)'
                            '{ int i = threadIdx.x; o[i] = a[i] + b[i]; }', "add")
    a, out = np.ones(16, np.float32), np.empty(16, np.float32)
    with device.backend.launcher.device:
        A, B, O = (cupy.empty(16, cupy.float32) for _ in range(3))

    def run():
        A.set(a, stream=stream)
        B.set(a, stream=stream)
        kernel((1,), (16,), (A, B, O), stream=stream)
        O.get(stream=stream, out=out, blocking=False)
        stream.synchronize()
    return run


def add_modes(device) -> dict[str, float]:
    """Median µs per execution of the one-ADD model in each mode (and the bare floor on CUDA), the modes
    alternating round by round."""
    bm = add_model()
    pm = device.prepare_model(bm.model)
    request = _request(bm.input_shape)
    runs = {m: _mode(m, pm, request, 1)[0] for m in ("sync", "burst", "reusable")}
    if device.name.startswith("cuda"):
        runs["bare CuPy floor"] = bare_cupy_add(device)
    medians = alternate_all(runs, ADD_ROUNDS)
    out = np.frombuffer(request.pools[1].view(), np.float32, 16)
    np.testing.assert_array_equal(out, 2.0)
    return {k: v * 1e6 for k, v in medians.items()}


# ---- pytest ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_mobilenet_vs_gpu_peers(benchmark, cuda, name, batch):
    pytest.importorskip("onnxruntime")
    x, runs = mobilenet_runs(cuda, name, batch)
    ours = runs.pop("ours")
    peer_ms = {label: [] for label in runs}

    def run_peers():
        for label, run in runs.items():
            t0 = time.perf_counter()
            run(x)
            peer_ms[label].append((time.perf_counter() - t0) * 1e3)
        return (x,), {}

    benchmark.group = f"{name} batch {batch}"
    benchmark.pedantic(ours, setup=run_peers, rounds=ROUNDS, iterations=1)
    if benchmark.stats is not None:
        mine = benchmark.stats.stats.median * 1e3
        benchmark.extra_info.update(device=cuda.name, ours_median_ms=mine,
                                    **{f"{k} median_ms": statistics.median(v) for k, v in peer_ms.items()})


def test_add_overhead(benchmark, cuda):
    medians = add_modes(cuda)
    benchmark.extra_info.update({f"{k} median_us": v for k, v in medians.items()})


# ---- the results page -----------------------------------------------------------------------------

def write_page(path: str, device_name: str, rounds: int = ROUNDS) -> str:
    device = gd.get_device(device_name)
    backend = device.backend
    lines = [f"# {device.name} ({backend.device_name}) against GPU peers — {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC",
             "",
             f"Machine: {cpu_model()}, {os.cpu_count()} CPUs, load before {load_average()}; device "
             f"{device.name}: {backend.device_name} ({backend.runtime_version}).", "",
             f"Command: `python -m benchmarks.test_cuda_gpu --device {device_name} --out PAGE`.  One process; "
             f"every peer runs in turn each round ({rounds} rounds after 3 warm-ups; medians, host input in "
             "and host output back for everyone); same weights (the zoo model's ONNX export), outputs "
             "compared before timing.", "",
             "| model (float32, 1.0, 224²) | batch | runner | ms | ours ÷ runner |", "|---|---|---|---|---|"]
    for name in sorted(MODELS):
        for batch in BATCHES:
            x, runs = mobilenet_runs(device, name, batch)
            medians = alternate_all({label: (lambda run=run: run(x)) for label, run in runs.items()}, rounds)
            for label, t in medians.items():
                lines.append(f"| {name} | {batch} | {label} | {t * 1e3:.3f} | {medians['ours'] / t:.2f} |")
            print("\n".join(lines[-len(medians):]), flush=True)
    if device.name.startswith("cuda"):
        peak = cublas_peak_gflops(device)
        lines += ["", "## Layers: the GPU's kernels against the CPU's, on the GPU", "",
                  "Device time of each layer's kernels (median of 20 rounds, the two alternating); cuBLAS "
                  f"float32 peak on a {PEAK_N}² matmul: {peak:.0f} GFLOP/s.", ""]
        for title, specs, (cpu_label, overrides) in (
                ("GEMM: gemm.cl in work groups", GEMM_LAYERS, CPU_GEMM),
                ("depthwise: conv_depthwise_vector.cl, 4 channels per work item", DEPTHWISE_LAYERS, CPU_DEPTHWISE)):
            gemm = specs is GEMM_LAYERS
            lines += [f"| layer (+RELU6) | {title}: µs | GFLOP/s | % of cuBLAS | {cpu_label}: µs | GFLOP/s | speed-up |"
                      + (" cuBLAS, same product: µs |" if gemm else ""), "|---|---|---|---|---|---|---|" + ("---|" if gemm else "")]
            for spec, r in zip(specs, layer_ab_rows(device, specs, overrides)):
                lines.append(f"| {r['layer']} | {r['gpu µs']:.1f} | {r['gpu GFLOP/s']:.0f} | "
                             f"{100 * r['gpu GFLOP/s'] / peak:.1f} | {r['cpu µs']:.1f} | "
                             f"{r['cpu GFLOP/s']:.0f} | {r['cpu µs'] / r['gpu µs']:.2f}× |"
                             + (f" {cublas_same_shape_us(device, spec):.1f} |" if gemm else ""))
            lines.append("")
    add = add_modes(device)
    lines += ["", "## One ADD of 16 floats", "", f"Median µs per execution over {ADD_ROUNDS} rounds, modes alternating:", "",
              "| mode | µs |", "|---|---|", *(f"| {k} | {v:.1f} |" for k, v in add.items()), "",
              f"Goal: burst ≤ {GOAL_BURST_US:.0f} µs: {add['burst']:.1f} µs — "
              + ("met." if add["burst"] <= GOAL_BURST_US else "not met."), ""]
    text = "\n".join(lines)
    with open(path, "w") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write the CUDA-against-GPU-peers results page.")
    parser.add_argument("--out", required=True, help="markdown file to write")
    parser.add_argument("--device", default="cuda", help="device name (default: the first CUDA device)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(write_page(args.out, args.device, args.rounds))
