"""The three shared TF Lite models with PoCL's idle worker threads spinning before they sleep (the
driver's default) and sleeping at once (``GPU_DRIVER_POCL_SPIN_US=0``, PoCL as it is).

    python -m benchmarks.pocl_worker_spin --out benchmarks/results/<date>-pocl-worker-spin.md

The setting is fixed for a process (gpu_driver/backends/pocl_worker_wait.py), so the settings
alternate by process: each round starts one process per setting, in turn.  Each process prepares
the models and then times one execution of each, round robin, ``runs`` times; it also reports the
process's CPU time per execution (all threads), since spinning workers use CPU time that sleeping
ones do not.  Medians per process; the page gives the median over the rounds and every round.
"""
from __future__ import annotations

import statistics
import sys

from .by_process import (SHARED_MODELS, alternate_and_describe, main, page_start, round_rows, shared_models_code,
                         write_text)

MODELS = SHARED_MODELS
#: setting label -> GPU_DRIVER_POCL_SPIN_US
SETTINGS = {"spin (default)": "", "sleep at once": "0"}

_ONE_PROCESS = r"""
from gpu_driver.backends import pocl_worker_wait
wall = {name: [] for name in models}
cpu = {name: 0.0 for name in models}
for _ in range(5):
    for prepared, feed in models.values():
        prepared.execute(feed)
for _ in range(%(runs)d):
    for name, (prepared, feed) in models.items():
        c0, t0 = time.process_time(), time.perf_counter()
        prepared.execute(feed)
        wall[name].append((time.perf_counter() - t0) * 1e3)
        cpu[name] += time.process_time() - c0
print(json.dumps({"spin": pocl_worker_wait.statistics() is not None, "version": device.get_version_string(),
                  "wall": {n: statistics.median(v) for n, v in wall.items()},
                  "cpu": {n: c * 1e3 / %(runs)d for n, c in cpu.items()}}))
"""


def write_page(path: str, rounds: int = 3, runs: int = 100) -> str:
    results, machine = alternate_and_describe(SETTINGS, "GPU_DRIVER_POCL_SPIN_US",
                                              shared_models_code(_ONE_PROCESS, runs), rounds)
    spin, sleep = SETTINGS
    lines = page_start(
        "PoCL's idle workers: spin before sleeping, or sleep at once",
        f"{machine} PoCL as `opencl`.",
        "Command: `python -m benchmarks.pocl_worker_spin --out PAGE`. The setting is fixed per process, "
        f"so the settings alternate by process: {rounds} rounds, each one process per setting in turn. "
        "Each process prepares face_detection_short_range, hand_landmark_lite and selfie_segmentation "
        f"and then times one execution of each, round robin, {runs} times. Wall: median of "
        "`PreparedModel.execute` with its copies; CPU: the process's CPU time (every thread) per "
        "execution, mean.", "",
        f"| model | wall, {spin} (ms) | wall, {sleep} (ms) | {sleep} ÷ {spin} | CPU, {spin} (ms) | "
        f"CPU, {sleep} (ms) |", "|---|---|---|---|---|---|")
    for m in MODELS:
        w = {label: statistics.median(p["wall"][m] for p in results[label]) for label in SETTINGS}
        c = {label: statistics.median(p["cpu"][m] for p in results[label]) for label in SETTINGS}
        lines.append(f"| {m} | {w[spin]:.2f} | {w[sleep]:.2f} | **{w[sleep] / w[spin]:.2f}** | "
                     f"{c[spin]:.2f} | {c[sleep]:.2f} |")
    lines += ["", "## Every round", "", "| round | setting | model | wall (ms) | CPU (ms) |", "|---|---|---|---|---|"]
    lines += round_rows(results, MODELS, lambda p, label, m: f"{label} | {m} | {p['wall'][m]:.2f} | {p['cpu'][m]:.2f}")
    installed = {label: results[label][0]["spin"] for label in SETTINGS}
    lines += ["", f"Workers changed to spin: {installed}. Device: {results[spin][0]['version']}", ""]
    return write_text(path, lines)


if __name__ == "__main__":
    sys.exit(main(__doc__, write_page, rounds=3, shared_models=True, runs=100))
