"""The shared production TF Lite models (../shared/models) on PoCL and on the reference device
against LiteRT-XNNPACK (2 threads) in the same process, alternating: each round runs ours, then
LiteRT (the round's untimed setup), on the same input.  extra_info carries LiteRT's median and the ratio ours ÷ LiteRT."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import pytest

from gpu_driver import tflite

pytest.importorskip("ai_edge_litert.interpreter")
from gpu_driver.mlts.litert import LiteRT  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"  # ../shared/models beside the checkout
RANGES = {"face_detection_short_range": (-1.0, 1.0), "selfie_segmentation": (0.0, 1.0),
          "hand_landmark_lite": (0.0, 1.0)}
ROUNDS = {"opencl": 40, "reference": 5}


@pytest.mark.parametrize("device_name", ["opencl", "reference"])
@pytest.mark.parametrize("name", sorted(RANGES))
def test_model_vs_litert(benchmark, name, device_name, pocl, reference):
    path = MODELS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} not present")
    data = path.read_bytes()
    imported = tflite.load_model(data)
    device = pocl if device_name == "opencl" else reference
    prepared = device.prepare_model(imported.model)
    lo, hi = RANGES[name]
    feed = [np.random.default_rng(0).uniform(lo, hi, s.shape).astype(np.float32) for s in imported.inputs]
    peer = LiteRT(data, threads=2)
    for _ in range(3):
        prepared.execute(feed)
        peer.run(feed)
    peer_ms = []

    def run_peer():
        """pytest-benchmark's untimed setup of every round: LiteRT (timed here), then our arguments."""
        t0 = time.perf_counter()
        peer.run(feed)
        peer_ms.append((time.perf_counter() - t0) * 1e3)
        return (feed,), {}

    benchmark.group = name
    benchmark.pedantic(prepared.execute, setup=run_peer, rounds=ROUNDS[device_name], iterations=1)
    ours, theirs = benchmark.stats.stats.median * 1e3, statistics.median(peer_ms)
    benchmark.extra_info.update(device=device.name, ours_median_ms=ours, litert_median_ms=theirs,
                                ratio=ours / theirs, rounds=len(peer_ms))
