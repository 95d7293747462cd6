"""Compilation caching (issue 4): HAL cache files, integrity records, the private blob store, and the
user-side :class:`CompilationCache`.  See :mod:`gpu_driver.cache.driver` for the status-code policy."""
from .blob_store import BlobStore
from .compilation_cache import CompilationCache
from .integrity import IntegrityStore, default_state_dir

__all__ = ["BlobStore", "CompilationCache", "IntegrityStore", "default_state_dir"]
