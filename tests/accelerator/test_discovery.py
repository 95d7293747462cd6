"""Device discovery, naming, ranking, type and version strings."""
import re

import pytest

import gpu_driver as gd
from gpu_driver.hal.types import DeviceType

from .helpers import opencl_device


def test_names_and_ranking():
    devices = gd.get_devices()
    names = [d.name for d in devices]
    assert names[-1] == "reference"
    for n in names[:-1]:
        assert re.fullmatch(r"(opencl|cuda):\d+", n), n
    ranks = [d.rank for d in devices]
    assert ranks == sorted(ranks, reverse=True)
    cuda = [d for d in devices if d.name.startswith("cuda")]
    ocl = [d for d in devices if d.name.startswith("opencl")]
    if cuda and ocl:
        assert min(d.rank for d in cuda) > max(d.rank for d in ocl)
    gpus = [d.rank for d in ocl if d.get_type() == DeviceType.GPU]
    cpus = [d.rank for d in ocl if d.get_type() != DeviceType.GPU]
    if gpus and cpus:
        assert min(gpus) > max(cpus)
    # opencl devices are numbered 0..n-1
    assert sorted(int(n.split(":")[1]) for n in names if n.startswith("opencl")) == list(range(len(ocl)))


def test_pocl_device_is_the_default_without_gpu():
    dev = opencl_device()
    assert gd.get_device("opencl") is dev
    assert gd.get_device(dev.name) is dev
    assert gd.get_device().rank >= dev.rank > gd.get_device("reference").rank


def test_type_and_version_string():
    dev = opencl_device()
    assert dev.get_type() in (DeviceType.CPU, DeviceType.GPU, DeviceType.ACCELERATOR)
    if "pocl" in dev.get_version_string().lower() and "pthread" in dev.backend.device_name.lower():
        assert dev.get_type() == DeviceType.CPU
    v = dev.get_version_string()
    assert v.startswith(f"gpu_driver-{gd.__version__}-opencl-")
    assert dev.backend.device_name in v
    assert v != gd.get_device("reference").get_version_string()
    assert dev.get_feature_level() == gd.get_device("reference").get_feature_level()


def test_discovery_probe_leaves_out_a_device_that_cannot_compile(caplog):
    # the probe builds a trivial kernel: a real device passes; anything that cannot build (here an
    # object that is no OpenCL device at all, standing in for PoCL without a target for this CPU) is
    # left out with a warning instead of failing every preparation later
    from gpu_driver.backends import opencl

    device = opencl_device()
    cl = opencl._cl()
    assert opencl._compiles(cl, device.backend.session.cl_device)

    class NotADevice:
        name = "no device"

        class platform:
            version = "none"

    with caplog.at_level("WARNING", logger="gpu_driver.backends.opencl"):
        assert not opencl._compiles(cl, NotADevice())
    assert "left out" in caplog.text


def test_pocl_pins_its_workers_only_when_the_process_may_use_every_cpu():
    from gpu_driver.backends.opencl import pocl_defaults

    every = pocl_defaults({0, 1}, 2)
    assert every == {"POCL_WORK_GROUP_SPECIALIZATION": "0", "POCL_DEVICES": "pthread basic", "POCL_AFFINITY": "1"}
    # PoCL pins worker i to CPU i: a process confined to other CPUs, or one CPU, is left to the scheduler
    assert "POCL_AFFINITY" not in pocl_defaults({2, 3}, 4)
    assert "POCL_AFFINITY" not in pocl_defaults({0, 1}, 4)
    assert "POCL_AFFINITY" not in pocl_defaults({0}, 1)
    # more worker threads asked for than CPUs: PoCL would abort pinning worker 2 to a CPU 2 that is not there
    assert "POCL_AFFINITY" not in pocl_defaults({0, 1}, 2, "3")
    assert pocl_defaults({0, 1}, 2, "2")["POCL_AFFINITY"] == "1"
    assert pocl_defaults({0, 1}, 2, "not a number")["POCL_AFFINITY"] == "1"


def test_pocl_settings_are_in_the_environment_before_pocl_starts():
    import os

    opencl_device()  # PoCL initialised through the backend
    assert os.environ["POCL_WORK_GROUP_SPECIALIZATION"] in ("0", "1")
    assert os.environ["POCL_DEVICES"]
    if len(os.sched_getaffinity(0)) == os.cpu_count() > 1:
        assert os.environ.get("POCL_AFFINITY") is not None


