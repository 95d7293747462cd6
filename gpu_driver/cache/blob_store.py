"""A driver-private key → blob store (like Android's nnCache), used when a client passes no cache files.

Blobs are files ``<hex key>.blob`` in ``<state dir>/blobs``, each ``magic | SHA-256(payload) |
payload``, written atomically (temp + fsync + rename).  The store is bounded by ``max_bytes``: after
every ``put`` the least recently used blobs (by mtime, refreshed on ``get``) are deleted until the
total fits.  A blob whose checksum fails is deleted and reported as a miss.  Cross-process safe:
``put`` and eviction run under a lock file; readers need no lock (a rename replaces whole files).

The total is kept in ``blobs.size``, updated under the lock by every put, so a put costs the same
with ten blobs or ten thousand: the directory is listed only when the total may exceed the limit or
the size file is missing or unreadable.  Blobs deleted outside a put (a damaged one, by hand) leave
the recorded total too high, which at worst triggers a listing that recounts it.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

from .integrity import atomic_write, file_lock

DEFAULT_MAX_BYTES = 256 << 20
_MAGIC = b"GDRVBLB1"
_SUFFIX = ".blob"
_SIZE_FILE = "blobs.size"


class BlobStore:
    def __init__(self, directory: Path | str, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)
        self._thread_lock = threading.Lock()

    def _path(self, key: bytes) -> Path:
        return self.directory / (bytes(key).hex() + _SUFFIX)

    def get(self, key: bytes) -> bytes | None:
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + 32
        if len(raw) < head or raw[:len(_MAGIC)] != _MAGIC or hashlib.sha256(raw[head:]).digest() != raw[len(_MAGIC):head]:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recency for LRU eviction
        return raw[head:]

    def put(self, key: bytes, payload: bytes) -> bool:
        """Store ``payload``; False (and nothing stored) when it alone exceeds the size limit."""
        blob = _MAGIC + hashlib.sha256(payload).digest() + payload
        if len(blob) > self.max_bytes:
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        with file_lock(self.directory / "blobs.lock", self._thread_lock):
            try:
                replaced = path.stat().st_size
            except OSError:
                replaced = 0
            atomic_write(path, blob)
            total = self._recorded_total()
            if total is not None:
                total += len(blob) - replaced
            if total is None or total > self.max_bytes:
                total = self._evict(keep=path)
            self._record_total(total)
        return True

    def _recorded_total(self) -> int | None:
        try:
            text = (self.directory / _SIZE_FILE).read_text()
            return int(text) if text.strip().isdigit() else None
        except OSError:
            return None

    def _record_total(self, total: int) -> None:
        with contextlib.suppress(OSError):
            (self.directory / _SIZE_FILE).write_text(str(int(total)))

    def entries(self) -> list[tuple[Path, int, int]]:
        """(path, size, mtime_ns) of every blob, oldest first."""
        out = []
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        for name in names:
            if name.endswith(_SUFFIX):
                p = self.directory / name
                with contextlib.suppress(OSError):
                    st = p.stat()
                    out.append((p, st.st_size, st.st_mtime_ns))
        out.sort(key=lambda e: e[2])
        return out

    def total_bytes(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def _evict(self, keep: Path) -> int:
        """Delete least recently used blobs (never ``keep``) until the total fits; the total left."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size
        return total

    def clear(self) -> None:
        for path, _, _ in self.entries():
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            (self.directory / _SIZE_FILE).unlink()
