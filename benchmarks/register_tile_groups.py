"""TF Lite models on PoCL with register-tile launches of few work groups split finer
(``LaunchTuning.fewest_groups``, the default 16) against the groups of at most 16 x 4 work items they
had before (``fewest_groups`` 0), in one process.

    python -m benchmarks.register_tile_groups --out benchmarks/results/<date>-register-tile-groups.md [MODEL.tflite ...]

The setting is read when a model is compiled, so each model is prepared twice (the compilation cache
off) and the two prepared models alternate: each round times each one 5 times after 50 ms of untimed
runs of the same one (its steady state); medians over the rounds.  Models: the three shared ones
unless paths are given.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from .by_process import MODELS_DIR, SHARED_MODELS, page_start, write_text
from .machine import cpu_model, load_average

SETTINGS = {"at most 16 x 4 per group (before)": 0, "split below 16 groups (default)": 16}


def _time_pair(device, imported, rounds: int) -> dict[str, float]:
    import numpy as np

    from gpu_driver.latency import warm_up
    tunings = [device.backend.tuning] + ([device.backend.inline.tuning] if getattr(device.backend, "inline", None)
                                         else [])
    rng = np.random.default_rng(0)
    feed = [rng.uniform(0.0, 1.0, s.shape).astype(s.dtype) for s in imported.inputs]
    prepared = {}
    default = tunings[0].fewest_groups
    try:
        for label, fewest in SETTINGS.items():
            for t in tunings:
                t.fewest_groups = fewest
            prepared[label] = device.prepare_model(imported.model)
    finally:
        for t in tunings:
            t.fewest_groups = default
    medians: dict[str, list[float]] = {label: [] for label in prepared}
    for _ in range(rounds):
        for label, pm in prepared.items():
            warm_up(lambda: pm.execute(feed))
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                pm.execute(feed)
                runs.append((time.perf_counter() - t0) * 1e3)
            medians[label].append(statistics.median(runs))
    return {label: statistics.median(v) for label, v in medians.items()}


def write_page(path: str, models: list[str], rounds: int) -> str:
    os.environ["GPU_DRIVER_PRIVATE_CACHE"] = "0"
    import gpu_driver as gd
    from gpu_driver import tflite
    device = gd.get_device("opencl")
    before = load_average()
    rows = []
    for model in models:
        times = _time_pair(device, tflite.load_model(model), rounds)
        old, new = times.values()
        rows.append(f"| {os.path.basename(model).removesuffix('.tflite')} | {old:.3f} | {new:.3f} | **{new / old:.3f}** |")
    lines = page_start(
        "Register-tile work groups split finer when a launch has few",
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; load average (1, 5, 15 min) before {before}, after "
        f"{load_average()}. PoCL as `opencl`, {device.backend.device_name}.",
        f"Command: `python -m benchmarks.register_tile_groups --out PAGE{'' if models == _shared() else ' MODEL…'}`. "
        f"Each model prepared twice in one process (compilation cache off), the two alternating for {rounds} "
        "rounds, each timed 5 times after 50 ms of untimed runs of itself; medians (`PreparedModel.execute`).",
        "",
        f"| model | {' ms | '.join(SETTINGS)} ms | default ÷ before |",
        "|---|---|---|---|",
        *rows,
        "")
    return write_text(path, lines)


def _shared() -> list[str]:
    return [str(MODELS_DIR / f"{m}.tflite") for m in SHARED_MODELS]


def main(argv: list[str] | None = None) -> int | str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("models", nargs="*")
    a = ap.parse_args(argv)
    models = a.models or _shared()
    missing = [m for m in models if not os.path.exists(m)]
    if missing:
        return f"no such model: {', '.join(missing)}"
    print(write_page(a.out, models, a.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
