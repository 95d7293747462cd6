"""The three production TF Lite models (../shared/models) end to end: imported, run on every device,
and judged against LiteRT (XNNPACK) with the whole-model accuracy rule (gpu_driver.mlts.accuracy),
on inputs in each model's range."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite
from gpu_driver.mlts.accuracy import fp16_storage_model, verdict

pytest.importorskip("ai_edge_litert.interpreter")
from gpu_driver.mlts.litert import LiteRT  # noqa: E402

MODELS = Path(__file__).resolve().parents[2].parent / "shared" / "models"
#: model -> input range (shared/models/README.md)
RANGES = {"face_detection_short_range": (-1.0, 1.0), "selfie_segmentation": (0.0, 1.0),
          "hand_landmark_lite": (0.0, 1.0)}


def _path(name: str) -> Path:
    path = MODELS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
@pytest.mark.parametrize("name", sorted(RANGES))
def test_model_matches_litert(name, device_name):
    data = _path(name).read_bytes()
    imported = tflite.load_model(data)
    lo, hi = RANGES[name]
    feed = [np.random.default_rng(3).uniform(lo, hi, s.shape).astype(np.float32) for s in imported.inputs]
    device = gpu_driver.get_device(device_name)
    ours = device.prepare_model(imported.model).execute(feed)
    expected = LiteRT(data).run(feed)
    builtin = LiteRT(data, xnnpack=False).run(feed)
    half = gpu_driver.get_device("reference").prepare_model(fp16_storage_model(imported.model)).execute(
        [x.astype(np.float16) for x in feed])
    for spec, a, e, b, h in zip(imported.outputs, ours, expected, builtin, half):
        v = verdict(spec.name, a, e, b, h)
        assert v.verdict != "fail", f"{name} on {device_name}, {spec.name}: {v}"
