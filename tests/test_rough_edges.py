"""Rough edges a new user hits: every one answers with a ``DriverError`` (or a clear message), not a raw
Python exception, a silent short read, a silent inf, or a number without its unit."""
import dataclasses
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.hal import MeasureTiming
from gpu_driver.hal.types import NO_TIMING, UINT64_MAX, Timing
from gpu_driver.memory import PROT_READ
from gpu_driver.reference.device import ReferenceDevice

ROOT = Path(__file__).resolve().parents[1]
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE


def _error(call, *args) -> gd.DriverError:
    with pytest.raises(gd.DriverError) as info:
        call(*args)
    return info.value


# ---- memory pools -----------------------------------------------------------------------------------
def test_shared_memory_write_past_the_end_is_invalid_and_writes_nothing():
    mem = gd.SharedMemory(8)
    err = _error(mem.write, 4, b"\x07" * 16)
    assert err.status == INVALID
    assert err.message == "bytes [4, 20) are outside the 8-byte SharedMemory"
    assert mem.read(0, 8) == bytes(8)


def test_shared_memory_negative_offset_is_invalid_not_counted_from_the_end():
    mem = gd.SharedMemory(8)
    err = _error(mem.write, -4, b"x")
    assert err.status == INVALID and err.message == "bytes [-4, -3) are outside the 8-byte SharedMemory"
    assert mem.read(0, 8) == bytes(8)  # before: byte 4 was silently overwritten
    assert _error(mem.read, -1, 1).status == INVALID


def test_shared_memory_read_past_the_end_raises_instead_of_returning_fewer_bytes():
    mem = gd.SharedMemory.from_bytes(bytes(range(8)))
    err = _error(mem.read, 4, 16)
    assert err.status == INVALID and err.message == "bytes [4, 20) are outside the 8-byte SharedMemory"
    assert mem.read(4, 4) == bytes([4, 5, 6, 7])  # a range that fits still reads
    assert _error(mem.read, 0, -1).message.endswith("(negative length)")
    assert _error(mem.read, 1.5, 1).message == "SharedMemory offset must be an integer, got 1.5"


def test_shared_memory_larger_than_the_address_space_is_a_general_failure():
    err = _error(gd.SharedMemory, 2**50)
    assert err.status == FAILURE
    assert err.message.startswith(f"SharedMemory of {2**50} bytes: cannot map")
    assert "Cannot allocate memory" in err.message
    # a size the OS cannot even represent is the caller's mistake
    assert _error(gd.SharedMemory, 2**63).status == INVALID


def test_shared_memory_write_of_non_bytes_and_use_after_close_are_invalid():
    mem = gd.SharedMemory(8)
    err = _error(mem.write, 0, "text")
    assert err.status == INVALID and err.message.startswith("memory write needs contiguous bytes-like data, got str")
    mem.close()
    assert _error(mem.read, 0, 1).message == "the SharedMemory is closed"


def _mmap_fd(tmp_path, size=8, **kw):
    path = tmp_path / "pool.bin"
    path.write_bytes(bytes(range(size)))
    fd = os.open(path, os.O_RDWR)
    try:
        return gd.MmapFd(fd, size, **kw)
    finally:
        os.close(fd)


POOLS = {
    "SharedMemory": lambda tmp_path: gd.SharedMemory.from_bytes(bytes(range(8))),
    "MmapFd": _mmap_fd,
    "HardwareBuffer": lambda tmp_path: gd.HardwareBuffer.from_bytes(bytes(range(8))),
}


@pytest.mark.parametrize("kind", sorted(POOLS))
def test_every_memory_kind_checks_ranges_the_same_way(kind, tmp_path):
    mem = POOLS[kind](tmp_path)
    assert mem.read(6, 2) == bytes([6, 7])
    for call, args in [(mem.read, (4, 16)), (mem.read, (-2, 2)), (mem.write, (7, b"xy")), (mem.write, (-1, b"x")),
                       (mem.array, (np.float32, 4, 2)), (mem.array, (np.uint8, 9))]:
        err = _error(call, *args)
        assert err.status == INVALID, (call, args)
        assert err.message.startswith("bytes [") and err.message.endswith(f"outside the 8-byte {kind}"), err.message
    assert mem.read(0, 8) == bytes(range(8))  # nothing was written
    assert mem.array(np.uint16, 4).tolist() == [0x0504, 0x0706]  # to the end: still fine
    mem.close()


def test_mmap_fd_write_to_a_read_only_mapping_is_invalid(tmp_path):
    mem = _mmap_fd(tmp_path, prot=PROT_READ)
    err = _error(mem.write, 0, b"x")
    assert err.status == INVALID and err.message == "the MmapFd is mapped read-only"
    assert mem.read(0, 2) == bytes([0, 1])


def test_mmap_fd_read_write_mapping_of_a_read_only_fd_is_invalid(tmp_path):
    path = tmp_path / "ro.bin"
    path.write_bytes(bytes(16))
    fd = os.open(path, os.O_RDONLY)
    try:
        err = _error(gd.MmapFd, fd, 16)
    finally:
        os.close(fd)
    assert err.status == INVALID
    assert err.message.startswith(f"MmapFd read-write mapping of fd {fd}: cannot map 16 bytes")
    assert "Permission denied" in err.message


def test_hardware_buffer_use_after_close_is_invalid():
    hb = gd.HardwareBuffer.blob(8)
    hb.close()
    assert _error(hb.read, 0, 1).message == "the HardwareBuffer is closed"


