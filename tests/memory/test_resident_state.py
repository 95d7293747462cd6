"""State stays resident: a recurrent cell whose state output of execution N is the state input of
execution N+1 through driver buffers; on OpenCL no state byte crosses host↔device between executions
(transfer counters), and every step equals the reference device's."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver as gd

from .recurrent import ResidentRecurrence, recurrent_model

STEPS = 12
INPUTS, UNITS = 16, 32


@pytest.fixture(scope="module")
def model():
    return recurrent_model(1, INPUTS, UNITS)


@pytest.mark.parametrize("x_kind", ["device_hardware_buffer", "shared_memory"])
def test_state_never_crosses_the_host(opencl, reference, model, x_kind):
    rng = np.random.default_rng(7)
    h0 = rng.standard_normal((1, UNITS)).astype(np.float32)
    xs = rng.standard_normal((STEPS, 1, INPUTS)).astype(np.float32)
    x_ref = gd.SharedMemory(INPUTS * 4)
    x_dev = gd.HardwareBuffer.blob(INPUTS * 4, device=opencl) if x_kind == "device_hardware_buffer" \
        else gd.SharedMemory(INPUTS * 4)
    ref = ResidentRecurrence(reference, reference.prepare_model(model), h0, x_ref)
    acc = ResidentRecurrence(opencl, opencl.prepare_model(model), h0, x_dev)
    counters = opencl.backend.allocator.counters
    for n in range(STEPS):
        x_ref.write(0, xs[n])
        x_dev.write(0, xs[n])  # the client's input write: counted h2d for the device buffer
        counters.reset()
        acc.step()
        moved = counters.snapshot()
        if x_kind == "device_hardware_buffer":  # the whole execution runs with zero host copies
            assert moved == {"h2d_bytes": 0, "h2d_count": 0, "d2h_bytes": 0, "d2h_count": 0}, n
        else:  # only the step input travels; the state does not
            assert moved["h2d_bytes"] == INPUTS * 4 and moved["d2h_bytes"] == 0, n
        ref.step()
        np.testing.assert_allclose(acc.state(), ref.state(), rtol=1e-5, atol=1e-5, err_msg=f"step {n}")
    # and against a plain numpy recurrence through the public execute() API, for good measure
    h = h0
    prepared = reference.prepare_model(model)
    for n in range(STEPS):
        (h,) = prepared.execute([xs[n], h])
    np.testing.assert_allclose(acc.state(), h, rtol=1e-5, atol=1e-5)


def test_state_round_trip_control(opencl, model):
    """The control: the same recurrence with the state in shared memory moves the state both ways."""
    prepared = opencl.prepare_model(model)
    h = np.zeros((1, UNITS), np.float32)
    x = np.ones((1, INPUTS), np.float32)
    counters = opencl.backend.allocator.counters
    counters.reset()
    for _ in range(3):
        (h,) = prepared.execute([x, h])
    moved = counters.snapshot()
    assert moved["h2d_bytes"] == 3 * (INPUTS + UNITS) * 4 and moved["d2h_bytes"] == 3 * UNITS * 4
