"""Back-to-back ``gpu-driver calibrate`` runs, written as a result page: how far the figures move.

    python benchmarks/calibration_runs.py --out benchmarks/results/DATE-calibration-control-flow.md
        [--device opencl] [--runs 3]

Each run is its own process with a fresh state directory (so each one measures).  The page gives
every figure of every run with its spread, their mean and the largest deviation from the mean; the
raw figures go to a JSON file beside it.  Run it on an idle machine (the page records the load).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def calibrate_once(device: str) -> tuple[dict[str, float], dict[str, str]]:
    """One ``gpu-driver calibrate --device`` process: (figures as stored, spreads as printed)."""
    with tempfile.TemporaryDirectory() as state:
        r = subprocess.run([sys.executable, "-m", "gpu_driver", "calibrate", "--device", device],
                           capture_output=True, text=True, env={**os.environ, "GPU_DRIVER_STATE_DIR": state})
        if r.returncode:
            raise SystemExit(f"gpu-driver calibrate failed: {r.stderr}")
        stored = json.loads((Path(state) / "capabilities.json").read_text())
    (figures,) = [v for k, v in stored.items() if k.startswith(device) and isinstance(v, dict)]
    spreads = {}
    for line in r.stdout.splitlines():
        cells = line.split()
        if len(cells) == 3 and cells[0] in figures and cells[2].endswith("%"):
            spreads[cells[0]] = cells[2].replace("%", " %")
    return figures, spreads


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the result page (markdown) to write")
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs = [calibrate_once(args.device) for _ in range(args.runs)]
    names = list(runs[0][0])
    rows, raw = [], {}
    for name in names:
        values = [figures[name] for figures, _ in runs]
        mean = sum(values) / len(values)
        worst = max(abs(v - mean) / mean for v in values)
        cells = [f"{figures[name]:.4g} (spread {spreads.get(name, '?')})" for figures, spreads in runs]
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {mean:.4g} | {worst:.1%} |".replace("%", " %"))
        raw[name] = values
    heads = " | ".join(f"run {k + 1}" for k in range(args.runs))
    page = f"""# Calibration with the control-flow figures, {started[:10]}

Machine: {os.cpu_count()}-CPU {platform.system()} machine ({_cpu()}), no GPU; load average {load[0]:.2f} at the start.
Device: {args.device}.  Command, {args.runs} runs back to back at {started}, each its own process with a fresh
state directory: `python benchmarks/calibration_runs.py --device {args.device} --out {args.out}`
(`gpu-driver calibrate --device {args.device}` per run; raw figures in the JSON file beside this page).
Method (gpu_driver/calibration.py): per operand type the median of 41 paired device/reference
ratios; IF and WHILE: the median control-flow overhead (an IF, a 4-iteration WHILE around one ADD,
less the same ADDs without control flow) on the device over the reference's, paired in the same
alternating rounds.  Spread: interquartile range / median of the rounds' ratios (IF, WHILE: of
the device's and of the reference's overheads, added).

| figure | {heads} | mean | largest deviation from the mean |
|{'---|' * (args.runs + 3)}
""" + "\n".join(rows) + "\n"
    Path(args.out).write_text(page)
    Path(args.out).with_suffix(".json").write_text(json.dumps(
        {"date": started, "machine": _cpu(), "cpus": os.cpu_count(), "load": load[0], "device": args.device,
         "figures": raw}, indent=1) + "\n")
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