# ---- CompilationCache -------------------------------------------------------------------------------
def test_compilation_cache_in_a_directory_the_os_cannot_create_is_a_general_failure():
    err = _error(gd.CompilationCache, "/proc/x")
    assert err.status == FAILURE
    assert err.message == "CompilationCache cannot create the directory '/proc/x': No such file or directory"


def test_compilation_cache_on_a_regular_file_is_invalid(tmp_path):
    path = tmp_path / "not_a_dir"
    path.write_text("x")
    err = _error(gd.CompilationCache, path)
    assert err.status == INVALID
    assert err.message == f"CompilationCache directory {str(path)!r} exists and is not a directory"


def test_compilation_cache_whose_directory_became_unusable_falls_back_to_an_uncached_prepare(tmp_path):
    cache = gd.CompilationCache(tmp_path / "cc")
    (tmp_path / "cc").rmdir()
    (tmp_path / "cc").write_text("now a file")
    model = _add_model(T.TENSOR_FLOAT32)
    prepared = cache.prepare(ReferenceDevice(), model)
    assert cache.last_outcome == "fallback"
    assert prepared.execute([np.ones(2, np.float32)])[0].tolist() == [2.0, 2.0]


# ---- float conversion of execute() inputs -----------------------------------------------------------
def _add_model(tensor_type):
    b = gd.ModelBuilder()
    x = b.add_input(tensor_type, [2])
    y = b.add_operand(tensor_type, [2])
    b.add_operation(O.ADD, [x, x, b.add_scalar(T.INT32, 0)], [y])
    b.set_outputs([y])
    return b.finish()


@pytest.fixture(scope="module")
def add_f32():
    return ReferenceDevice().prepare_model(_add_model(T.TENSOR_FLOAT32))


def test_a_finite_input_beyond_float32_is_invalid_without_a_warning(add_f32):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning would fail the test
        err = _error(add_f32.execute, [np.array([1e300, 1.0])])
    assert err.status == INVALID
    assert err.message == ("input 0 (TENSOR_FLOAT32): value 1e+300 is outside the finite range "
                           "[-3.4028235e+38, 3.4028235e+38] of float32 (1 such value(s)); "
                           "NaN and ±inf are accepted, finite values must fit")
    assert "value -1e+39" in _error(add_f32.execute, [[-1e39, 0.0]]).message


def test_nan_and_inf_inputs_and_values_that_fit_still_convert(add_f32):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (out,) = add_f32.execute([np.array([np.nan, -np.inf])])
        # the -inf input got through: ADD clamps an infinite result to -FLT_MAX (fused activation NONE)
        assert np.isnan(out[0]) and out[1] == -np.finfo(np.float32).max
        (out,) = add_f32.execute([np.array([1.0e38, 1e-300])])  # rounding and underflow are no overflow
    assert out.dtype == np.float32 and out.tolist() == [float(np.float32(2e38)), 0.0]


def test_values_beyond_float16_are_invalid():
    prepared = ReferenceDevice().prepare_model(_add_model(T.TENSOR_FLOAT16))
    err = _error(prepared.execute, [np.array([70000, 1], np.int32)])
    assert err.status == INVALID and "value 70000 is outside the finite range [-65504, 65504] of float16" in err.message
    assert _error(prepared.execute, [np.array([1e5, 0.0])]).status == INVALID
    assert prepared.execute([np.array([1.5, np.inf])])[0].tolist() == [3.0, np.inf]


# ---- Timing ----------------------------------------------------------------------------------------
def test_timing_shows_microseconds_and_unavailable():
    assert repr(Timing(812, 1000)) == "Timing(time_on_device=812 µs, time_in_driver=1000 µs)"
    assert repr(NO_TIMING) == "Timing(time_on_device=unavailable, time_in_driver=unavailable)"
    assert str(Timing(5, UINT64_MAX)) == "on device 5 µs, in driver unavailable"
    assert [f.name for f in dataclasses.fields(Timing)] == ["time_on_device", "time_in_driver"]
    assert Timing(5, 6) == Timing(5, 6) and Timing(5, 6).time_on_device == 5


def test_a_measured_timing_prints_with_units(add_f32):
    _, timing = add_f32.execute([np.ones(2, np.float32)], measure_timing=MeasureTiming.YES, return_timing=True)
    assert timing.time_in_driver != UINT64_MAX
    assert f"time_in_driver={timing.time_in_driver} µs" in repr(timing)


# ---- command line ----------------------------------------------------------------------------------
def _python(*args, code=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-c", code, *args] if code else [sys.executable, *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def test_version_flag_and_python_dash_m_gpu_driver():
    r = _python("-m", "gpu_driver", "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"gpu-driver {gd.__version__}\n"
    r = _python("-m", "gpu_driver")
    assert r.returncode == 2 and "usage: gpu-driver" in r.stderr  # the CLI's own usage message


@pytest.mark.parametrize("backend,module,title", [("cuda", "cupy", "CuPy"), ("opencl", "pyopencl", "PyOpenCL")])
def test_a_backend_device_without_its_runtime_hints_at_the_extra(backend, module, title):
    # the runtime module is made unimportable in the child process, as on a machine without it
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from gpu_driver.cli import main\n"
            f"sys.exit(main(['bench', '--device', {backend!r}]))")
    r = _python(code=code)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"no device named {backend!r}" in r.stderr
    assert f"need {title}, which is not installed: pip install 'gpu_driver[{backend}]'" in r.stderr
    assert f"pip install -e '.[{backend}]'" in r.stderr
