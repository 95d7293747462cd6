"""Compare pytest-benchmark JSON runs of two revisions as a markdown table.

    python benchmarks/compare_runs.py before=a1.json,a2.json after=b1.json,b2.json
    python benchmarks/compare_runs.py benchmarks/results/2026-11-23-restructure.json

The first form reads pytest-benchmark JSON files and, with ``--save SUMMARY.json``, writes the
per-run statistics the second form reads back (the committed record of a comparison).

Runs of the two revisions are made alternately (before, after, before, after) on one idle machine,
each in its own process.  Per benchmark the table gives the median of the per-run medians, and the
ratio to the peer measured in the same process (the reference device for MobileNet, bare PyOpenCL
for the per-execution overhead), which cancels most of the machine's drift between runs.
"""
from __future__ import annotations

import json
import statistics
import sys

#: benchmark name -> the peer it is divided by (same process)
PEERS = {
    "test_mobilenet_latency[mobilenet_v1-opencl]": "test_mobilenet_latency[mobilenet_v1-reference]",
    "test_mobilenet_latency[mobilenet_v2-opencl]": "test_mobilenet_latency[mobilenet_v2-reference]",
    "test_execute_synchronously_overhead[opencl]": "test_bare_pyopencl_one_wait",
    "test_execute_synchronously_overhead[reference]": "test_bare_pyopencl_one_wait",
    "test_numpy_api_overhead": "test_bare_pyopencl_one_wait",
}


STATS = ("median", "min", "mean", "stddev", "rounds")


def run_stats(path: str) -> dict:
    """One pytest-benchmark JSON file as {file, datetime, benchmarks: {name: stats}}."""
    with open(path) as f:
        data = json.load(f)
    return {"file": path.rsplit("/", 1)[-1], "datetime": data["datetime"],
            "machine": f"{data['machine_info']['cpu']['brand_raw']}, {data['machine_info']['cpu']['count']} vCPUs",
            "benchmarks": {b["name"]: {k: b["stats"][k] for k in STATS} for b in data["benchmarks"]}}


def summarise(runs: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """Median over runs of each benchmark's median, and of its ratio to its peer."""
    runs = [{name: s["median"] for name, s in r["benchmarks"].items()} for r in runs]
    times, ratios = {}, {}
    for name in runs[0]:
        times[name] = statistics.median(r[name] for r in runs if name in r)
        peer = PEERS.get(name)
        if peer and all(peer in r for r in runs):
            ratios[name] = statistics.median(r[name] / r[peer] for r in runs)
    return times, ratios


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} µs"


def table(before: list[dict], after: list[dict]) -> str:
    tb, rb = summarise(before)
    ta, ra = summarise(after)
    lines = ["| benchmark | before | after | after/before | before ÷ peer | after ÷ peer |",
             "|---|---|---|---|---|---|"]
    for name in sorted(set(tb) & set(ta)):
        peer = (f"{rb[name]:.3f}", f"{ra[name]:.3f}") if name in rb and name in ra else ("", "")
        lines.append(f"| {name} | {_fmt(tb[name])} | {_fmt(ta[name])} | {ta[name] / tb[name]:.3f} | "
                     f"{peer[0]} | {peer[1]} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    save = None
    if "--save" in argv:
        i = argv.index("--save")
        save, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    if len(argv) == 1 and argv[0].endswith(".json"):
        with open(argv[0]) as f:
            summary = json.load(f)
        print(table(summary["before"]["runs"], summary["after"]["runs"]))
        return 0
    groups = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if set(groups) != {"before", "after"}:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    summary = {side: {"runs": [run_stats(p) for p in groups[side].split(",")]} for side in ("before", "after")}
    if save:
        with open(save, "w") as f:
            json.dump(summary, f, indent=1)
    print(table(summary["before"]["runs"], summary["after"]["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
