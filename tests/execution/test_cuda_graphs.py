"""CUDA graph replay (gpu_driver/backends/cuda.py): a launch list enqueued again with the same
arguments is recorded once and replayed.  The bookkeeping is checked on any machine; on a CUDA GPU a
burst and a state ping-ponging between two driver buffers run as replayed graphs and give the numpy
reference device's values."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.backends.base import DeviceBuffer
from gpu_driver.backends.cuda import CudaLaunch, CudaLauncher, LaunchGraphs
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from tests.memory.recurrent import ResidentRecurrence, recurrent_model

BATCH, INPUTS, UNITS = 2, 16, 32


def _cuda_devices():
    return [d for d in gd.get_devices() if d.name.startswith("cuda")]


@pytest.fixture
def cuda_device():
    devices = _cuda_devices()
    if not devices:
        pytest.skip("no CUDA GPU")
    return devices[0]


def test_rebinding_back_gives_the_same_key():
    """A launch bound back to earlier arguments gets its earlier argument tuple (interned), so the launch
    list's graph key repeats: a ping-pong binding alternates between two graphs, not new ones."""
    launcher = CudaLauncher.__new__(CudaLauncher)   # bookkeeping only: no stream is touched
    a, b, c = (DeviceBuffer(object(), 4) for _ in range(3))
    first = CudaLaunch(None, (1, 1, 1), (1, 1, 1), (a.handle, b.handle))
    second = CudaLaunch(None, (1, 1, 1), (1, 1, 1), (b.handle, c.handle))
    launches = [first, second]
    even = LaunchGraphs.key(launches)
    launcher.rebind(first, 1, c)
    odd = LaunchGraphs.key(launches)
    assert odd != even and first.args == (a.handle, c.handle)
    launcher.rebind(first, 1, b)
    assert LaunchGraphs.key(launches) == even
    launcher.rebind(first, 1, c)
    assert LaunchGraphs.key(launches) == odd


def test_a_list_is_recorded_on_its_second_enqueue_then_replayed():
    graphs = LaunchGraphs(record_after=2, capacity=2)
    launches = [CudaLaunch(None, (1, 1, 1), (1, 1, 1), (object(),)) for _ in range(3)]
    key = LaunchGraphs.key(launches)
    assert graphs.lookup(key, launches) == (None, False)   # first time: launched directly
    assert graphs.lookup(key, launches) == (None, True)    # second: record it
    graphs.store(key, "graph")
    assert graphs.lookup(key, launches) == ("graph", False) and graphs.recorded == 1
    for n in range(3):  # other lists push it out (capacity 2): it is recorded again when it returns
        other = [CudaLaunch(None, (1, 1, 1), (1, 1, 1), (object(),))]
        graphs.lookup(LaunchGraphs.key(other), other)
    assert graphs.lookup(key, launches) == (None, False)


@pytest.mark.cuda
def test_burst_replays_a_graph(cuda_device):
    model = recurrent_model(BATCH, INPUTS, UNITS)
    reference = gd.get_device("reference").prepare_model(model)
    prepared = cuda_device.prepare_model(model)
    graphs = cuda_device.backend.launcher.graphs
    rng = np.random.default_rng(3)
    x = gd.SharedMemory(BATCH * INPUTS * 4)
    h = gd.SharedMemory(BATCH * UNITS * 4)
    out = gd.SharedMemory(BATCH * UNITS * 4)
    request = Request([RequestArgument(DataLocation(0, 0, x.size)), RequestArgument(DataLocation(1, 0, h.size))],
                      [RequestArgument(DataLocation(2, 0, out.size))], [x, h, out])
    burst = prepared.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in request.pools]
    replayed = graphs.replayed
    for _ in range(5):
        xv = rng.standard_normal((BATCH, INPUTS)).astype(np.float32)
        hv = rng.standard_normal((BATCH, UNITS)).astype(np.float32)
        x.write(0, xv), h.write(0, hv)
        burst.execute_synchronously(request, slots)
        (expected,) = reference.execute([xv, hv])
        np.testing.assert_allclose(out.array(np.float32).reshape(BATCH, UNITS), expected, rtol=1e-5, atol=1e-5)
    assert graphs.replayed - replayed >= 4   # every execution after the first replays the graph


@pytest.mark.cuda
def test_ping_pong_state_replays_two_graphs(cuda_device):
    """Ten steps of a state ping-ponging between two driver buffers record two graphs in all (one per
    direction) and, once both are recorded, every step is one replay and nothing is recorded again."""
    model = recurrent_model(1, INPUTS, UNITS)
    rng = np.random.default_rng(5)
    h0 = rng.standard_normal((1, UNITS)).astype(np.float32)
    xs = rng.standard_normal((10, 1, INPUTS)).astype(np.float32)
    x = gd.SharedMemory(INPUTS * 4)
    acc = ResidentRecurrence(cuda_device, cuda_device.prepare_model(model), h0, x)
    graphs = cuda_device.backend.launcher.graphs
    counts = [(graphs.recorded, graphs.replayed)]
    reference = gd.get_device("reference").prepare_model(model)
    h = h0
    for step in xs:
        x.write(0, step)
        acc.step()
        counts.append((graphs.recorded, graphs.replayed))
        (h,) = reference.execute([step, h])
    np.testing.assert_allclose(acc.state(), h, rtol=1e-5, atol=1e-5)
    (recorded0, _), (recorded6, replayed6), (recorded10, replayed10) = counts[0], counts[6], counts[10]
    assert recorded10 - recorded0 == 2, counts
    assert (recorded10 - recorded6, replayed10 - replayed6) == (0, 4), counts
