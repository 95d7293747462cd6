"""The driver service: one process owns the devices and serves clients over a Unix-domain socket.

``serve(socket_path, devices)`` listens on ``socket_path`` (permissions 0600: only its owner may
connect), checks each connecting peer's credentials (SO_PEERCRED: the server's own uid, or root) and
gives every client a :class:`~gpu_driver.service.session.Session` in a thread of its own, so a client
that misbehaves, stalls or dies affects only its own session.
"""
from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import DriverError, invalid
from ..hal.types import ErrorStatus
from ..runtime.device import Device
from ..runtime.discovery import get_device, get_devices
from ..state import default_state_dir
from . import codec
from .fence_relay import FenceRelay
from .session import Limits, Session

log = logging.getLogger("gpu_driver.service")

SOCKET_NAME = "gpu_driver.sock"
_UCRED = struct.Struct("3i")  # pid, uid, gid
_MAX_UNIX_PATH = 107


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/gpu_driver.sock``, else ``gpu_driver.sock`` in the driver's state directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / SOCKET_NAME if runtime else default_state_dir() / SOCKET_NAME


def check_socket_path(path) -> Path:
    path = Path(path)
    if len(os.fsencode(str(path))) > _MAX_UNIX_PATH:
        raise invalid(f"socket path {str(path)!r} is longer than the {_MAX_UNIX_PATH} bytes a Unix socket allows")
    return path


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of ``sock``."""
    return _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))


def _resolve_devices(devices: Iterable[Device | str] | None) -> list[Device]:
    if devices is None:
        return get_devices()
    resolved = [d if isinstance(d, Device) else get_device(d) for d in devices]
    if not resolved:
        raise invalid("the service needs at least one device")
    return resolved


def _device_info(device: Device) -> tuple:
    return (device.name, int(device.get_type()), device.get_version_string(), device.get_feature_level(),
            codec.encode_capabilities(device.get_capabilities()), tuple(device.get_number_of_cache_files_needed()),
            device.rank)


def _claim_path(path: Path) -> None:
    """Remove a stale socket left by a server that died; refuse when one is serving there."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise invalid(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise
        path.unlink(missing_ok=True)
        log.info("removed the stale socket %s", path)
        return
    finally:
        probe.close()
    raise DriverError(ErrorStatus.GENERAL_FAILURE, f"a server is already serving on {path}")


class Server:
    """A running service (see the module docstring).  ``Server(...).start()`` serves from a background
    thread; :func:`serve` serves in the calling thread until interrupted."""

    def __init__(self, socket_path=None, devices: Sequence[Device | str] | None = None,
                 limits: Limits | None = None, max_clients: int = 64) -> None:
        self.path = check_socket_path(socket_path if socket_path is not None else default_socket_path())
        self.devices = _resolve_devices(devices)
        self.device_info = tuple(_device_info(d) for d in self.devices)
        self.limits = limits or Limits()
        self.max_clients = max_clients
        self.relay = FenceRelay()
        self._sessions: set[Session] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._close_lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _claim_path(self.path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        os.chmod(self.path, 0o600)  # before listen(): nobody else can connect in between
        self._listener.listen(64)
        self._thread: threading.Thread | None = None
        log.info("serving %s on %s", ", ".join(d.name for d in self.devices), self.path)

    @property
    def sessions(self) -> list[Session]:
        """The clients connected now."""
        with self._lock:
            return list(self._sessions)

    def start(self) -> "Server":
        self._thread = threading.Thread(target=self.serve_forever, name="gpu_driver service", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Accept clients until :meth:`close`."""
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError as exc:
                if self._closed.is_set():
                    return
                log.warning("accept failed: %s", exc)  # e.g. out of descriptors: try again shortly
                time.sleep(0.1)
                continue
            self._admit(conn)

    def _admit(self, conn: socket.socket) -> None:
        try:
            pid, uid, _gid = peer_credentials(conn)
        except OSError as exc:
            log.warning("refused a client whose credentials cannot be read: %s", exc)
            conn.close()
            return
        if uid not in (os.geteuid(), 0):
            log.warning("refused pid %d: uid %d is neither the server's (%d) nor root", pid, uid, os.geteuid())
            conn.close()
            return
        with self._lock:
            if len(self._sessions) >= self.max_clients:
                log.warning("refused pid %d: %d clients are connected (the maximum)", pid, self.max_clients)
                conn.close()
                return
            session = Session(self, conn, f"pid {pid}")
            self._sessions.add(session)
        log.info("client pid %d connected", pid)
        threading.Thread(target=session.run, name=f"gpu_driver session pid {pid}", daemon=True).start()

    def session_closed(self, session: Session) -> None:
        with self._lock:
            self._sessions.discard(session)

    def close(self) -> None:
        """Stop accepting, disconnect every client, remove the socket."""
        with self._close_lock:
            if not self._closed.is_set():
                self._closed.set()
                self._shut_down()

    def _shut_down(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        except OSError:
            pass
        self._listener.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for session in self.sessions:
            session.close()
        self.relay.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        log.info("stopped serving on %s", self.path)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(socket_path=None, devices: Sequence[Device | str] | None = None, limits: Limits | None = None,
          max_clients: int = 64) -> None:
    """Serve ``devices`` (default: every device of this driver) on ``socket_path`` (default:
    :func:`default_socket_path`) until SIGINT or SIGTERM."""
    server = Server(socket_path, devices, limits, max_clients)
    stop = lambda *_: threading.Thread(target=server.close, daemon=True).start()  # noqa: E731
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        server.close()


def serve_command(args) -> int:
    """``gpu-driver serve [--socket PATH] [--devices NAME …] [--max-prepared-models N] [--max-buffer-bytes N]``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s gpu-driver serve: %(message)s")
    limits = {name: getattr(args, name) for name in ("max_prepared_models", "max_buffer_bytes")
              if getattr(args, name, None) is not None}
    serve(args.socket, args.devices or None, Limits(**limits))
    return 0
