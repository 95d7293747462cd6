"""Shared fixtures for the compilation-cache tests: small models, cache-capable devices, temp files."""
import os
import tempfile

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import zoo
from gpu_driver.reference.device import ReferenceDevice


def chain_model(n_ops: int = 4, size: int = 64, seed: int = 0) -> gd.Model:
    """x → (ADD c_i | MUL c_i) × n_ops, with constants big enough to live in a pool (CONSTANT_REFERENCE)."""
    return zoo.chain_model(n_ops, (size,), seed=seed, value_range=(0.5, 1.5))


def model_input(size: int = 64) -> np.ndarray:
    return np.linspace(-2, 2, size, dtype=np.float32)


_OPENED: list = []  # files handed out by new_file(), closed after each test


def new_file():
    """A read-write temp file (unnamed), as a client would hand it over."""
    f = tempfile.TemporaryFile("w+b")
    _OPENED.append(f)
    return f


@pytest.fixture(autouse=True)
def _close_cache_files():
    yield
    while _OPENED:
        _OPENED.pop().close()


def new_files(n_model=1, n_data=1):
    return [new_file() for _ in range(n_model)], [new_file() for _ in range(n_data)]


def file_bytes(f) -> bytes:
    return os.pread(f.fileno(), os.fstat(f.fileno()).st_size, 0)


def put_bytes(f, data: bytes) -> None:
    os.ftruncate(f.fileno(), 0)
    os.pwrite(f.fileno(), data, 0)


def _device_names():
    names = ["reference"]
    try:
        dev = gd.get_device("opencl")
        if dev.caches_compilations:
            names.append("opencl")
    except gd.DriverError:
        pass
    return names


DEVICE_NAMES = _device_names()


@pytest.fixture(scope="session", autouse=True)
def _private_state_dir(tmp_path_factory):
    """Nothing these tests do may touch ~/.cache: the default state dir points into pytest's tmp."""
    old = os.environ.get("GPU_DRIVER_STATE_DIR")
    os.environ["GPU_DRIVER_STATE_DIR"] = str(tmp_path_factory.mktemp("state-default"))
    yield
    if old is None:
        os.environ.pop("GPU_DRIVER_STATE_DIR", None)
    else:
        os.environ["GPU_DRIVER_STATE_DIR"] = old


@pytest.fixture(scope="module", params=DEVICE_NAMES)
def device(request, tmp_path_factory):
    """A cache-capable device with its own state directory (tokens are random per test)."""
    state = tmp_path_factory.mktemp(f"state-{request.param}")
    if request.param == "reference":
        dev = ReferenceDevice()
        dev.cache_state_dir = state
        yield dev
        return
    dev = gd.get_device(request.param)
    old = getattr(dev, "cache_state_dir", None)
    dev.cache_state_dir = state
    yield dev
    dev.cache_state_dir = old


def token() -> bytes:
    return os.urandom(32)
