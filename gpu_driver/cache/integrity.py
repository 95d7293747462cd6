"""The persisted token → model-cache hash map that makes a tampered model cache detectable.

For each (driver version, backend, device, token) the driver records the SHA-256 of the exact
model-cache bytes it wrote.  ``prepareModelFromCache`` hashes its in-memory copy of the files and
compares with the record, so a file changed after it was written (or swapped, forged, or made by
another driver build) is refused.  The map lives in the driver state directory
(``$GPU_DRIVER_STATE_DIR``, else ``$XDG_CACHE_HOME/gpu_driver`` or ``~/.cache/gpu_driver``; a device
may set ``cache_state_dir``), in one msgpack file replaced atomically (write temp, fsync, rename,
fsync the directory) under an ``fcntl`` lock file so processes can share it.  It holds at most
``max_entries`` records, evicting the least recently used.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import msgpack

from ..state import atomic_write, default_state_dir, file_lock, state_dir_for  # noqa: F401 (re-exported)

MAP_FILE = "cache-integrity.msgpack"
LOCK_FILE = "cache-integrity.lock"
DEFAULT_MAX_ENTRIES = 4096
#: a lookup refreshes a record's recency (a write) only when it is older than this
TOUCH_AFTER_S = 600.0
_FORMAT = 1


class IntegrityStore:
    """token digest → SHA-256 of the model cache, per driver identity; persisted, bounded, shared."""

    def __init__(self, directory: Path | str, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.directory = Path(directory)
        self.max_entries = int(max_entries)
        self._thread_lock = threading.Lock()
        self._snapshot: tuple[tuple, dict] | None = None  # (file stat key, parsed map)

    @staticmethod
    def key(namespace: bytes, token: bytes) -> bytes:
        """Record key: the identity namespace (driver version, backend, device) bound to the token."""
        return hashlib.sha256(b"gpu_driver-integrity\0" + namespace + b"\0" + bytes(token)).digest()

    # ---- persistence -------------------------------------------------------------------------------
    def _paths(self) -> tuple[Path, Path]:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / MAP_FILE, self.directory / LOCK_FILE

    def _load(self, path: Path) -> dict:
        """The map on disk ({key: [hash, last_used]}); unreadable or absent → empty (caches miss)."""
        try:
            st = os.stat(path)
        except OSError:
            return {}
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._snapshot is not None and self._snapshot[0] == stamp:
            return self._snapshot[1]
        try:
            payload = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
            entries = payload["entries"] if payload.get("format") == _FORMAT else {}
            entries = {k: [v[0], float(v[1])] for k, v in entries.items()
                       if isinstance(k, bytes) and isinstance(v, list) and len(v) == 2 and isinstance(v[0], bytes)}
        except Exception:  # a damaged map only loses records: every cache then misses
            entries = {}
        self._snapshot = (stamp, entries)
        return entries

    def _store(self, path: Path, entries: dict) -> None:
        if len(entries) > self.max_entries:
            keep = sorted(entries.items(), key=lambda kv: kv[1][1])[-self.max_entries:]
            entries = dict(keep)
        atomic_write(path, msgpack.packb({"format": _FORMAT, "entries": entries}, use_bin_type=True))
        self._snapshot = None

    # ---- API ---------------------------------------------------------------------------------------
    def record(self, key: bytes, digest: bytes) -> None:
        path, lock = self._paths()
        with file_lock(lock, self._thread_lock):
            entries = dict(self._load(path))
            entries[key] = [bytes(digest), time.time()]
            self._store(path, entries)

    def lookup(self, key: bytes) -> bytes | None:
        """The recorded hash for ``key`` (refreshing its recency now and then), or None."""
        path, lock = self._paths()
        with file_lock(lock, self._thread_lock):
            entries = self._load(path)
            entry = entries.get(key)
            if entry is None:
                return None
            if time.time() - entry[1] > TOUCH_AFTER_S:
                entries = dict(entries)
                entries[key] = [entry[0], time.time()]
                self._store(path, entries)
            return entry[0]

    def forget(self, key: bytes) -> None:
        path, lock = self._paths()
        with file_lock(lock, self._thread_lock):
            entries = dict(self._load(path))
            if entries.pop(key, None) is not None:
                self._store(path, entries)

    def __len__(self) -> int:
        path, lock = self._paths()
        with file_lock(lock, self._thread_lock):
            return len(self._load(path))


_STORES: dict[tuple[str, int], IntegrityStore] = {}
_STORES_GUARD = threading.Lock()


def store_for(directory: Path, max_entries: int = DEFAULT_MAX_ENTRIES) -> IntegrityStore:
    """One store object per directory in this process (they share a thread lock)."""
    key = (str(Path(directory).resolve()), int(max_entries))
    with _STORES_GUARD:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = IntegrityStore(directory, max_entries)
        return store
