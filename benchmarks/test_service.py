"""Per-execution overhead of the driver service on PoCL: a one-ADD model (16 floats) executed locally and
through a server in another process (``python -m gpu_driver serve``), synchronously and in a burst.

* ``service-add16``: each of local/remote × sync/burst timed in its own benchmark (one after the other).
* ``service-add16-alternating``: the four run once per round, the order rotating, so each ratio compares
  calls made at the same moments; the medians (µs) and the ratios remote ÷ local go to extra_info
  and are printed.  Goal: remote burst ≤ 2 × local burst.

A remote burst execution of a request it ran before is one compact message (a binding number, no
arguments); the server runs it on its local burst in the thread that read it and replies with a compact
result (gpu_driver.service.session).

How to read: a remote execution adds two cross-process wake-ups (the server's session thread, then
the caller), two system calls each way and the message encoding to the local work, a roughly fixed
cost; the ratio therefore depends on how cheap the local path is at that moment.  The alternating
group is the comparison (same moments, same cache state); the one-after-the-other group shows each
path undisturbed.

With benchmarking enabled, the last test writes ``benchmarks/results/<date>-service.md`` (machine, load
average before and after, both groups' medians, the ratios and the goal check):
``python -m pytest benchmarks/test_service.py -p no:cacheprovider --benchmark-json=benchmarks/results/<date>-service.json``.
"""
import datetime
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.zoo import add_model

from benchmarks.machine import cpu_model, load_average
from benchmarks.test_overhead import _request

GROUP = "service-add16"
ROUNDS = 2000
ALTERNATING_ROUNDS = 1000
GOAL_RATIO = 2.0  # remote burst ÷ local burst, median per execution
ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"

#: what this run measured, for the results file: "local sync", … -> median µs
ONE_AFTER_THE_OTHER: dict[str, float] = {}
ALTERNATING: dict[str, float] = {}
RUN_INFO: dict[str, str] = {"load_before": load_average()}


@pytest.fixture(scope="module")
def server_path(pocl):
    """A server in a process of its own, serving the PoCL device."""
    directory = tempfile.mkdtemp(prefix="gdb", dir="/tmp")
    path = Path(directory) / "bench.sock"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "gpu_driver", "serve", "--socket", str(path), "--devices",
                             pocl.name], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the benchmark server did not start")
                time.sleep(0.05)
            finally:
                probe.close()
        yield path
    finally:
        proc.terminate()
        proc.wait(10)
        os.rmdir(directory) if not os.listdir(directory) else None


@pytest.fixture(scope="module")
def modes(pocl, server_path):
    """{(where, mode): callable} for where in local/remote, mode in sync/burst; each checked once."""
    conn = gd.connect(server_path)
    bm = add_model()
    out = {}
    for where, device in (("local", pocl), ("remote", conn.get_device(pocl.name))):
        pm = device.prepare_model(bm.model)
        request = _request(bm.input_shape)
        burst = pm.configure_execution_burst()
        slots = [burst.cache_memory(p) for p in request.pools]
        out[where, "sync"] = lambda pm=pm, request=request: pm.execute_synchronously(request)
        out[where, "burst"] = lambda burst=burst, request=request, slots=slots: burst.execute_synchronously(request,
                                                                                                           slots)
        for fn in (out[where, "sync"], out[where, "burst"]):
            request.pools[1].write(0, bytes(64))
            fn()
            np.testing.assert_array_equal(request.pools[1].array(np.float32), 2.0)
    yield out
    conn.close()


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("mode", ["sync", "burst"])
def test_add16(benchmark, modes, where, mode):
    benchmark.group = GROUP
    benchmark.extra_info.update(where=where, mode=mode)
    benchmark.pedantic(modes[where, mode], rounds=ROUNDS, iterations=1, warmup_rounds=50)
    if benchmark.stats is not None:  # None under --benchmark-disable
        ONE_AFTER_THE_OTHER[f"{where} {mode}"] = benchmark.stats.stats.median * 1e6


