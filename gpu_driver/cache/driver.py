"""Driver side of compilation caching: save after prepareModel, load in prepareModelFromCache,
and the driver-private cache used when a client passes no cache files.

Device contract (declared on the runtime base classes; a device opts in with ``caches_compilations``):

- ``prepared.cache_payload() -> CompiledModel`` (binary, launch plan or None, constants);
- ``device.load_prepared(compiled, model) -> PreparedModel`` (no compilation).

Error statuses (a deliberate choice: interface.md §5.2 says INVALID_ARGUMENT for a tampered cache;
we answer GENERAL_FAILURE, as a failed load the runtime recovers from): malformed *arguments* (wrong file counts, a token
that is not 32 bytes, handles that are not open regular files) → INVALID_ARGUMENT; anything wrong
with the *content* (no record for the token, hash mismatch, corrupt/truncated/swapped/forged files,
another driver build or device, a data cache of another model) → GENERAL_FAILURE.  Either way the
runtime falls back to prepareModel, which keeps working.

TOCTOU: the files are read into memory under a shared lock first; only that copy is hashed,
compared with the persisted record (:mod:`.integrity`) and parsed.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import struct
from typing import Callable, Sequence

from ..compiler.artifact import CompiledModel
from ..errors import DriverError, failure
from ..hal.model import Model
from ..hal.serialize import pack, unpack
from ..hal.types import ErrorStatus, ExecutionPreference
from ..memory import Memory
from . import files as cf
from .blob_store import DEFAULT_MAX_BYTES, BlobStore
from .format import (CacheIdentity, bulk_digest, ModelCacheContent, pack_data_cache, pack_model_cache, parse_data_cache,
                     parse_model_cache, token_digest)
from .integrity import state_dir_for, store_for


# ---- model identity --------------------------------------------------------------------------------
def model_skeleton(model) -> bytes:
    """The model's msgpack form without its memory pools (their bytes travel separately)."""
    data, fds = pack(dataclasses.replace(model, pools=[]))
    assert not fds
    return data


def model_digest(model) -> bytes:
    """SHA-256 of the model's full content: structure, operand values and every pool's bytes."""
    h = hashlib.sha256(b"gpu_driver-model\0")
    skeleton = model_skeleton(model)
    h.update(struct.pack("<Q", len(skeleton)))
    h.update(skeleton)
    for pool in model.pools:
        view = pool.view()
        h.update(struct.pack("<Q", view.nbytes))
        h.update(view)
    return h.digest()


def _files_digest(contents: Sequence[bytes]) -> bytes:
    h = hashlib.sha256(b"gpu_driver-model-cache\0")
    for c in contents:
        h.update(struct.pack("<Q", len(c)))
        h.update(c)
    return h.digest()


def build_cache_bytes(device, prepared, model, preference, token: bytes, with_pools: bool = True):
    """(model-cache bytes, data-cache bytes) for a prepared model."""
    identity = CacheIdentity.of(device)
    tdigest = token_digest(token)
    compiled = prepared.cache_payload()
    pools = [p.view() for p in model.pools] if with_pools else []
    data = pack_data_cache(identity, tdigest, compiled.constants, pools)
    model_bytes = pack_model_cache(identity, tdigest, model_skeleton(model), compiled.binary, compiled.plan,
                                   int(preference), [v.nbytes for v in pools], data)
    return model_bytes, data


# ---- HAL cache files ---------------------------------------------------------------------------------
def save_to_cache(device, prepared, model, preference, model_cache: Sequence, data_cache: Sequence,
                  token: bytes) -> bool:
    """Write the caches after a successful prepareModel; never raises (caching is optional)."""
    try:
        cf.check_handles([*model_cache, *data_cache], writable=True)
        model_bytes, data_bytes = build_cache_bytes(device, prepared, model, preference, token)
        key = store_for(state_dir_for(device)).key(CacheIdentity.of(device).namespace(), token)
        model_contents = [model_bytes] + [b""] * (len(model_cache) - 1)
        with cf.locked([*model_cache, *data_cache], exclusive=True):
            for i, h in enumerate(data_cache):
                cf.write_all(h, data_bytes if i == 0 else b"")
            for h, c in zip(model_cache, model_contents):
                cf.write_all(h, c)
            store_for(state_dir_for(device)).record(key, _files_digest(model_contents))
        return True
    except Exception:  # errors while saving must not fail preparation (interface.md §5.1)
        return False


