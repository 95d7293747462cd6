"""TF Lite models on PoCL and on the reference device against LiteRT-XNNPACK (as many threads as PoCL
has workers) in the same process, alternating: each round runs ours, then LiteRT (the round's untimed
setup), on the same input, each timed run after 50 ms of untimed runs of the same engine.  The
models: the shared production ones (../shared/models) and the float Keras models of
tests/tflite/keras_models (TensorFlow's converter output).  extra_info carries LiteRT's median and
the ratio ours ÷ LiteRT; with benchmarking enabled the last test writes
``benchmarks/results/<date>-tflite-models.md`` (the table and the geometric-mean ratio per device)."""
from __future__ import annotations

import datetime
import math
import os
import statistics
from pathlib import Path

import numpy as np
import pytest

from benchmarks.machine import cpu_model, load_average
from gpu_driver import tflite
from gpu_driver.backends.opencl import pocl_worker_threads

pytest.importorskip("ai_edge_litert.interpreter")
from gpu_driver.mlts.litert import LiteRT  # noqa: E402
from gpu_driver.latency import steady_latency_ms, warm_up  # noqa: E402

#: LiteRT's threads: the worker threads of PoCL's threaded device (gpu-driver bench does the same)
THREADS = pocl_worker_threads()
ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"  # ../shared/models beside the checkout
KERAS = ROOT / "tests" / "tflite" / "keras_models"
#: model -> (path, input range); Keras token inputs take ids in [0, 50)
RANGES = {"face_detection_short_range": (MODELS, (-1.0, 1.0)), "selfie_segmentation": (MODELS, (0.0, 1.0)),
          "hand_landmark_lite": (MODELS, (0.0, 1.0)),
          **{p.stem: (KERAS, (-1.0, 1.0)) for p in sorted(KERAS.glob("*_float.tflite"))}}
ROUNDS = {"opencl": 40, "reference": 5}
RESULTS = ROOT / "benchmarks" / "results"
#: (model, device) -> (ours median ms, LiteRT median ms, rounds), for the results page
MEASURED: dict[tuple[str, str], tuple[float, float, int]] = {}
LOAD_BEFORE = load_average()


def _feed(imported, lo: float, hi: float) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(lo, hi, s.shape).astype(s.dtype) if s.dtype.kind == "f"
            else rng.integers(0, 50, s.shape).astype(s.dtype) for s in imported.inputs]


@pytest.mark.parametrize("device_name", ["opencl", "reference"])
@pytest.mark.parametrize("name", list(RANGES))
def test_model_vs_litert(benchmark, name, device_name, pocl, reference):
    folder, (lo, hi) = RANGES[name]
    path = folder / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} not present")
    data = path.read_bytes()
    imported = tflite.load_model(data)
    device = pocl if device_name == "opencl" else reference
    prepared = device.prepare_model(imported.model)
    feed = _feed(imported, lo, hi)
    peer = LiteRT(data, threads=THREADS)
    for _ in range(3):
        prepared.execute(feed)
        peer.run(feed)
    peer_ms = []

    def run_peer():
        """pytest-benchmark's untimed setup of every round: LiteRT (timed here, after 50 ms of untimed
        runs of its own), then 50 ms of untimed runs of ours, so that each timed run finds its engine in
        steady state and the other's threads quiet (gpu_driver.latency.steady_latency_ms)."""
        peer_ms.append(steady_latency_ms(lambda: peer.run(feed)))
        warm_up(lambda: prepared.execute(feed))
        return (feed,), {}

    benchmark.group = name
    benchmark.pedantic(prepared.execute, setup=run_peer, rounds=ROUNDS[device_name], iterations=1)
    if benchmark.stats is None:  # --benchmark-disable: the model ran once, nothing to report
        return
    ours, theirs = benchmark.stats.stats.median * 1e3, statistics.median(peer_ms)
    benchmark.extra_info.update(device=device.name, ours_median_ms=ours, litert_median_ms=theirs,
                                ratio=ours / theirs, rounds=len(peer_ms))
    MEASURED[(name, device_name)] = (ours, theirs, len(peer_ms))


def test_write_results():
    """Write this run's table to benchmarks/results/<date>-tflite-models.md (benchmarking enabled)."""
    if not MEASURED:
        pytest.skip("nothing measured (benchmarks disabled or deselected)")
    today = datetime.date.today().isoformat()
    load_after = load_average()
    lines = [f"# TF Lite models against LiteRT, {today}", "",
             f"Machine: {cpu_model()} (`lscpu`), {os.cpu_count()} CPUs, no GPU; load average (1, 5, 15 min) before "
             f"{LOAD_BEFORE}, after {load_after}. PoCL as `opencl`.",
             "Command: `python -m pytest benchmarks/test_tflite_models.py -p no:cacheprovider "
             "--benchmark-json=benchmarks/results/<date>-tflite-models.json` (this page is written by its last "
             f"test). Each round runs ours, then LiteRT (XNNPACK, {THREADS} threads, PoCL's worker count) on "
             "the same input, in the same process; each timed run follows 50 ms of untimed runs of the same "
             "engine, in which the other engine's threads stop spinning (steady state, as MLTS's loop of "
             "inferences: `gpu_driver.latency.steady_latency_ms`); medians over the rounds. Models: the three "
             "shared MediaPipe models and the float Keras models of tests/tflite/keras_models.", "",
             "| model | device | ours (ms) | LiteRT (ms) | ours ÷ LiteRT | rounds |", "|---|---|---|---|---|---|"]
    for device_name in ("opencl", "reference"):
        for (name, dev), (ours, theirs, rounds) in MEASURED.items():
            if dev == device_name:
                lines.append(f"| {name} | {dev} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} | {rounds} |")
    lines.append("")
    shared = {name for name, (folder, _) in RANGES.items() if folder == MODELS}
    for device_name in ("opencl", "reference"):
        for label, names in (("the three shared models", shared), ("every model above", set(RANGES))):
            ratios = [ours / theirs for (name, dev), (ours, theirs, _) in MEASURED.items()
                      if dev == device_name and name in names]
            if ratios:
                mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
                goal = device_name == "opencl" and names is shared
                lines.append(f"- {device_name}, {label}: geometric mean of ours ÷ LiteRT over {len(ratios)} models "
                             f"**{mean:.2f}**" + (" (goal ≤ 1.0: " + ("met" if mean <= 1.0 else "not met") + ")"
                                                   if goal else ""))
    lines += ["", "The small Keras models run in well under a millisecond on LiteRT: there the per-execution "
              "and per-kernel launch costs of a CPU OpenCL device, not arithmetic, set our time."]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{today}-tflite-models.md").write_text("\n".join(lines) + "\n")
