"""Run the AOSP conformance cases on devices and report by operation.

    python -m tests.conformance.run_conformance [--device reference --device opencl:0]
        [--version V1_2] [--op ABS] [--name SUBSTRING] [--dynamic] [--sample N] [--failures N] [--json FILE]

Prints, per device, the share of good outcomes (pass, refusal above the device's feature level,
expected failure) and a table of the operations with other outcomes; ``--failures N`` lists the
first N failing cases with their detail.  A progress bar goes to stderr when it is a terminal.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

import gpu_driver
from gpu_driver import console

from .aosp_cases import GOOD, load, operation_names, run_case, versions


def subject(case: dict) -> str:
    """The operation a case tests: its first operation other than ADD (the lifetime variations
    wrap the tested operation in ADDs), else ADD."""
    names = operation_names(case)
    return next((n for n in names if n != "ADD"), names[0] if names else "?")


def select(args) -> list[dict]:
    cases = []
    for v in args.version or versions():
        for i, c in enumerate(load(v)):
            if i % args.sample:
                continue
            names = operation_names(c)
            if args.op and not any(op in names for op in args.op):
                continue
            if args.name and args.name not in c["name"]:
                continue
            cases.append(c)
    return cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", action="append", help="device name (default: every device)")
    parser.add_argument("--version", action="append", help="spec folder, e.g. V1_2 (default: all)")
    parser.add_argument("--op", action="append", help="only cases using this operation")
    parser.add_argument("--name", help="only cases whose name contains this")
    parser.add_argument("--dynamic", action="store_true", help="declare the outputs' dimensions unknown")
    parser.add_argument("--sample", type=int, default=1, metavar="N", help="only every N-th case of each spec folder")
    parser.add_argument("--failures", type=int, default=0, help="list this many failing cases per device")
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args(argv)
    devices = [gpu_driver.get_device(d) for d in args.device] if args.device else gpu_driver.get_devices()
    cases = select(args)
    report = {}
    for device in devices:
        by_op = collections.defaultdict(collections.Counter)
        totals = collections.Counter()
        failures = []
        with console.progress(total=len(cases), message=device.name) as progress:
            for case in cases:
                r = run_case(device, case, args.dynamic)
                totals[r.outcome] += 1
                op = subject(case)
                by_op[op][r.outcome] += 1
                if r.outcome not in GOOD:
                    failures.append((case["name"], r.outcome, r.detail))
                report.setdefault(device.name, []).append([case["version"], case["name"], r.outcome, r.detail])
                progress.advance(1, f"{device.name}: {case['name'][:40]}")
        good = sum(totals[k] for k in GOOD)
        print(f"{device.name}: {good}/{len(cases)} good ({100.0 * good / max(len(cases), 1):.1f} %) "
              f"{dict(totals)}")
        bad_ops = sorted((op, c) for op, c in by_op.items() if any(k not in GOOD for k in c))
        for op, c in bad_ops:
            print(f"    {op:32s} " + " ".join(f"{k}={v}" for k, v in sorted(c.items())))
        for name, outcome, detail in failures[:args.failures]:
            print(f"  {outcome:12s} {name}: {detail[:300]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
