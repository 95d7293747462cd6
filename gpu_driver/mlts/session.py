"""One model's benchmark: import, prepare (cold and from the compilation cache), time executions
alternating with the LiteRT peer on the same input, and judge the outputs.

Each timed execution, ours or the peer's, is measured in its engine's steady state
(:func:`gpu_driver.latency.steady_latency_ms`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import tflite
from ..errors import DriverError
from ..latency import steady_latency_ms
from .accuracy import OutputVerdict, fp16_storage_model, verdict
from .litert import LiteRT

log = logging.getLogger(__name__)


@dataclass
class Latency:
    """Wall times of executions, milliseconds."""

    samples: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.samples, q)) if self.samples else float("nan")

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


@dataclass
class ModelResult:
    name: str
    device: str
    operations: int
    prepare_cold_s: float
    prepare_cached_s: float | None
    ours: Latency
    peer: Latency | None
    peer_name: str | None
    accuracy: list[OutputVerdict]
    error: str | None = None
    threads: int | None = None        # the peer's threads (None without a peer)

    @property
    def ratio(self) -> float | None:
        """Our median latency ÷ the peer's (None without a peer)."""
        if self.peer is None or not self.peer.samples:
            return None
        return self.ours.median / self.peer.median


#: integer inputs drawn at random by default: their type's range, clipped to this
DEFAULT_INT_RANGE = (-128, 255)


def random_inputs(specs, low: float, high: float, seed: int = 0,
                  int_range: tuple[int, int] = DEFAULT_INT_RANGE) -> list[np.ndarray]:
    """One input per spec: floats uniform in [low, high), integers uniform in ``int_range``
    (inclusive) clipped to their type's range."""
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        shape = tuple(1 if d < 0 else d for d in s.shape)
        if s.dtype.kind == "f":
            out.append(rng.uniform(low, high, shape).astype(s.dtype))
        elif s.dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            info = np.iinfo(s.dtype)
            out.append(rng.integers(max(info.min, int_range[0]), min(info.max, int_range[1]) + 1,
                                    shape).astype(s.dtype))
    return out


@contextlib.contextmanager
def _no_private_cache(device):
    before = getattr(device, "private_cache", True)
    device.private_cache = False
    try:
        yield
    finally:
        device.private_cache = before


def _prepare_times(device, model) -> tuple[object, float, float | None]:
    """(prepared model, cold preparation seconds, preparation from the compilation cache seconds)."""
    with _no_private_cache(device):
        t0 = time.perf_counter()
        prepared = device.prepare_model(model)
        cold = time.perf_counter() - t0
    n_model, n_data = device.get_number_of_cache_files_needed()
    if not (n_model or n_data):
        return prepared, cold, None
    token = os.urandom(32)
    with tempfile.TemporaryDirectory() as tmp:
        files = [open(os.path.join(tmp, f"cache{k}"), "w+b") for k in range(n_model + n_data)]
        try:
            device.prepare_model(model, model_cache=files[:n_model], data_cache=files[n_model:], token=token)
            t0 = time.perf_counter()
            try:
                device.prepare_model_from_cache(files[:n_model], files[n_model:], token)
                cached = time.perf_counter() - t0
            except DriverError as exc:  # a model the device does not cache (control flow, dynamic shapes)
                log.info("%s: no preparation from the compilation cache: %s", device.name, exc.message)
                cached = None
        finally:
            for f in files:
                f.close()
    return prepared, cold, cached


def benchmark_model(path: str, device, runs: int = 50, warmup: int = 3, compare: str | None = None,
                    threads: int = 2, input_range: tuple[float, float] = (0.0, 1.0),
                    int_range: tuple[int, int] = DEFAULT_INT_RANGE, inputs: list[np.ndarray] | None = None,
                    progress: Callable[[str], None] = lambda message: None) -> ModelResult:
    """Benchmark one ``.tflite`` model on ``device`` (see the module docstring)."""
    name = os.path.basename(path)
    progress(f"{name}: importing")
    with open(path, "rb") as f:
        data = f.read()
    imported = tflite.load_model(data)
    feed = inputs if inputs is not None else random_inputs(imported.inputs, *input_range, int_range=int_range)
    progress(f"{name}: preparing on {device.name}")
    prepared, cold, cached = _prepare_times(device, imported.model)
    peer = LiteRT(data, threads) if compare == "litert" else None
    ours, theirs = Latency(), Latency() if peer else None
    for _ in range(warmup):
        prepared.execute(feed)
        if peer:
            peer.run(feed)
    for k in range(runs):  # alternating, so drift hits both sides alike
        ours.samples.append(steady_latency_ms(lambda: prepared.execute(feed)))
        if peer:
            theirs.samples.append(steady_latency_ms(lambda: peer.run(feed)))
        progress(f"{name}: {k + 1}/{runs} runs")
    accuracy = []
    if peer:
        progress(f"{name}: accuracy against LiteRT")
        outputs = prepared.execute(feed)
        expected = peer.run(feed)
        builtin = LiteRT(data, threads, xnnpack=False).run(feed)
        try:
            from ..runtime.discovery import get_device

            f16 = fp16_storage_model(imported.model)
            half_feed = [x.astype(np.float16) if x.dtype == np.float32 else x for x in feed]
            fp16_outputs = get_device("reference").prepare_model(f16).execute(half_feed)
        except DriverError as exc:  # a model the float16 reference cannot run: no relaxed bound
            log.info("no fp16-storage run of %s: %s", name, exc)
            fp16_outputs = [None] * len(expected)
        for spec, a, e, b, h in zip(imported.outputs, outputs, expected, builtin, fp16_outputs):
            accuracy.append(verdict(spec.name, a, e, b, h))
    return ModelResult(name, device.name, len(imported.model.main.operations), cold, cached, ours, theirs,
                       peer.name if peer else None, accuracy, threads=threads if peer else None)
