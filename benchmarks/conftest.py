"""Shared fixtures of the benchmark suites (pytest-benchmark)."""
import time

import numpy as np
import pytest

import gpu_driver as gd


@pytest.fixture(scope="session")
def pocl():
    try:
        return gd.get_device("opencl")
    except gd.DriverError:
        pytest.skip("no OpenCL device")


@pytest.fixture(scope="session")
def cuda():
    try:
        return gd.get_device("cuda")
    except gd.DriverError:
        pytest.skip("no CUDA device")


@pytest.fixture(scope="session")
def reference():
    return gd.get_device("reference")


@pytest.fixture(scope="session")
def machine_peak_gflops():
    """Measured float32 peak of this machine: a large numpy (BLAS) matmul, best of 5."""
    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(5))
    return 2 * n ** 3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
