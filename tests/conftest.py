"""The ``accelerator`` fixture: one parameter per accelerator device present (every device but the
reference), with the device name as the test id; CUDA devices carry the ``cuda`` mark, OpenCL ones
the ``opencl`` mark.  Without any accelerator the tests that use it are collected and skipped."""
import pytest

import gpu_driver

BACKEND_MARKS = {"cuda": pytest.mark.cuda, "opencl": pytest.mark.opencl}


def _accelerator_params():
    devices = [d for d in gpu_driver.get_devices() if d.name != "reference"]
    if not devices:
        return [pytest.param(None, id="no-accelerator",
                             marks=pytest.mark.skip(reason="no accelerator device (no OpenCL platform or CUDA GPU)"))]
    return [pytest.param(d, id=d.name, marks=BACKEND_MARKS.get(d.name.split(":")[0], ())) for d in devices]


@pytest.fixture(params=_accelerator_params())
def accelerator(request):
    """An accelerator device of the driver (AcceleratorDevice: "opencl:N", "cuda:N")."""
    return request.param