def test_pocl_target_cpu_follows_the_host_instruction_set():
    from gpu_driver.backends.pocl_host_cpu import cpu_for_flags, replacement

    zen5 = {"sse2", "ssse3", "sse4_1", "avx", "avx2", "fma", "bmi2", "avx512f", "avx512cd",
            "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}
    assert cpu_for_flags(zen5) == "skylake-avx512"
    assert cpu_for_flags(zen5 - {"avx512bw"}) == "haswell"  # AVX-512 without BW: PoCL's avx2 library
    assert cpu_for_flags({"sse2", "ssse3", "sse4_1", "avx"}) == "sandybridge"
    assert cpu_for_flags({"sse2", "ssse3"}) == "core2"
    assert cpu_for_flags(set()) == "x86-64"
    # what PoCL compiles for instead of its LLVM 14's name: Zen 5 ("generic", rejected by its own
    # front end) and Zen 4 ("znver3", no AVX-512) get the AVX-512 CPU; a known AVX-512 CPU, or a host
    # without AVX-512, keeps its name
    assert replacement("generic", zen5) == "skylake-avx512"
    assert replacement("znver3", zen5) == "skylake-avx512"
    assert replacement("icelake-server", zen5) is None
    assert replacement("znver3", zen5 - {"avx512f"}) is None
    assert replacement("generic", zen5 - {"avx512f"}) == "haswell"


_NAMED_CPU_SCRIPT = r"""
import numpy as np
import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O

dev = gd.get_device("opencl")
b = gd.ModelBuilder()
x = b.add_input(T.TENSOR_FLOAT32, [4])
y = b.add_operand(T.TENSOR_FLOAT32, [4])
b.add_operation(O.RELU, [x], [y])
b.set_outputs([y])
prepared = dev.prepare_model(b.finish())
out = prepared.execute([np.array([-2.0, -0.5, 0.25, 3.0], np.float32)])[0]
print(dev.get_version_string())
print(out.tolist())
"""


def test_pocl_compiles_for_the_named_target_cpu(tmp_path):
    # GPU_DRIVER_POCL_TARGET_CPU rewrites the CPU name PoCL gives its compiler (what discovery does by
    # itself where PoCL's LLVM names the host "generic"): the device then builds and runs kernels for
    # that CPU, and PoCL's build hash in the version string names it
    import os
    import platform
    import subprocess
    import sys

    import pytest

    opencl_device()
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        pytest.skip("the CPU name is rewritten only in PoCL on x86-64 Linux")
    from gpu_driver.backends.pocl_host_cpu import SETTING

    env = dict(os.environ, GPU_DRIVER_POCL_TARGET_CPU="core2", POCL_CACHE_DIR=str(tmp_path / "pocl"),
               GPU_DRIVER_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-c", _NAMED_CPU_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    version, values = done.stdout.strip().splitlines()[-2:]
    assert "pocl" not in version.lower() or "-core2" in version
    assert values == "[0.0, 0.0, 0.25, 3.0]"

    # a setting that is no CPU name is ignored with a warning naming it: the device still runs
    env[SETTING] = "zénith 5"
    done = subprocess.run([sys.executable, "-c", _NAMED_CPU_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "GPU_DRIVER_POCL_TARGET_CPU='zénith 5' is not an LLVM CPU name: ignored" in done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[0.0, 0.0, 0.25, 3.0]"


def test_pocl_worker_threads_can_only_be_set_before_pocl_starts():
    from gpu_driver.backends.opencl import pocl_worker_threads, request_pocl_worker_threads

    device = opencl_device()                       # PoCL has started in this process
    running = device.backend.session.cl_device.max_compute_units
    if pocl_worker_threads() != running:
        pytest.skip("PoCL's default worker count differs from the CPUs this process may use")
    request_pocl_worker_threads(running)           # what runs already: nothing to do
    with pytest.raises(gd.DriverError, match="PoCL has started with") as started:
        request_pocl_worker_threads(running + 1)
    assert started.value.status == gd.ErrorStatus.GENERAL_FAILURE
    for bad in (0, -2, 1.5, "2", True, None):
        with pytest.raises(gd.DriverError, match="positive whole number of worker threads") as refused:
            request_pocl_worker_threads(bad)
        assert refused.value.status == gd.ErrorStatus.INVALID_ARGUMENT
