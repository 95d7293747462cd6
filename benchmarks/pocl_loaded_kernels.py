"""The three shared TF Lite models run in turn in one process, with PoCL's limit of loaded kernels
raised (the driver's default) and at PoCL's own 128 (``GPU_DRIVER_POCL_LOADED_KERNELS=none``).

    python -m benchmarks.pocl_loaded_kernels --out benchmarks/results/<date>-pocl-loaded-kernels.md

The limit is fixed for a process (gpu_driver/backends/pocl_kernel_cache.py), so the settings alternate
by process: each round starts one process per setting, in turn.  Each process prepares the models
and then alternates, run after run, two ways of executing them: *alone* (three executions of one
model back to back, the last timed, for each model) and *in turn* (one timed execution of each
model, round robin, as an application running a pipeline of models does).  Medians per process;
the page gives the median over the rounds and every round.
"""
from __future__ import annotations

import statistics
import sys

from .by_process import (SHARED_MODELS, alternate_and_describe, main, page_start, round_rows, shared_models_code,
                         write_text)

MODELS = SHARED_MODELS
#: setting label -> GPU_DRIVER_POCL_LOADED_KERNELS
SETTINGS = {"raised (default)": "", "PoCL's 128": "none"}

_ONE_PROCESS = r"""
from gpu_driver.backends.pocl_kernel_cache import loaded_kernel_limit
alone = {name: [] for name in models}
in_turn = {name: [] for name in models}
def timed(prepared, feed):
    t0 = time.perf_counter()
    prepared.execute(feed)
    return (time.perf_counter() - t0) * 1e3
for _ in range(3):
    for prepared, feed in models.values():
        prepared.execute(feed)
for _ in range(%(runs)d):
    for name, (prepared, feed) in models.items():
        prepared.execute(feed)
        prepared.execute(feed)
        alone[name].append(timed(prepared, feed))
    for name, (prepared, feed) in models.items():
        in_turn[name].append(timed(prepared, feed))
print(json.dumps({"limit": loaded_kernel_limit(), "version": device.get_version_string(),
                  "alone": {n: statistics.median(v) for n, v in alone.items()},
                  "in_turn": {n: statistics.median(v) for n, v in in_turn.items()}}))
"""


def write_page(path: str, rounds: int = 3, runs: int = 60) -> str:
    results, machine = alternate_and_describe(SETTINGS, "GPU_DRIVER_POCL_LOADED_KERNELS",
                                              shared_models_code(_ONE_PROCESS, runs), rounds)
    lines = page_start(
        "PoCL's loaded kernels: three models run in turn in one process",
        f"{machine} PoCL as `opencl`.",
        "Command: `python -m benchmarks.pocl_loaded_kernels --out PAGE`. The limit is fixed per process, "
        f"so the settings alternate by process: {rounds} rounds, each one process per setting in turn. "
        "Each process prepares face_detection_short_range, hand_landmark_lite and selfie_segmentation "
        f"and then alternates {runs} times: each model *alone* (three executions back to back, the "
        "last timed) and the three *in turn* (one timed execution of each, round robin). "
        "Medians of `PreparedModel.execute` with its copies.", "",
        "| PoCL's loaded-kernel limit | model | alone (ms) | in turn (ms) | in turn ÷ alone |",
        "|---|---|---|---|---|")
    for label in SETTINGS:
        limit = results[label][0]["limit"]
        for m in MODELS:
            a = statistics.median(p["alone"][m] for p in results[label])
            t = statistics.median(p["in_turn"][m] for p in results[label])
            lines.append(f"| {label}: {limit} | {m} | {a:.2f} | {t:.2f} | **{t / a:.2f}** |")
    lines += ["", "## Every round", "", "| round | limit | model | alone (ms) | in turn (ms) |", "|---|---|---|---|---|"]
    lines += round_rows(results, MODELS,
                        lambda p, label, m: f"{p['limit']} | {m} | {p['alone'][m]:.2f} | {p['in_turn'][m]:.2f}")
    lines += ["", f"Device: {results[next(iter(SETTINGS))][0]['version']}", ""]
    return write_text(path, lines)


if __name__ == "__main__":
    sys.exit(main(__doc__, write_page, rounds=3, shared_models=True, runs=60))
