"""Compare pytest-benchmark JSON runs of two revisions as a markdown table.

    python benchmarks/compare_runs.py before=a1.json,a2.json after=b1.json,b2.json

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


def medians(path: str) -> dict[str, float]:
    with open(path) as f:
        data = json.load(f)
    return {b["name"]: b["stats"]["median"] for b in data["benchmarks"]}


def summarise(paths: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Median over runs of each benchmark's median, and of its ratio to its peer."""
    runs = [medians(p) for p in paths]
    times, ratios = {}, {}
    for name in runs[0]:
        times[name] = statistics.median(r[name] for r in runs if name in r)
        peer = PEERS.get(name)
        if peer and all(peer in r for r in runs):
            ratios[name] = statistics.median(r[name] / r[peer] for r in runs)
    return times, ratios


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} µs"


def table(before: list[str], after: list[str]) -> str:
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
    groups = dict(arg.split("=", 1) for arg in argv)
    if set(groups) != {"before", "after"}:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    print(table(groups["before"].split(","), groups["after"].split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