def test_add16_alternating(benchmark, modes):
    names = list(modes)
    times = {n: [] for n in names}
    rotation = [0]

    def one_round():
        start = rotation[0] % len(names)
        rotation[0] += 1
        for name in names[start:] + names[:start]:
            t0 = time.perf_counter_ns()
            modes[name]()
            times[name].append((time.perf_counter_ns() - t0) / 1000)

    benchmark.group = GROUP + "-alternating"
    benchmark.pedantic(one_round, rounds=ALTERNATING_ROUNDS, iterations=1, warmup_rounds=20)
    medians = {f"{w} {m}": float(np.median(v)) for (w, m), v in times.items()}
    ratios = _ratios(medians)
    benchmark.extra_info.update(median_us=medians, remote_over_local=ratios, goal_met=ratios["burst"] <= GOAL_RATIO)
    if benchmark.stats is not None:
        ALTERNATING.update(medians)
    print("\nservice overhead, one ADD of 16 floats on PoCL (median µs, alternating rounds):")
    print("\n".join(_table(medians)))


def _ratios(medians: dict[str, float]) -> dict[str, float]:
    return {m: medians[f"remote {m}"] / medians[f"local {m}"] for m in ("sync", "burst")
            if f"remote {m}" in medians and f"local {m}" in medians}


def _table(medians: dict[str, float]) -> list[str]:
    ratios = _ratios(medians)
    lines = ["| mode | local (µs) | remote (µs) | remote − local (µs) | remote ÷ local |", "|---|---|---|---|---|"]
    for m, ratio in ratios.items():
        local, remote = medians[f"local {m}"], medians[f"remote {m}"]
        lines.append(f"| {m} | {local:.1f} | {remote:.1f} | {remote - local:.1f} | {ratio:.2f} |")
    if "burst" in ratios:
        lines += ["", f"Goal remote burst ≤ {GOAL_RATIO:.0f} × local burst: {ratios['burst']:.2f} — "
                  + ("**met**." if ratios["burst"] <= GOAL_RATIO else "**not met**.")]
    return lines


def test_write_results(pocl):
    """Write this run's tables to benchmarks/results/<date>-service.md (benchmarking enabled)."""
    if not (ONE_AFTER_THE_OTHER or ALTERNATING):
        pytest.skip("nothing measured (benchmarks disabled or deselected)")
    today = datetime.date.today().isoformat()
    load_after = load_average()
    lines = [f"# Driver service overhead on PoCL, {today}", "",
             f"- machine: {cpu_model()} (`lscpu`), {os.cpu_count()} CPUs; load average (1, 5, 15 min) before "
             f"{RUN_INFO['load_before']}, after {load_after}",
             f"- device: {pocl.name} — {pocl.backend.device_name}; model: one ADD of 16 floats "
             "(`gpu_driver.zoo.add_model`); remote: `python -m gpu_driver serve` in a process of its own, one "
             "connection",
             f"- command: `python -m pytest benchmarks/test_service.py -p no:cacheprovider "
             f"--benchmark-json=benchmarks/results/{today}-service.json` (this file is written by its last test)",
             ""]
    if ALTERNATING:
        lines += [f"## Alternating: the four once per round, the order rotating ({ALTERNATING_ROUNDS} rounds; "
                  "median per execution)", "", *_table(ALTERNATING), ""]
    if ONE_AFTER_THE_OTHER:
        lines += [f"## One after the other: each timed in its own benchmark ({ROUNDS} rounds; median)", "",
                  *_table(ONE_AFTER_THE_OTHER), ""]
    lines += ["Reading: a remote execution adds two cross-process wake-ups and the message handling on both",
              "sides to the local work, a roughly fixed cost, so the ratio depends on how cheap the local path is",
              "at that moment.  The alternating table compares calls made at the same moments (every call",
              "then also pays PoCL's worker wake-ups); one after the other shows each path undisturbed.", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{today}-service.md").write_text("\n".join(lines))
