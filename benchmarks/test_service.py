"""Per-execution overhead of the driver service on PoCL: a one-ADD model (16 floats) executed locally and
through a server in another process (``python -m gpu_driver serve``), synchronously and in a burst.

* ``service-add16``: each of local/remote × sync/burst timed in its own benchmark (one after the other).
* ``service-add16-alternating``: the four run once per round, the order rotating, so each ratio compares
  calls made at the same moments; the medians (µs) and the ratios remote ÷ local go to extra_info
  and are printed.  Goal: remote burst ≤ 2 × local burst.

The remote burst sends only the request's arguments and the pools' numbers per execution; the server
keeps the pools mapped by slot and the validated binding (gpu_driver.service.session).

How to read: a remote execution adds two cross-process wake-ups (the server's session thread, then
the caller), two system calls each way and the message encoding to the local work, a roughly fixed
cost; the ratio therefore depends on how cheap the local path is at that moment.  The alternating
group is the comparison (same moments, same cache state); the one-after-the-other group shows each
path undisturbed.
"""
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

from benchmarks.test_overhead import _request

GROUP = "service-add16"
ROUNDS = 2000
ALTERNATING_ROUNDS = 1000
ROOT = Path(__file__).resolve().parents[1]


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
    ratios = {m: medians[f"remote {m}"] / medians[f"local {m}"] for m in ("sync", "burst")}
    benchmark.extra_info.update(median_us=medians, remote_over_local=ratios, goal_met=ratios["burst"] <= 2.0)
    print("\nservice overhead, one ADD of 16 floats on PoCL (median µs, alternating rounds):")
    for m in ("sync", "burst"):
        print(f"  {m:<6} local {medians[f'local {m}']:8.1f}  remote {medians[f'remote {m}']:8.1f}  "
              f"remote/local {ratios[m]:.2f}")
    print(f"  goal remote burst <= 2x local burst: {'met' if ratios['burst'] <= 2.0 else 'NOT met'}")
