"""``gpu_driver.CompilationCache``: the runtime-side helper that drives the HAL caching calls.

    cache = gd.CompilationCache("~/.cache/my_app/nn")
    prepared = cache.prepare(device, model)          # from the cache when it can, else compile + save

The 32-byte token is derived from the model's full content (structure, operand values and constant
pool bytes), the device name and version string, the driver version and the execution preference,
so a user never invents checksums.  The helper (like the NNAPI runtime) opens and creates the files
``<token hex>.model-<i>`` / ``.data-<i>`` in ``directory``; the driver itself never names a file.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from ..errors import DriverError, invalid
from ..hal.types import ErrorStatus, ExecutionPreference, Priority
from ..runtime.device import FEATURE_LEVEL, Device, check_preference_priority
from ..validation import validate_model
from .driver import model_digest
from .format import driver_version


class CompilationCache:
    def __init__(self, directory: str | os.PathLike):
        try:
            self.directory = Path(directory).expanduser()
        except TypeError:
            raise invalid(f"CompilationCache needs a directory path, got {directory!r}") from None
        #: what the last :meth:`prepare` did: "hit", "miss", "fallback" (the cache failed) or "uncached"
        self.last_outcome: str | None = None

    def token(self, device, model, preference=ExecutionPreference.FAST_SINGLE_ANSWER) -> bytes:
        """The 32-byte cache token of (model content, device and its version, driver version, preference)."""
        preference, _ = check_preference_priority(preference, Priority.MEDIUM)
        validate_model(model, FEATURE_LEVEL)
        h = hashlib.sha256(b"gpu_driver-CompilationCache\0")
        for part in (device.get_name(), device.get_version_string(), driver_version(), str(int(preference))):
            h.update(part.encode() + b"\0")
        h.update(model_digest(model))
        return h.digest()

    def _open(self, token: bytes, kind: str, count: int) -> list:
        self.directory.mkdir(parents=True, exist_ok=True)
        return [open(os.open(self.directory / f"{token.hex()}.{kind}-{i}", os.O_RDWR | os.O_CREAT, 0o600),
                     "r+b", buffering=0) for i in range(count)]

    def prepare(self, device, model, preference=ExecutionPreference.FAST_SINGLE_ANSWER,
                priority=Priority.MEDIUM, deadline: int | None = None):
        """Prepare ``model`` on ``device``: from the cache on a hit; else compile and save.

        Any cache failure (corrupt files, another driver build, I/O trouble) falls back to a normal
        preparation, which rewrites the files.  Errors of the preparation itself propagate.
        """
        if not isinstance(device, Device):
            raise invalid(f"CompilationCache.prepare needs a gpu_driver Device, got {device!r}")
        n_model, n_data = device.get_number_of_cache_files_needed()
        if n_model == 0 and n_data == 0:
            self.last_outcome = "uncached"
            return device.prepare_model(model, preference, priority, deadline)
        token = self.token(device, model, preference)
        with contextlib.ExitStack() as stack:
            model_cache = [stack.enter_context(f) for f in self._open(token, "model", n_model)]
            data_cache = [stack.enter_context(f) for f in self._open(token, "data", n_data)]
            if any(os.fstat(f.fileno()).st_size for f in model_cache):
                try:
                    prepared = device.prepare_model_from_cache(model_cache, data_cache, token, deadline)
                    self.last_outcome = "hit"
                    return prepared
                except DriverError as err:
                    if err.status in (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT):
                        raise
                    self.last_outcome = "fallback"
            else:
                self.last_outcome = "miss"
            return device.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
