"""The three shared TF Lite models on PoCL and on LiteRT (XNNPACK) with one CPU thread each and with
PoCL's default count (one per CPU the process may use, or POCL_MAX_PTHREAD_COUNT when set): how each
engine scales with its threads, and the latency ratio at each count.

    python -m benchmarks.thread_scaling --out benchmarks/results/<date>-thread-scaling.md

PoCL's worker count is fixed for a process (POCL_MAX_PTHREAD_COUNT, read when PoCL starts), so the
counts alternate by process: each round starts one process per count, in turn.  In a process,
LiteRT's interpreter gets the same count (as ``gpu-driver bench --threads N`` does); each model's
executions alternate between the engines, each timed in its steady state
(gpu_driver.latency.steady_latency_ms).  Medians per process; the page gives the median over the
rounds and every round.
"""
from __future__ import annotations

import statistics
import sys

from gpu_driver.backends.opencl import POCL_THREADS_SETTING, pocl_worker_threads

from .by_process import (SHARED_MODELS, alternate_and_describe, main, page_start, round_rows, shared_models_code,
                         write_text)

MODELS = SHARED_MODELS

_ONE_PROCESS = r"""
from gpu_driver.backends.opencl import pocl_worker_threads
from gpu_driver.latency import steady_latency_ms
from gpu_driver.mlts.litert import LiteRT
threads = pocl_worker_threads()
ours = {name: [] for name in models}
peer = {name: [] for name in models}
for name, (prepared, feed) in models.items():
    litert = LiteRT(open(%(folder)r + "/" + name + ".tflite", "rb").read(), threads)
    for _ in range(%(runs)d):
        ours[name].append(steady_latency_ms(lambda: prepared.execute(feed)))
        peer[name].append(steady_latency_ms(lambda: litert.run(feed)))
print(json.dumps({"threads": threads, "compute_units": device.backend.session.cl_device.max_compute_units,
                  "ours": {n: statistics.median(v) for n, v in ours.items()},
                  "litert": {n: statistics.median(v) for n, v in peer.items()}}))
"""


def write_page(path: str, rounds: int = 3, runs: int = 30) -> str:
    every = pocl_worker_threads()             # PoCL's default: one worker per CPU the process may use
    settings = {"1 thread": "1", f"{every} threads": str(every)}
    results, machine = alternate_and_describe(settings, POCL_THREADS_SETTING,
                                              shared_models_code(_ONE_PROCESS, runs), rounds)
    one, many = settings
    lines = page_start(
        f"Thread scaling: PoCL and LiteRT with 1 and {every} CPU threads",
        f"{machine} PoCL as `opencl`; LiteRT (`ai-edge-litert`, XNNPACK) with the same thread count.",
        "Command: `python -m benchmarks.thread_scaling --out PAGE`. PoCL's worker count is fixed per "
        f"process, so the counts alternate by process: {rounds} rounds, each one process per count in "
        f"turn. Each process times each model {runs} times per engine, alternating, each run after 50 ms "
        "of untimed runs of the same engine; medians. PoCL's device reported "
        + ", ".join(f"{results[label][0]['compute_units']} compute units with {label}" for label in settings)
        + ".", "")
    med = {label: {engine: {m: statistics.median(p[engine][m] for p in results[label]) for m in MODELS}
                   for engine in ("ours", "litert")} for label in settings}
    lines += [f"## Medians of the {rounds} rounds", "", "| model | threads | PoCL ms | LiteRT ms | PoCL ÷ LiteRT |",
              "|---|---|---|---|---|"]
    for m in MODELS:
        for label in settings:
            o, t = med[label]["ours"][m], med[label]["litert"][m]
            lines.append(f"| {m} | {label} | {o:.2f} | {t:.2f} | **{o / t:.2f}** |")
    for label in settings:
        geo = statistics.geometric_mean(med[label]["ours"][m] / med[label]["litert"][m] for m in MODELS)
        lines.append(f"| geometric mean | {label} | | | **{geo:.2f}** |")
    lines += ["", f"Speed-up from {one} to {many}:", "", "| model | PoCL | LiteRT |", "|---|---|---|"]
    for m in MODELS:
        lines.append(f"| {m} | {med[one]['ours'][m] / med[many]['ours'][m]:.2f} | "
                     f"{med[one]['litert'][m] / med[many]['litert'][m]:.2f} |")
    lines.append("")
    lines += ["## Every round", "", "| round | threads | model | PoCL ms | LiteRT ms |", "|---|---|---|---|---|"]
    lines += round_rows(results, MODELS, lambda p, label, m: f"{label} | {m} | {p['ours'][m]:.2f} | {p['litert'][m]:.2f}")
    return write_text(path, lines + [""])


if __name__ == "__main__":
    sys.exit(main(__doc__, write_page, rounds=3, runs=30, shared_models=True))
