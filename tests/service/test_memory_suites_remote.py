"""The memory-domain and pool suites written for local devices (tests/memory: allocate, IBuffer, request
buffers, pools), run unchanged against the same devices through the service: the ``device``,
``reference`` and ``opencl`` fixtures give remote devices here."""
import pytest

from tests.memory.conftest import *  # noqa: F401,F403  (the suites' fixtures and models)
from tests.memory.test_allocate import *  # noqa: F401,F403
from tests.memory.test_ibuffer import *  # noqa: F401,F403
from tests.memory.test_pools import *  # noqa: F401,F403
from tests.memory.test_request_buffers import *  # noqa: F401,F403

# these look inside the local driver (a buffer's role table and initial dims, the backend's copy
# counters) or allocate device memory in this process, which a remote device does not have
del test_distinct_models_with_same_index_are_not_duplicates  # noqa: F821
del test_copy_from_dynamic_shapes  # noqa: F821
del test_shared_memory_request_is_counted  # noqa: F821
del test_device_resident_request_has_zero_host_copies  # noqa: F821
del test_device_hardware_buffer_cannot_cross_a_process_boundary  # noqa: F821


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request, suite_service):
    return suite_service.get_device(request.param)


@pytest.fixture(scope="module")
def reference(suite_service):
    return suite_service.get_device("reference")


@pytest.fixture(scope="module")
def opencl(suite_service):
    return suite_service.get_device("opencl")
