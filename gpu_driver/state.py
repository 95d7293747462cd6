"""The driver's per-user state directory and durable file updates, shared by every piece of state:
measured capabilities (calibration), compilation-cache integrity records, the private blob store.

Location: ``$GPU_DRIVER_STATE_DIR``, else ``$XDG_CACHE_HOME/gpu_driver``, else ``~/.cache/gpu_driver``;
a device may override it with a ``cache_state_dir`` attribute.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterator


def default_state_dir() -> Path:
    """The per-user state directory (see the module docstring)."""
    env = os.environ.get("GPU_DRIVER_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu_driver"


def state_dir_for(device) -> Path:
    """The state directory for ``device``: its ``cache_state_dir`` attribute, else the default."""
    configured = getattr(device, "cache_state_dir", None)
    return Path(configured) if configured else default_state_dir()


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically and durably: temp file, fsync, rename, fsync the dir."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


@contextlib.contextmanager
def file_lock(path: Path, thread_lock: threading.Lock) -> Iterator[None]:
    """An exclusive lock across threads (``thread_lock``) and processes (``flock`` on ``path``)."""
    with thread_lock:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock
