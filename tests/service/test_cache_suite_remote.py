"""The HAL compilation-cache suite written for local devices (tests/cache/test_hal_cache.py: cache files
of prepare_model and prepare_model_from_cache, misses, tampering, swaps), run unchanged through the
service: the server owns a cache-capable device with its own state directory, the client passes its
cache files as descriptors."""
import shutil
import tempfile
from pathlib import Path

import pytest

import gpu_driver as gd
from gpu_driver.reference.device import ReferenceDevice
from gpu_driver.service import Server

from tests.cache.conftest import *  # noqa: F401,F403  (the suite's fixtures and helpers)
from tests.cache.conftest import DEVICE_NAMES
from tests.cache.test_hal_cache import *  # noqa: F401,F403

# moves the device's state directory, which lives in the server
del test_forged_cache_for_a_known_token  # noqa: F821
# reads the operations of a model prepared from cache: on the client such a prepared model carries its
# inputs and outputs only (gpu_driver.service.codec.io_model), the rest stays on the server
del test_overwrite_with_another_model_same_files  # noqa: F821


@pytest.fixture(scope="module", params=DEVICE_NAMES)
def device(request, tmp_path_factory):
    state = tmp_path_factory.mktemp(f"state-{request.param}")
    local = ReferenceDevice() if request.param == "reference" else gd.get_device(request.param)
    old = getattr(local, "cache_state_dir", None)
    local.cache_state_dir = state
    directory = Path(tempfile.mkdtemp(prefix="gds", dir="/tmp"))
    server = Server(directory / "cache.sock", [local]).start()
    conn = gd.connect(server.path)
    yield conn.get_device(local.name)
    conn.close()
    server.close()
    shutil.rmtree(directory, ignore_errors=True)
    local.cache_state_dir = old
