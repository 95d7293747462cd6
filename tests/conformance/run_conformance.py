"""Run the AOSP conformance cases on devices and report by operation.

    python -m tests.conformance.run_conformance [--device reference --device opencl:0]
        [--version V1_2] [--op ABS] [--name SUBSTRING] [--dynamic] [--sample N [--offset K]] [--failures N] [--json FILE]
        [--jobs N] [--gpu-kernels]

Prints, per device, the share of good outcomes (pass, refusal above the device's feature level,
expected failure) and a table of the operations with other outcomes; ``--failures N`` lists the
first N failing cases with their detail.  A progress bar goes to stderr when it is a terminal.
``--jobs N`` runs the cases in N worker processes (each opens the device itself), in chunks.
``--gpu-kernels`` makes the accelerators take a GPU's kernel choices (backends.base.GPU_KERNEL_CHOICES):
the GPU's kernels checked on a CPU device (PoCL) too.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import multiprocessing
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
            if i % args.sample != args.offset:
                continue
            names = operation_names(c)
            if args.op and not any(op in names for op in args.op):
                continue
            if args.name and args.name not in c["name"]:
                continue
            cases.append(c)
    return cases


CHUNK = 25   # cases per task of a worker process

_worker: dict = {}   # in a worker process: its device and its selection of cases


def open_device(name: str, gpu_kernels: bool = False):
    """The device ``name``; with ``gpu_kernels``, taking a GPU's kernel choices (every lane of it):
    the GPU's kernels checked on a CPU device."""
    device = gpu_driver.get_device(name)
    if gpu_kernels:
        backend = getattr(device, "backend", None)
        if backend is None:
            raise SystemExit(f"--gpu-kernels: {name} compiles no kernels")
        for lane in (backend, getattr(backend, "inline", None)):
            if lane is not None:
                lane.tuning.choose_gpu_kernels(max(lane.tuning.compute_units, 2))
    return device


def _start_worker(device_name: str, args) -> None:
    _worker["device"] = open_device(device_name, args.gpu_kernels)
    _worker["cases"] = select(args)


def _run_chunk(dynamic: bool, indexes: list[int]) -> list[tuple[str, str]]:
    """(outcome, detail) of the selected cases ``indexes`` on the worker's device."""
    out = []
    for i in indexes:
        r = run_case(_worker["device"], _worker["cases"][i], dynamic)
        out.append((r.outcome, r.detail))
    return out


def _results(device, cases: list[dict], args, progress):
    """(case, outcome, detail) of every case on ``device``, in order: in this process, or in
    ``args.jobs`` worker processes (started fresh, not forked: an accelerator runtime in this process
    must not be inherited)."""
    if args.jobs <= 1:
        for case in cases:
            r = run_case(device, case, args.dynamic)
            progress.advance(1, f"{device.name}: {case['name'][:40]}")
            yield case, r.outcome, r.detail
        return
    chunks = [list(range(i, min(i + CHUNK, len(cases)))) for i in range(0, len(cases), CHUNK)]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_start_worker, initargs=(device.name, args)) as pool:
        futures = [pool.submit(_run_chunk, args.dynamic, chunk) for chunk in chunks]
        for chunk, future in zip(chunks, futures):
            for i, (outcome, detail) in zip(chunk, future.result()):
                yield cases[i], outcome, detail
            progress.advance(len(chunk), f"{device.name}: {cases[chunk[-1]]['name'][:40]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", action="append", help="device name (default: every device)")
    parser.add_argument("--version", action="append", help="spec folder, e.g. V1_2 (default: all)")
    parser.add_argument("--op", action="append", help="only cases using this operation")
    parser.add_argument("--name", help="only cases whose name contains this")
    parser.add_argument("--dynamic", action="store_true", help="declare the outputs' dimensions unknown")
    parser.add_argument("--sample", type=int, default=1, metavar="N", help="only every N-th case of each spec folder")
    parser.add_argument("--offset", type=int, default=0, metavar="K",
                        help="with --sample N: the cases numbered K modulo N (default 0: the first of each N)")
    parser.add_argument("--failures", type=int, default=0, help="list this many failing cases per device")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1: this one)")
    parser.add_argument("--gpu-kernels", action="store_true",
                        help="the accelerators take a GPU's kernel choices (work-group GEMM and softmax, thin "
                             "depthwise work items): the GPU's kernels checked on any device")
    args = parser.parse_args(argv)
    if args.sample < 1 or not 0 <= args.offset < args.sample:
        parser.error(f"--sample must be at least 1 and --offset in [0, {args.sample}): got {args.sample}, {args.offset}")
    if args.device:
        devices = [open_device(d, args.gpu_kernels) for d in args.device]
    else:
        devices = [open_device(d.name, args.gpu_kernels) for d in gpu_driver.get_devices()
                   if not args.gpu_kernels or getattr(d, "backend", None) is not None]
    cases = select(args)
    report = {}
    for device in devices:
        by_op = collections.defaultdict(collections.Counter)
        totals = collections.Counter()
        failures = []
        with console.progress(total=len(cases), message=device.name) as progress:
            for case, outcome, detail in _results(device, cases, args, progress):
                totals[outcome] += 1
                by_op[subject(case)][outcome] += 1
                if outcome not in GOOD:
                    failures.append((case["name"], outcome, detail))
                report.setdefault(device.name, []).append([case["version"], case["name"], outcome, detail])
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
