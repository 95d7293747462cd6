"""MobileNet v1/v2 on PoCL compiled for each target CPU (GPU_DRIVER_POCL_TARGET_CPU).

    python -m benchmarks.pocl_target_cpu --out benchmarks/results/<date>-pocl-target-cpu.md

PoCL's target CPU is fixed for a process (gpu_driver/backends/pocl_host_cpu.py), so the peers cannot
alternate within one process: each round starts one process per target CPU, in turn, and each
process times its executions (medians).  The page gives the median over the rounds and every round.
"""
from __future__ import annotations

import statistics
import sys

from .by_process import alternate_and_describe, main, page_start, write_text

#: the AVX-512 CPU the driver picks on an AVX-512 host, and the AVX2 one
TARGETS = ("skylake-avx512", "haswell")
MODELS = ("mobilenet_v1", "mobilenet_v2")

_ONE_PROCESS = r"""
import json, statistics, time
import gpu_driver as gd
from gpu_driver import zoo
device = gd.get_device("opencl")
times = {}
for name in %(models)r:
    bm = getattr(zoo, name)()
    prepared = device.prepare_model(bm.model)
    x = bm.random_input()
    for _ in range(5):
        prepared.execute([x])
    runs = []
    for _ in range(%(runs)d):
        t0 = time.perf_counter()
        prepared.execute([x])
        runs.append(time.perf_counter() - t0)
    times[name] = statistics.median(runs) * 1e3
print(json.dumps({"version": device.get_version_string(), "ms": times}))
"""


def write_page(path: str, rounds: int = 4, runs: int = 40) -> str:
    results, machine = alternate_and_describe({t: t for t in TARGETS}, "GPU_DRIVER_POCL_TARGET_CPU",
                                              _ONE_PROCESS % {"models": MODELS, "runs": runs}, rounds)
    lines = page_start("PoCL target CPU: MobileNet compiled for AVX-512 and for AVX2",
                       f"{machine} PoCL as `opencl`.",
                       "Command: `python -m benchmarks.pocl_target_cpu --out PAGE`. PoCL's target CPU is fixed per "
                       f"process, so the peers alternate by process: {rounds} rounds, each one process per target "
                       f"CPU in turn; each process prepares both models and takes the median of {runs} executions "
                       "(`PreparedModel.execute` with its copies) after 5 warm-ups.", "",
                       "| target CPU | mobilenet_v1 ms | mobilenet_v2 ms |", "|---|---|---|")
    medians = {t: {m: statistics.median(p["ms"][m] for p in results[t]) for m in MODELS} for t in TARGETS}
    for t in TARGETS:
        lines.append(f"| {t} | {medians[t]['mobilenet_v1']:.2f} | {medians[t]['mobilenet_v2']:.2f} |")
    base, wide = TARGETS[1], TARGETS[0]
    lines += ["", f"{wide} ÷ {base}: mobilenet_v1 "
                  f"**{medians[wide]['mobilenet_v1'] / medians[base]['mobilenet_v1']:.2f}**, mobilenet_v2 "
                  f"**{medians[wide]['mobilenet_v2'] / medians[base]['mobilenet_v2']:.2f}**.", "",
              "## Every round", "", "| round | target CPU | mobilenet_v1 ms | mobilenet_v2 ms |", "|---|---|---|---|"]
    for r in range(rounds):
        for t in TARGETS:
            ms = results[t][r]["ms"]
            lines.append(f"| {r + 1} | {t} | {ms['mobilenet_v1']:.2f} | {ms['mobilenet_v2']:.2f} |")
    lines += ["", "Devices: " + "; ".join(f"{t}: {results[t][0]['version']}" for t in TARGETS), ""]
    return write_text(path, lines)


if __name__ == "__main__":
    sys.exit(main(__doc__, write_page, rounds=4, runs=40))
