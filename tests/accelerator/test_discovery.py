"""Device discovery, naming, ranking, type and version strings."""
import re

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


def test_pocl_settings_are_in_the_environment_before_pocl_starts():
    import os

    opencl_device()  # PoCL initialised through the backend
    assert os.environ["POCL_WORK_GROUP_SPECIALIZATION"] in ("0", "1")
    assert os.environ["POCL_DEVICES"]
    if len(os.sched_getaffinity(0)) == os.cpu_count() > 1:
        assert os.environ.get("POCL_AFFINITY") is not None
