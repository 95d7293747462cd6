"""``gpu_driver.CompilationCache``: the runtime-side helper that drives the HAL caching calls.

    cache = gd.CompilationCache("~/.cache/my_app/nn")
    prepared = cache.prepare(device, model)          # from the cache when it can, else compile + save

The directory is created when the helper is made: a path that is an existing file, or one the OS
will not create, is a DriverError then (INVALID_ARGUMENT / GENERAL_FAILURE), not at the first prepare.

The 32-byte token is derived from the model's full content (structure, operand values and constant
pool bytes), the device name and version string, the driver version and the execution preference,
so a user never invents checksums.  The helper (like the NNAPI runtime) opens and creates the files
``<token hex>.model-<i>`` / ``.data-<i>`` in ``directory``; the driver itself never names a file.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from ..errors import DriverError, failure, invalid
from ..hal.types import ErrorStatus, ExecutionPreference, Priority
from ..runtime.device import FEATURE_LEVEL, Device, check_preference_priority
from ..validation import validate_model
from ..vlog import vlog
from .driver import model_digest
from .format import driver_version

_cache_log = vlog("cache")
_compilation_log = vlog("compilation")


class CompilationCache:
    def __init__(self, directory: str | os.PathLike):
        try:
            self.directory = Path(directory).expanduser()
        except TypeError:
            raise invalid(f"CompilationCache needs a directory path, got {directory!r}") from None
        if self.directory.exists() and not self.directory.is_dir():
            raise invalid(f"CompilationCache directory {str(self.directory)!r} exists and is not a directory")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise failure(f"CompilationCache cannot create the directory {str(self.directory)!r}: "
                          f"{exc.strerror or exc}") from None
        _cache_log.debug("CompilationCache in %s", self.directory)
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

    def _open(self, stack: contextlib.ExitStack, token: bytes, kind: str, count: int) -> list:
        """Open (creating) the ``count`` cache files of ``kind``; each is closed by ``stack``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return [stack.enter_context(open(os.open(self.directory / f"{token.hex()}.{kind}-{i}",
                                                 os.O_RDWR | os.O_CREAT, 0o600), "r+b", buffering=0))
                for i in range(count)]

    def prepare(self, device, model, preference=ExecutionPreference.FAST_SINGLE_ANSWER,
                priority=Priority.MEDIUM, deadline: int | None = None):
        """Prepare ``model`` on ``device``: from the cache on a hit; else compile and save.

        Any cache failure (corrupt files, another driver build) falls back to a normal preparation,
        which rewrites the files; when the files cannot even be opened (the directory vanished, a
        permission or disk problem) the fallback prepares without the cache.  Errors of the
        preparation itself propagate.
        """
        if not isinstance(device, Device):
            raise invalid(f"CompilationCache.prepare needs a gpu_driver Device, got {device!r}")
        n_model, n_data = device.get_number_of_cache_files_needed()
        if n_model == 0 and n_data == 0:
            self.last_outcome = "uncached"
            _cache_log.debug("%s needs no cache files: preparing without the cache", device.name)
            return self._compile(device, model, preference, priority, deadline)
        token = self.token(device, model, preference)
        with contextlib.ExitStack() as stack:
            try:
                model_cache = self._open(stack, token, "model", n_model)
                data_cache = self._open(stack, token, "data", n_data)
                cached = any(os.fstat(f.fileno()).st_size for f in model_cache)
            except OSError as exc:
                stack.close()
                self.last_outcome = "fallback"
                _cache_log.debug("fallback: cannot open the cache files of token %s in %s (%s); preparing "
                                 "without the cache", token.hex()[:16], self.directory, exc)
                return self._compile(device, model, preference, priority, deadline)
            if cached:
                try:
                    t0 = time.perf_counter()
                    prepared = device.prepare_model_from_cache(model_cache, data_cache, token, deadline)
                    self.last_outcome = "hit"
                    _cache_log.debug("hit: token %s on %s loaded from %s in %.1f ms", token.hex()[:16],
                                     device.name, self.directory, (time.perf_counter() - t0) * 1e3)
                    return prepared
                except DriverError as err:
                    if err.status in (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT):
                        raise
                    self.last_outcome = "fallback"
                    _cache_log.debug("fallback: token %s on %s not loaded (%s); compiling and rewriting the files",
                                     token.hex()[:16], device.name, err)
            else:
                self.last_outcome = "miss"
                _cache_log.debug("miss: token %s on %s; compiling and writing %d model + %d data file(s) to %s",
                                 token.hex()[:16], device.name, n_model, n_data, self.directory)
            return self._compile(device, model, preference, priority, deadline, model_cache, data_cache, token)

    @staticmethod
    def _compile(device, model, preference, priority, deadline, *cache):
        """``device.prepare_model`` (with the cache files and token when given), timed for VLOG."""
        t0 = time.perf_counter()
        prepared = device.prepare_model(model, preference, priority, deadline, *cache)
        _compilation_log.debug("prepared a model of %d operations on %s in %.1f ms%s", len(model.main.operations),
                               device.name, (time.perf_counter() - t0) * 1e3, " (cache written)" if cache else "")
        return prepared
