"""The client side of the service: :func:`connect` and the :class:`Connection` to a server.

A connection sends calls from any thread (one lock around the socket's write side); replies and
completion notifications are read by one thread at a time (see :class:`Connection`).  When the
server dies or the connection breaks, every pending call, asynchronous execution and fence fails
with DEAD_OBJECT at once and every later call raises it; :func:`connect` again once a server runs
again.

Memory pools cross once: the first call that uses a pool sends its descriptors and a description,
later calls name it by a number; when the pool is garbage-collected the server is told to drop it.
Handles of remote objects (prepared models, buffers, bursts, executions, fences) are released the
same way.
"""
from __future__ import annotations

import itertools
import os
import socket
import threading
import weakref
from typing import Any, Callable, Sequence

from ..errors import DriverError, invalid
from ..hal.model import Request
from ..hal.types import ErrorStatus
from ..memory import Memory
from ..runtime.sync_fence import FenceState, SyncFence
from . import codec, wire
from .fence_relay import fence_to_pipe
from .server import check_socket_path, default_socket_path, peer_credentials
from .session import FENCE_FAILED, FENCE_HANDLE, FENCE_PIPE, POOL_MEMORY, POOL_TOKEN, PROTOCOL_VERSION

Completion = Callable[[int, Any], None]
#: how long connecting waits for the server's answer to hello
HELLO_TIMEOUT_S = 30.0


class Outgoing:
    """What one call sends besides its arguments: descriptors, pools sent for the first time, and
    descriptors to close once sent."""

    def __init__(self, conn: "Connection") -> None:
        self.conn = conn
        self.fds: list[int] = []
        self.new_pools: list[tuple] = []
        self.close_after: list[int] = []

    def pool(self, memory: Memory) -> int:
        """The number that names ``memory`` on the server (sent with this call the first time)."""
        return self.conn.pool_id(memory, self)

    def request_pools(self, request: Request) -> tuple:
        if not isinstance(request, Request) or not isinstance(request.pools, (list, tuple)):
            raise invalid("request.pools must be a list of Memory pools or buffer tokens")
        out = []
        for i, pool in enumerate(request.pools):
            if isinstance(pool, Memory):
                out.append((POOL_MEMORY, self.pool(pool)))
            elif isinstance(pool, int) and not isinstance(pool, bool):
                out.append((POOL_TOKEN, pool))
            else:
                raise invalid(f"request pool {i} is neither a Memory nor a buffer token: {pool!r}")
        return tuple(out)

    def fences(self, fences: Sequence[SyncFence]) -> tuple:
        """How the server waits for each fence: its own fence by handle, any other through a pipe."""
        out = []
        for fence in fences:
            state = fence.get_state()
            handle = getattr(fence, "handle", None)
            if state is FenceState.SIGNALED:
                continue
            if state is FenceState.ERROR:
                error = fence.error
                out.append((FENCE_FAILED, (int(error.status), error.message) if error is not None else
                            (int(ErrorStatus.GENERAL_FAILURE), "signalled with an error")))
            elif handle is not None and getattr(fence, "connection", None) is self.conn:
                out.append((FENCE_HANDLE, handle))
            else:
                fd = fence_to_pipe(fence)
                self.close_after.append(fd)
                out.append((FENCE_PIPE, len(self.fds)))
                self.fds.append(fd)
        return tuple(out)


class _Pending:
    """One call waiting for its reply: a lock released when the reply is in, or when the caller is
    promoted to read the socket for everyone (``promoted``)."""

    __slots__ = ("lock", "status", "payload", "promoted")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.status = 0
        self.payload: Any = None
        self.promoted = False


