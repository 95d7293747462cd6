"""Compilation caching: HAL cache files, integrity records, the private blob store (the driver side,
used by every Device), and the user-side helper :mod:`gpu_driver.cache.compilation_cache` (above the
devices, so not imported here).  See :mod:`gpu_driver.cache.driver` for the status-code policy."""
from .blob_store import BlobStore
from .integrity import IntegrityStore, default_state_dir

__all__ = ["BlobStore", "IntegrityStore", "default_state_dir"]