def load_from_cache(device, model_cache: Sequence, data_cache: Sequence, token: bytes):
    """prepareModelFromCache after the argument checks: read, verify, parse, load (no compile)."""
    cf.check_handles([*model_cache, *data_cache], writable=False)
    identity = CacheIdentity.of(device)
    store = store_for(state_dir_for(device))
    key = store.key(identity.namespace(), token)
    with cf.locked([*model_cache, *data_cache], exclusive=False):
        model_contents = [cf.read_all(h) for h in model_cache]
        data_contents = [cf.read_all(h) for h in data_cache]
        try:
            recorded = store.lookup(key)
        except OSError as exc:
            raise failure(f"cache integrity record unreadable: {exc}") from None
    if recorded is None:
        raise failure("no cache was written for this token by this driver build and device")
    if not hmac.compare_digest(recorded, _files_digest(model_contents)):
        raise failure("model cache does not match what the driver wrote for this token (modified or swapped)")
    if any(model_contents[1:]) or any(data_contents[1:]):
        raise failure("unexpected content in extra cache files")
    content = parse_model_cache(model_contents[0], identity, token_digest(token))
    data = data_contents[0] if data_contents else b""
    _check_data(content, data)
    parsed = parse_data_cache(data, identity, token_digest(token))
    model = _rebuild_model(content, parsed.pools)
    return _load(device, content, parsed.constants, model)


def _check_data(content: ModelCacheContent, data: bytes) -> None:
    if len(data) != content.data_len or not hmac.compare_digest(bulk_digest(data), content.data_digest):
        raise failure("data cache does not belong to this model cache (modified, swapped or another model's)")


def _rebuild_model(content: ModelCacheContent, pools):
    try:
        model = unpack(content.model)
        if not isinstance(model, Model) or model.pools:
            raise failure("model cache holds no model")
        if len(pools) != len(content.pool_sizes) or any(p.nbytes != s for p, s in zip(pools, content.pool_sizes)):
            raise failure("data cache pools do not match the model")
        model.pools = [CachedPool(p) for p in pools]
        # no validate_model here: these bytes are authenticated (hash record) and were serialised from
        # a model validated at prepareModel; re-validating would cost as much as the rest of the load
        return model
    except DriverError as err:
        raise failure(f"cached model is unusable: {err.message}") from None
    except Exception as exc:
        raise failure(f"cached model is unusable: {type(exc).__name__}: {exc}") from None


class CachedPool(Memory):
    """A model constant pool read from the data cache: a read-only view of the in-memory copy (no
    second copy; the constants of the loaded model keep that copy alive anyway).  Host-only: it has
    no descriptor, so such a model cannot be sent to another process (nothing sends prepared models)."""

    kind = "cache_bytes"

    def __init__(self, view: memoryview):
        self._view = memoryview(view).cast("B").toreadonly()

    @property
    def size(self) -> int:
        return self._view.nbytes

    def view(self) -> memoryview:
        return self._view


def _load(device, content: ModelCacheContent, constants, model):
    try:
        prepared = device.load_prepared(CompiledModel(content.binary, content.plan, list(constants)), model)
        prepared.preference = ExecutionPreference(content.preference)
    except DriverError as err:
        if err.status in (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT):
            raise
        raise failure(f"loading the cached program failed: {err.message}") from None
    except Exception as exc:
        raise failure(f"loading the cached program failed: {type(exc).__name__}: {exc}") from None
    return prepared


# ---- driver-private cache ----------------------------------------------------------------------------
def private_cache_enabled(device) -> bool:
    """``GPU_DRIVER_PRIVATE_CACHE=0`` turns it off; otherwise the device's ``private_cache`` (default on)."""
    if os.environ.get("GPU_DRIVER_PRIVATE_CACHE", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    return device.caches_compilations and bool(getattr(device, "private_cache", True))


def private_store(device) -> BlobStore:
    limit = getattr(device, "private_cache_bytes", None) or os.environ.get("GPU_DRIVER_PRIVATE_CACHE_BYTES")
    return BlobStore(state_dir_for(device) / "blobs", int(limit) if limit else DEFAULT_MAX_BYTES)


def private_key(device, model, preference) -> bytes:
    h = hashlib.sha256(b"gpu_driver-private\0")
    h.update(CacheIdentity.of(device).namespace())
    h.update(struct.pack("<q", int(preference)))
    h.update(model_digest(model))
    return h.digest()


def private_prepare(device, model, preference, prepare: Callable[[], object]):
    """Prepare through the private blob store: load on a hit, else ``prepare()`` and store the result."""
    try:
        key = private_key(device, model, preference)
        store = private_store(device)
        blob = store.get(key)
    except Exception:
        return prepare()
    if blob is not None:
        try:
            (n,) = struct.unpack_from("<Q", blob, 0)
            if n > len(blob) - 8:
                raise failure("bad private blob")
            identity, tdigest = CacheIdentity.of(device), token_digest(key)
            content = parse_model_cache(blob[8:8 + n], identity, tdigest)
            data = blob[8 + n:]
            _check_data(content, data)
            parsed = parse_data_cache(data, identity, tdigest)
            return _load(device, content, parsed.constants, model)
        except Exception:
            pass  # a bad blob is a miss; it is overwritten below
    prepared = prepare()
    try:
        model_bytes, data_bytes = build_cache_bytes(device, prepared, model, preference, key, with_pools=False)
        store.put(key, struct.pack("<Q", len(model_bytes)) + model_bytes + data_bytes)
    except Exception:
        pass  # the private cache is optional: a failed write only costs the next preparation a compile
    return prepared
