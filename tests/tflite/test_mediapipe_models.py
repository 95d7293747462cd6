"""Production models beyond ../shared/models, as MediaPipe ships them (tests/tflite/mediapipe_models,
copied from the mediapipe 0.10.14 wheel on PyPI, Apache-2.0): hand_recrop (PReLU, strided slices)
and face_detection_full_range_sparse (sparse weights behind DENSIFY, DEPTH_TO_SPACE).  Imported, run
on every device and judged against LiteRT (XNNPACK) with the whole-model accuracy rule
(gpu_driver.mlts.accuracy)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite
from gpu_driver.mlts.accuracy import verdict

pytest.importorskip("ai_edge_litert.interpreter")
from gpu_driver.mlts.litert import LiteRT  # noqa: E402

MODELS = Path(__file__).resolve().parent / "mediapipe_models"
#: model -> input range (MediaPipe's image converters: [-1, 1] for the face detector, [0, 1] else)
RANGES = {"hand_recrop": (0.0, 1.0), "face_detection_full_range_sparse": (-1.0, 1.0)}


def test_every_shipped_model_is_listed():
    assert sorted(p.stem for p in MODELS.glob("*.tflite")) == sorted(RANGES)


@pytest.mark.parametrize("device_name", [d.name for d in gpu_driver.get_devices()])
@pytest.mark.parametrize("name", sorted(RANGES))
def test_mediapipe_model_matches_litert(name, device_name):
    data = (MODELS / f"{name}.tflite").read_bytes()
    imported = tflite.load_model(data)
    device = gpu_driver.get_device(device_name)
    assert all(device.get_supported_operations(imported.model)), f"{name}: unsupported on {device_name}"
    lo, hi = RANGES[name]
    feed = [np.random.default_rng(5).uniform(lo, hi, s.shape).astype(np.float32) for s in imported.inputs]
    ours = device.prepare_model(imported.model).execute(feed)
    expected = LiteRT(data).run(feed)
    builtin = LiteRT(data, xnnpack=False).run(feed)
    for spec, a, e, b in zip(imported.outputs, ours, expected, builtin):
        v = verdict(spec.name, a, e, b)
        assert v.verdict == "fp32", f"{name} on {device_name}, {spec.name}: {v}"
