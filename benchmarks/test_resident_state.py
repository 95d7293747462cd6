"""Resident state vs state round-tripped through shared memory: 100 steps of a recurrent cell
(h' = tanh(FC(x) + FC(h)), tests/memory/recurrent.py) on the OpenCL device.

* **domain**: the state lives in two memory-domain driver buffers (ping-pong, see recurrent.py);
  only the step input x (shared memory) is uploaded.
* **shared**: the state lives in two shared-memory pools; every step uploads x and h and downloads h'.

Both variants run the same prepared model with preallocated pools through execute_synchronously, so
the difference is the state traffic only.  Bytes moved come from the backend's transfer counters;
time is the best of REPEATS runs of 100 steps, the two variants alternating run by run.  Results
(with the machine's `lscpu` model name, the load average and the date) are written to
benchmarks/results/<date>-resident-state.md; the byte ratios are asserted.

Run: ``python -m pytest benchmarks/test_resident_state.py -q -s``; on another accelerator, name it in
``GPU_DRIVER_BENCH_DEVICE`` (``cuda:0``): the page is then ``<date>-resident-state-cuda.md``.
"""
from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from benchmarks.machine import cpu_model, load_average
from tests.memory.recurrent import ResidentRecurrence, recurrent_model

STEPS = 100
REPEATS = 25
CONFIGS = [(1, 64, 256), (64, 16, 128), (16, 256, 1024)]  # (batch, inputs, units)
RESULTS = Path(__file__).parent / "results"


DEVICE_ENV = "GPU_DRIVER_BENCH_DEVICE"


def _device():
    """The OpenCL device (as the ``pocl`` fixture), or the device named in GPU_DRIVER_BENCH_DEVICE."""
    wanted = os.environ.get(DEVICE_ENV, "opencl")
    try:
        return gd.get_device(wanted)
    except gd.DriverError:
        pytest.skip(f"no {wanted} device")


class SharedRecurrence:
    """The control: state ping-pongs between two shared-memory pools (host round trip every step)."""

    def __init__(self, prepared, h0: np.ndarray, x_pool):
        self.prepared = prepared
        self.h = [gd.SharedMemory.from_bytes(h0), gd.SharedMemory(h0.nbytes)]
        self.x_pool, self.h_bytes = x_pool, h0.nbytes
        self.x_bytes = x_pool.size
        self.n = 0

    def step(self):
        src, dst = self.h[self.n % 2], self.h[(self.n + 1) % 2]
        req = Request([RequestArgument(DataLocation(0, 0, self.x_bytes)),
                       RequestArgument(DataLocation(1, 0, self.h_bytes))],
                      [RequestArgument(DataLocation(2, 0, self.h_bytes))], [self.x_pool, src, dst])
        self.prepared.execute_synchronously(req)
        self.n += 1

    def state(self) -> np.ndarray:
        return self.h[self.n % 2].array(np.float32).copy()


def _run(runners: dict, counters) -> dict[str, tuple[float, dict]]:
    """Best time of REPEATS runs of STEPS steps per runner, the runners alternating run by run (the
    order rotating), so both see the same machine; with each runner's transfer counters of one run."""
    best = {name: float("inf") for name in runners}
    moved = {}
    names = list(runners)
    for r in range(REPEATS):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runner = runners[name]
            counters.reset()
            t0 = time.perf_counter()
            for _ in range(STEPS):
                runner.step()
            best[name] = min(best[name], time.perf_counter() - t0)
            moved[name] = counters.snapshot()
    return {name: (best[name], moved[name]) for name in names}


def test_resident_state_vs_shared_memory():
    device = _device()
    counters = device.backend.allocator.counters
    rows = []
    for batch, inputs, units in CONFIGS:
        model = recurrent_model(batch, inputs, units)
        prepared = device.prepare_model(model)
        rng = np.random.default_rng(0)
        h0 = rng.standard_normal((batch, units)).astype(np.float32)
        x = gd.SharedMemory.from_bytes(rng.standard_normal((batch, inputs)).astype(np.float32))
        domain = ResidentRecurrence(device, prepared, h0, x)
        shared = SharedRecurrence(prepared, h0, x)
        domain.step(), shared.step()  # warm-up (kernels, first-touch)
        measured = _run({"domain": domain, "shared": shared}, counters)
        (t_dom, c_dom), (t_sh, c_sh) = measured["domain"], measured["shared"]
        np.testing.assert_allclose(domain.state().ravel(), shared.state(), rtol=1e-4, atol=1e-5)
        state_bytes = batch * units * 4
        bytes_dom = c_dom["h2d_bytes"] + c_dom["d2h_bytes"]
        bytes_sh = c_sh["h2d_bytes"] + c_sh["d2h_bytes"]
        # the domain run moves x only; the shared run moves x, h in and h' out every step
        assert c_dom["d2h_bytes"] == 0 and c_dom["h2d_bytes"] == STEPS * batch * inputs * 4
        assert bytes_sh == bytes_dom + 2 * STEPS * state_bytes
        rows.append((batch, inputs, units, state_bytes, bytes_dom, bytes_sh, t_dom, t_sh))
    _write(device, rows)


def _write(device, rows) -> None:
    today = datetime.date.today().isoformat()
    lines = [
        f"# Resident state vs shared-memory round trip — {today}",
        "",
        f"- machine: {cpu_model()} (`lscpu` model name)",
        f"- device: {device.name} — {device.backend.device_name} ({device.backend.runtime_version})",
        f"- workload: {STEPS} steps of h' = tanh(FC(x) + FC(h)), float32; best of {REPEATS} runs, the two "
        "variants alternating run by run",
        f"- load average (1, 5, 15 min) at the end: {load_average()}",
        "- domain = state in memory-domain driver buffers (on the device); shared = state in shared memory",
        "- bytes = host↔device bytes from the backend's transfer counters, both directions, whole run",
        "",
        "| batch×inputs→units | state bytes | bytes domain | bytes shared | bytes ratio shared/domain "
        "| time domain (ms) | time shared (ms) | time ratio shared/domain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for batch, inputs, units, sb, bd, bs, td, ts in rows:
        lines.append(f"| {batch}×{inputs}→{units} | {sb} | {bd} | {bs} | {bs / bd:.2f} | {td * 1e3:.1f} | "
                     f"{ts * 1e3:.1f} | {ts / td:.2f} |")
    lines += ["", "State bytes that cross host↔device between executions: 0 with domain buffers "
              "(asserted), 2 × state bytes per step with shared memory.",
              "On a CPU OpenCL device (PoCL) device memory is host memory, so an avoided transfer is a",
              "memcpy of a few KiB: the time ratio weighs two copy commands per step against the host work",
              "of binding the buffers in place, and run-to-run noise on a shared machine is of the same order;",
              "the byte counts are the device-independent measure.  On a discrete GPU each avoided byte",
              "crosses the bus.", ""]
    RESULTS.mkdir(exist_ok=True)
    text = "\n".join(lines)
    kind = device.name.split(":")[0]
    (RESULTS / f"{today}-resident-state{'' if kind == 'opencl' else '-' + kind}.md").write_text(text)
    print("\n" + text)