class Connection:
    """A connection to a driver service; :meth:`get_devices` gives its devices as
    :class:`~gpu_driver.runtime.device.Device` objects.

    Reading the socket is one role at a time (leader/follower): a caller that finds nobody reading
    reads until its own reply is in, delivering the others' replies on the way, then hands the role
    to another waiting caller, or to the background reader while asynchronous or fenced completions
    are outstanding.  A synchronous call thus costs no thread hand-off on this side.
    """

    def __init__(self, path=None) -> None:
        from .remote_device import RemoteDevice

        self.path = check_socket_path(path if path is not None else default_socket_path())
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(str(self.path))
        except OSError as exc:
            self._sock.close()
            raise DriverError(ErrorStatus.DEVICE_UNAVAILABLE,
                              f"no driver service at {self.path}: {exc.strerror or exc}") from None
        _pid, uid, _gid = peer_credentials(self._sock)
        if uid not in (os.geteuid(), 0):
            self._sock.close()
            raise DriverError(ErrorStatus.DEVICE_UNAVAILABLE,
                              f"the service at {self.path} runs as uid {uid}, neither this user nor root")
        self._lock = threading.Lock()       # pending tables, death
        self._send_lock = threading.Lock()  # the socket's write side and the pool table
        self._ids = itertools.count(1)
        self._pool_ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._completions: dict[int, Completion] = {}
        self._pools: dict[int, tuple[weakref.ref, int]] = {}  # id(memory) -> (memory, pool id)
        self._released_handles: list[int] = []  # appended by finalizers (no lock: they run anywhere)
        self._released_pools: list[int] = []
        self._dead: str | None = None
        self._reading = False  # someone holds the reading role
        self._reading_thread: int | None = None  # the thread that holds it, once it runs
        self._background_turn = threading.Condition(self._lock)
        self._background_reads = False
        self._receiver = wire.Receiver(self._sock)
        self.results = codec.ResultDecoder()  # the compact replies of executions
        self._reader = threading.Thread(target=self._background, name=f"gpu_driver client {self.path}",
                                        daemon=True)
        self._reader.start()
        try:
            self._sock.settimeout(HELLO_TIMEOUT_S)  # a server that accepts but never answers
            info = self.call("hello", (PROTOCOL_VERSION,))
            self._sock.settimeout(None)
            self.devices = [RemoteDevice(self, i, entry) for i, entry in enumerate(info)]
        except Exception:
            self.close()
            raise

    # ---- devices ------------------------------------------------------------------------------------------
    def get_devices(self) -> list:
        """The server's devices, in its order (best first)."""
        return list(self.devices)

    def get_device(self, name: str | None = None):
        """A device of the server by name ("reference", "opencl:0", or a backend name); default: the best."""
        if name is None:
            return self.devices[0]
        for d in self.devices:
            if d.name == name:
                return d
        for d in self.devices:
            if ":" not in name and d.name.split(":")[0] == name:
                return d
        raise DriverError(ErrorStatus.DEVICE_UNAVAILABLE, f"the service has no device named {name!r}; it has "
                                                          f"{', '.join(d.name for d in self.devices)}")

    # ---- calls ---------------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._dead is None

    def check_alive(self) -> None:
        if self._dead is not None:
            raise wire.dead(self._dead)

    def call(self, method: str, args: tuple | Callable[[Outgoing], tuple], completion: Completion | None = None):
        """Send a call and wait for its reply; raise the server's DriverError.  ``args`` may be a function
        of the call's :class:`Outgoing` (for pools, fences and descriptors).  ``completion`` receives the
        later ``done`` notification (status, payload) of an asynchronous or fenced execution."""
        if callable(args):
            return self._call(lambda call_id, out: wire.encode((call_id, method, args(out))), completion, True)
        return self._call(lambda call_id, _out: wire.encode((call_id, method, args)), completion, False)

    def call_compact(self, pack: Callable[..., bytes], *fields):
        """Send the compact message ``pack(call_id, *fields)`` (a whole frame, no descriptors) and wait
        for its reply (see :meth:`call`)."""
        return self._call(lambda call_id, _out: pack(call_id, *fields), None, False)

    def _call(self, build: Callable[[int, Outgoing | None], bytes], completion: Completion | None, outgoing: bool):
        """Send the frame ``build(call_id, out)`` gives (called under the send lock; ``out`` an
        :class:`Outgoing` when ``outgoing``) and wait for the reply."""
        call_id = next(self._ids)
        pending = _Pending()
        with self._lock:
            if self._dead is not None:
                raise wire.dead(self._dead)
            self._pending[call_id] = pending
            if completion is not None:
                self._completions[call_id] = completion
        out = None
        try:
            with self._send_lock:
                if self._released_handles or self._released_pools:
                    self._send_releases()
                if outgoing:
                    out = Outgoing(self)
                wire.send_frame(self._sock, build(call_id, out), out.fds if out else ())
        except BaseException as exc:
            with self._lock:
                self._pending.pop(call_id, None)
                self._completions.pop(call_id, None)
                promoted, pending.promoted = pending.promoted, False
            if promoted:  # the reading role was handed to this call meanwhile: pass it on
                self._hand_off()
            if out is not None:
                self._forget_new_pools(out)
            if isinstance(exc, DriverError) and exc.status == ErrorStatus.DEAD_OBJECT:
                self._die(exc.message)
                raise wire.dead(self._dead or exc.message) from None
            raise
        finally:
            if out is not None:
                wire.close_fds(out.close_after)
        self._await(pending)
        if pending.status:
            with self._lock:
                self._completions.pop(call_id, None)
            if out is not None and out.new_pools:
                self._forget_new_pools(out)
            raise wire.error_from_payload(pending.status, pending.payload)
        return pending.payload

    def _send_releases(self) -> None:
        handles, self._released_handles = self._released_handles, []
        pools, self._released_pools = self._released_pools, []
        wire.send_frame(self._sock, wire.encode((0, "release", (handles, pools))))

    def release_handle(self, handle: int) -> None:
        """A remote object was garbage-collected: tell the server with the next call."""
        self._released_handles.append(handle)

    # ---- pools ---------------------------------------------------------------------------------------------
    def pool_id(self, memory: Memory, out: Outgoing) -> int:
        """(Called under the send lock.)  The number naming ``memory`` on the server; the first time,
        its description and descriptors join ``out``."""
        entry = self._pools.get(id(memory))
        if entry is not None and entry[0]() is memory:
            return entry[1]
        if not isinstance(memory, Memory):
            raise invalid(f"{memory!r} is not a Memory")
        fds = memory.fds()
        if not fds or any(fd < 0 for fd in fds):
            raise invalid(f"a {type(memory).__name__} that no file descriptor backs (closed, or device-resident) "
                          "cannot be used through the driver service")
        desc = dict(memory.describe(), fds=tuple(range(len(out.fds), len(out.fds) + len(fds))))
        out.fds.extend(fds)
        pool_id = next(self._pool_ids)
        out.new_pools.append((pool_id, desc))
        key = id(memory)
        self._pools[key] = (weakref.ref(memory), pool_id)
        weakref.finalize(memory, self._pool_collected, key, pool_id)
        return pool_id

    def sent_pool_id(self, memory) -> int | None:
        """The number naming ``memory`` on the server, or None when it was never sent."""
        with self._send_lock:
            entry = self._pools.get(id(memory))
            return entry[1] if entry is not None and entry[0]() is memory else None

    def _pool_collected(self, key: int, pool_id: int) -> None:
        entry = self._pools.get(key)
        if entry is not None and entry[1] == pool_id:
            self._pools.pop(key, None)
        self._released_pools.append(pool_id)

    def _forget_new_pools(self, out: Outgoing) -> None:
        """A call that sent pools failed: send them again next time."""
        sent = {pool_id for pool_id, _ in out.new_pools}
        with self._send_lock:
            for key, (_ref, pool_id) in list(self._pools.items()):
                if pool_id in sent:
                    self._pools.pop(key, None)

    # ---- reading: one reader at a time ---------------------------------------------------------------
    def _await(self, pending: _Pending) -> None:
        """Wait for ``pending``'s reply, reading the socket meanwhile when nobody else does.  A call made
        by a completion callback runs in the thread that is reading: it goes on reading itself."""
        me = threading.get_ident()
        with self._lock:
            nested = self._reading_thread == me
            leader = not nested and self._dead is None and not self._reading
            if leader:
                self._reading, self._reading_thread = True, me
        if not (leader or nested):
            pending.lock.acquire()
            if not pending.promoted:
                return  # the reply (or the connection's death) is in
            pending.promoted = False
            with self._lock:
                self._reading_thread = me
        while not pending.lock.acquire(blocking=False):
            if not self._read_one():
                break  # dead: _die gave ``pending`` its status
        if not nested:
            self._hand_off()

    def _hand_off(self) -> None:
        """Give the reading role to a waiting caller, else to the background reader while completions are
        outstanding, else to nobody."""
        with self._lock:
            self._reading, self._reading_thread = False, None
            if self._dead is not None:
                return
            for waiting in self._pending.values():
                self._reading = True
                waiting.promoted = True
                waiting.lock.release()
                return
            if self._completions:
                self._reading = self._background_reads = True
                self._background_turn.notify()

    def _background(self) -> None:
        """Read while asynchronous or fenced completions are outstanding and no caller reads."""
        while True:
            with self._lock:
                self._background_turn.wait_for(lambda: self._background_reads or self._dead is not None)
                if self._dead is not None:
                    return
                self._reading_thread = threading.get_ident()
            while True:
                if not self._read_one():
                    return
                with self._lock:
                    if self._pending or not self._completions:
                        self._background_reads = False
                        break
            self._hand_off()

    def _read_one(self) -> bool:
        """Read and deliver one message; False when the connection is dead."""
        try:
            message, fds = self._receiver.recv()
        except DriverError as exc:
            self._die(f"the driver service closed the connection ({exc.message})"
                      if exc.status == ErrorStatus.DEAD_OBJECT else f"the driver service sent {exc.message}")
            return False
        if fds:
            wire.close_fds(fds)
        try:
            if type(message) is bytes:  # a compact reply: an execution's result
                call_id, status, payload = wire.compact_call_id(message), 0, message
            elif message[0] == "done":
                _, call_id, status, payload = message
                with self._lock:
                    completion = self._completions.pop(call_id, None)
                if completion is not None:
                    completion(status, payload)
                return True
            else:
                call_id, status, payload = message
            with self._lock:
                pending = self._pending.pop(call_id, None)
        except (TypeError, ValueError, IndexError, KeyError, DriverError):
            self._die(f"the driver service sent a malformed message: {message!r:.200}")
            return False
        if pending is not None:
            pending.status, pending.payload = status, payload
            pending.lock.release()
        return True

    def _die(self, why: str) -> None:
        """The connection is gone: fail everything pending; later calls raise DEAD_OBJECT."""
        with self._lock:
            if self._dead is None:
                self._dead = why
            pending, self._pending = self._pending, {}
            completions, self._completions = self._completions, {}
            payload = (self._dead, ())
            for p in pending.values():
                p.status, p.payload = int(ErrorStatus.DEAD_OBJECT), payload
                if p.promoted:  # woken already to read: it finds the status instead
                    p.promoted = False
                else:
                    p.lock.release()
            self._background_turn.notify()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for completion in completions.values():
            completion(int(ErrorStatus.DEAD_OBJECT), payload)

    def close(self) -> None:
        """Disconnect; the server releases everything this connection created."""
        self._die("the connection was closed by the client")
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Connection {self.path}{'' if self._dead is None else ' (dead)'}>"


def connect(path=None) -> Connection:
    """Connect to a driver service (``gpu-driver serve``) at ``path`` (default: ``$XDG_RUNTIME_DIR/
    gpu_driver.sock``, else in the driver's state directory); ``.get_devices()`` / ``.get_device(name)``
    give remote devices with the API of local ones.  DEVICE_UNAVAILABLE when nothing serves there."""
    return Connection(path)
