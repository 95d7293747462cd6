"""One client's session on the server: its handles and the calls it makes.

A session owns what its client created — prepared models, driver buffers (and their tokens), bursts,
reusable executions, the fences of its fenced executions, and the memory pools it sent — under
integer handles.  When the client goes away (closed socket, crash, kill -9) the session drops them
all; work still in flight finishes and then nothing refers to it.

Messages are ``(call_id, method, args)`` with descriptors alongside; the reply is
``(call_id, status, payload)`` (status 0: payload is the result; otherwise payload is the error's
message and output shapes).  ``call_id`` 0 asks for no reply.  Asynchronous and fenced executions
reply when launched and later send ``("done", call_id, status, payload)``.  Synchronous executions
reply with a compact result (:func:`gpu_driver.service.codec.result_frame`).  Every argument is
untrusted: malformed ones are INVALID_ARGUMENT replies; a malformed envelope closes the connection.

A burst's executions are compact messages (:data:`gpu_driver.service.wire.BURST_EXECUTE`): a ``burst``
call may name a *binding* (a small number the client picks) under which the burst keeps the call's
request and slots; later executions of the same request name the binding only, and run straight on
the session's local :class:`~gpu_driver.runtime.burst.Burst`, in the thread that read them.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import DriverError, failure, invalid
from ..hal import serialize
from ..hal.model import BufferDesc, BufferRole, Request
from ..hal.types import ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from ..memory import Memory, memory_from_description
from ..memory.base import size_sealed
from ..runtime.burst import Burst
from ..runtime.driver_buffer import DriverBuffer
from ..runtime.prepared_model import PreparedModel
from ..runtime.reusable_execution import ReusableExecution
from ..runtime.sync_fence import FencedExecutionCallback, FenceState, SyncFence
from . import codec, wire
from .codec import check_int, check_optional_int, check_seq

log = logging.getLogger("gpu_driver.service")

PROTOCOL_VERSION = 2
#: request pools: a pool the client sent (by its id) or a driver buffer (by token)
POOL_MEMORY, POOL_TOKEN = 0, 1
#: fences a fenced execution waits for: one of this session's fences, a client's fence as a pipe, or a failed
#: one (with its error)
FENCE_HANDLE, FENCE_PIPE, FENCE_FAILED = 0, 1, 2


#: notifications queued for a client that does not read them before its connection is closed
MAX_UNSENT_NOTIFICATIONS = 10000


@dataclass(frozen=True)
class Limits:
    """Per-client limits (``serve(..., limits=Limits(...))``); exceeding one is
    RESOURCE_EXHAUSTED_PERSISTENT with a message naming the limit."""

    #: prepared models alive at once
    max_prepared_models: int = 64
    #: bytes of driver-managed buffers (``allocate``) alive at once, counted at allocation
    max_buffer_bytes: int = 1 << 30
    #: memory pools the client has sent and not released
    max_pools: int = 4096
    #: handles of every kind alive at once (bursts, executions, fences, …)
    max_handles: int = 65536
    #: the client's own fences (pipes) that the server waits for at once
    max_client_fences: int = 256
    #: the largest message accepted
    max_message_bytes: int = wire.MAX_MESSAGE_BYTES


def exhausted(message: str) -> DriverError:
    return DriverError(ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, message)


class _Fds:
    """The descriptors of one message: handlers ``claim`` those they keep; the rest are closed after
    the call."""

    def __init__(self, fds: list[int]) -> None:
        self.fds = fds
        self.claimed: set[int] = set()
        self.new_pools: list[int] = []  # pools this call added (dropped again when it fails)

    def get(self, index: Any) -> int:
        index = check_int(index, "descriptor index")
        if not 0 <= index < len(self.fds):
            raise invalid(f"descriptor {index} was not sent with the message ({len(self.fds)} were)")
        return self.fds[index]

    def claim(self, index: Any) -> int:
        fd = self.get(index)
        if fd in self.claimed:
            raise invalid(f"descriptor {index} is used twice")
        self.claimed.add(fd)
        return fd

    def close_rest(self) -> None:
        wire.close_fds([fd for fd in self.fds if fd not in self.claimed])


def keep_fds_with(memory: Memory, fds: _Fds) -> None:
    """A pool built on received descriptors either duplicated them or adopted them: the adopted ones
    are closed with the pool, the others after the call."""
    for fd in memory.fds():
        if fd in fds.fds and fd not in fds.claimed:
            fds.claimed.add(fd)
            weakref.finalize(memory, os.close, fd)


#: bindings a burst keeps (numbered 0 … MAX_BURST_BINDINGS - 1 by the client)
MAX_BURST_BINDINGS = 16
_MEASURE = (MeasureTiming.NO, MeasureTiming.YES)


class _BurstState:
    """A burst on the server: the burst object and its bindings (binding -> (request, slots))."""

    def __init__(self, burst: Burst) -> None:
        self.burst = burst
        self.bindings: dict[int, tuple[Request, tuple[int, ...]]] = {}

    def bind(self, binding: Any, request: Request, slots: tuple[int, ...]) -> None:
        binding = check_int(binding, "burst binding")
        if not 0 <= binding < MAX_BURST_BINDINGS:
            raise invalid(f"burst binding {binding} is not in 0 … {MAX_BURST_BINDINGS - 1}")
        self.bindings[binding] = (request, slots)

    def forget_slot(self, slot: int) -> None:
        for binding in [b for b, (_, slots) in self.bindings.items() if slot in slots]:
            del self.bindings[binding]


@dataclass
class _Result:
    """A handler's execution result, replied as a compact result."""

    shapes: list
    timing: Any



Handler = Callable[[Sequence, _Fds, int], Any]


class Session:
    """One connected client (see the module docstring); :meth:`run` serves it until it goes away."""

    def __init__(self, server, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.devices = server.devices
        self.limits: Limits = server.limits
        self.sock = sock
        self.peer = peer
        self._send_lock = threading.Lock()
        # notifications (execution done) wait here for the session's writer thread, so the device's
        # threads that finish executions never block on a client that does not read its socket
        self._outbox: list[tuple] = []
        self._outbox_ready = threading.Condition(threading.Lock())
        self._writer: threading.Thread | None = None
        self._state_lock = threading.Lock()
        self._closed = False
        self._greeted = False
        self.handles: dict[int, object] = {}
        self.pools: dict[int, Memory] = {}
        self.buffer_bytes: dict[int, int] = {}  # token -> bytes counted against the limit
        self._next_handle = 1
        self._client_fences: list[SyncFence] = []  # stand-ins for the client's fences (pipes)
        self._handlers: dict[str, Handler] = {
            "hello": self._hello, "supported": self._supported, "prepare": self._prepare,
            "prepare_from_cache": self._prepare_from_cache, "execute": self._execute,
            "execute_async": self._execute_async, "execute_fenced": self._execute_fenced,
            "burst_new": self._burst_new, "burst": self._burst, "burst_free": self._burst_free,
            "reusable_new": self._reusable_new, "reusable_compute": self._reusable_compute,
            "reusable_fenced": self._reusable_fenced, "allocate": self._allocate, "copy_to": self._copy_to,
            "copy_from": self._copy_from, "buffer_info": self._buffer_info, "release": self._release,
        }

    # ---- the connection ----------------------------------------------------------------------------------
    def run(self) -> None:
        receiver = wire.Receiver(self.sock, self.limits.max_message_bytes)
        try:
            while True:
                try:
                    message, fds = receiver.recv()
                except DriverError as exc:
                    if exc.status != ErrorStatus.DEAD_OBJECT:
                        log.warning("client %s: %s; closing its connection", self.peer, exc.message)
                    return
                if not (self._serve_compact(message, fds) if type(message) is bytes
                        else self._dispatch(message, _Fds(fds))):
                    return
        finally:
            self.close()

    def _dispatch(self, message, fds: _Fds) -> bool:
        """Serve one message; False when the connection must close."""
        after = None
        try:
            if not (isinstance(message, tuple) and len(message) == 3 and isinstance(message[0], int)
                    and not isinstance(message[0], bool) and isinstance(message[1], str)
                    and isinstance(message[2], tuple)):
                log.warning("client %s: malformed message envelope; closing its connection", self.peer)
                return False
            call_id, method, args = message
            handler = self._handlers.get(method)
            try:
                if handler is None:
                    raise invalid(f"unknown call {method!r:.80}")
                if not self._greeted and method != "hello":
                    raise invalid(f"{method!r:.80} before hello: the first call of a session is hello")
                result = handler(args, fds, call_id)
                if isinstance(result, _Then):
                    result, after = result.result, result.after
                reply = codec.result_frame(call_id, result.shapes, result.timing) if type(result) is _Result \
                    else (call_id, 0, result)
            except Exception as exc:  # reported to the client, the session goes on
                reply = (call_id, *self._error_reply(method, exc))
                for pool_id in fds.new_pools:  # the client sends them again with its next call
                    self.pools.pop(pool_id, None)
        finally:
            fds.close_rest()
        if call_id:
            if not (self.send_frame(reply) if type(reply) is bytes else self.send(reply)):
                return False
        if after is not None:
            after()
        return self._greeted

    def _serve_compact(self, body: bytes, fds: list[int]) -> bool:
        """Serve one compact message (a burst execution, run here, in the reading thread); False when the
        connection must close (a compact message that is not a well-formed burst execution, or one
        carrying descriptors, or any before hello)."""
        if fds or not self._greeted or len(body) != wire.BURST_EXECUTE.size or body[1] != wire.KIND_BURST_EXECUTE:
            wire.close_fds(fds)
            log.warning("client %s: malformed compact message; closing its connection", self.peer)
            return False
        _, _, call_id, flags, handle, binding, deadline, loop = wire.BURST_EXECUTE.unpack(body)
        try:
            state = self.handles.get(handle)
            if type(state) is not _BurstState:
                raise invalid(f"{handle} is not a live burst of this client")
            entry = state.bindings.get(binding)
            if entry is None:
                raise invalid(f"burst binding {binding} names no request of this burst (never sent, or one of "
                              "its memories was freed)")
            if flags & ~(wire.MEASURE | wire.HAS_DEADLINE | wire.HAS_LOOP_TIMEOUT):
                raise invalid(f"unknown burst execution flags {flags:#x}")
            shapes, timing = state.burst.execute_synchronously(
                entry[0], entry[1], _MEASURE[flags & wire.MEASURE], deadline if flags & wire.HAS_DEADLINE else None,
                loop if flags & wire.HAS_LOOP_TIMEOUT else None)
            reply = codec.result_frame(call_id, shapes, timing)
        except Exception as exc:  # reported to the client, the session goes on
            reply = wire.encode((call_id, *self._error_reply("burst", exc)))
        return self.send_frame(reply) if call_id else True

    def _error_reply(self, method: str, exc: Exception) -> tuple[int, tuple]:
        if isinstance(exc, DriverError):
            return int(exc.status), wire.error_payload(exc)
        if isinstance(exc, (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)):
            return int(ErrorStatus.INVALID_ARGUMENT), (f"malformed {method!r:.80} call: {type(exc).__name__}: {exc}",
                                                       ())
        log.exception("client %s: %s failed", self.peer, method)  # device trouble
        return int(ErrorStatus.GENERAL_FAILURE), (f"{type(exc).__name__}: {exc}", ())

    def send(self, message) -> bool:
        """Send a reply or notification; False when the client is gone."""
        try:
            frame = wire.encode(message, self.limits.max_message_bytes)
        except DriverError as exc:  # a result too large to send: its call fails instead
            failed = (int(ErrorStatus.GENERAL_FAILURE), (exc.message, ()))
            frame = wire.encode(message[:2] + failed if message[0] == "done" else (message[0], *failed))
        return self.send_frame(frame)

    def send_frame(self, frame: bytes) -> bool:
        """Send an encoded frame; False when the client is gone."""
        with self._send_lock:
            if self._closed:
                return False
            try:
                wire.send_frame(self.sock, frame)
            except DriverError:
                return False
        return True

    def close(self) -> None:
        """The client is gone: drop everything it owned; its client fences enter ERROR."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            handles, self.handles = self.handles, {}
            self.pools = {}
            self.buffer_bytes = {}
            client_fences, self._client_fences = self._client_fences, []
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # also wakes a send blocked on a client that does not read
        except OSError:
            pass
        with self._send_lock:
            self.sock.close()
        with self._outbox_ready:
            self._outbox.clear()
            self._outbox_ready.notify()
        self.server.relay.abandon(client_fences, f"client {self.peer} disconnected")
        log.info("client %s disconnected; released %d handle(s)", self.peer, len(handles))
        handles.clear()
        self.server.session_closed(self)

    # ---- handles ----------------------------------------------------------------------------------------
    def _add(self, obj: object) -> int:
        with self._state_lock:
            if len(self.handles) >= self.limits.max_handles:
                raise exhausted(f"per-client limit of {self.limits.max_handles} live handles reached")
            handle = self._next_handle
            self._next_handle += 1
            self.handles[handle] = obj
            return handle

    def _get(self, handle: Any, kind: type, what: str):
        obj = self.handles.get(check_int(handle, f"{what} handle"))
        if not isinstance(obj, kind):
            raise invalid(f"{handle!r} is not a live {what} of this client")
        return obj

    def count(self, kind: type) -> int:
        return sum(isinstance(o, kind) for o in list(self.handles.values()))

    def _device(self, index: Any):
        index = check_int(index, "device index")
        if not 0 <= index < len(self.devices):
            raise invalid(f"no device {index} (the server has {len(self.devices)})")
        return self.devices[index]

    # ---- pools and requests --------------------------------------------------------------------------------
    def _add_pools(self, new_pools: Any, fds: _Fds) -> None:
        """Map the pools the client sends for the first time: ``((pool_id, description), …)``, each
        description's ``fds`` being indexes into the message's descriptors."""
        for entry in check_seq(new_pools, "new pools"):
            pool_id, desc = check_seq(entry, "new pool", 2)
            check_int(pool_id, "pool id")
            if not isinstance(desc, dict) or not isinstance(desc.get("fds"), tuple):
                raise invalid(f"pool {pool_id}: malformed description")
            if len(self.pools) >= self.limits.max_pools:
                raise exhausted(f"per-client limit of {self.limits.max_pools} memory pools reached")
            desc = dict(desc, fds=[fds.get(i) for i in desc["fds"]])
            if desc.get("kind") != "mmap_fd" and not all(isinstance(fd, int) and size_sealed(fd) for fd in desc["fds"]):
                # a holder of an unsealed memfd could shrink it under the server's mapping (SIGBUS)
                raise invalid(f"pool {pool_id}: shared memory must have its size sealed (F_SEAL_SHRINK, "
                              "F_SEAL_GROW), as gpu_driver.SharedMemory and HardwareBuffer create it")
            memory = memory_from_description(desc)
            keep_fds_with(memory, fds)
            self.pools[pool_id] = memory
            fds.new_pools.append(pool_id)

    def _pool(self, pool_id: Any) -> Memory:
        memory = self.pools.get(check_int(pool_id, "pool id"))
        if memory is None:
            raise invalid(f"pool {pool_id} was never sent or was released")
        return memory

    def _request_pool(self, entry: Any):
        kind, value = check_seq(entry, "request pool", 2)
        if kind == POOL_MEMORY:
            return self._pool(value)
        if kind == POOL_TOKEN:
            token = check_int(value, "buffer token")
            if token not in self.buffer_bytes:
                raise invalid(f"memory-domain token {token} is not a live buffer of this client")
            return token
        raise invalid(f"unknown request pool kind {kind!r}")

    def _request(self, args: Any, pools: Any, new_pools: Any, fds: _Fds) -> Request:
        self._add_pools(new_pools, fds)
        inputs, outputs = codec.decode_arguments(args)
        return Request(inputs, outputs, [self._request_pool(p) for p in check_seq(pools, "request pools")])

    def _wait_fences(self, wait_for: Any, fds: _Fds) -> list[SyncFence]:
        fences = []
        for entry in check_seq(wait_for, "wait_for"):
            kind, value = check_seq(entry, "fence", 2)
            if kind == FENCE_HANDLE:
                fences.append(self._get(value, SyncFence, "fence"))
            elif kind == FENCE_PIPE:
                with self._state_lock:
                    self._client_fences = [f for f in self._client_fences if f.get_state() is FenceState.ACTIVE]
                    if len(self._client_fences) >= self.limits.max_client_fences:
                        raise exhausted(f"per-client limit of {self.limits.max_client_fences} waited-for client "
                                        "fences reached")
                    fence = self.server.relay.watch(fds.claim(value))
                    self._client_fences.append(fence)
                fences.append(fence)
            elif kind == FENCE_FAILED:
                status, message = check_seq(value, "failed fence", 2)
                fence = SyncFence()
                fence.signal(DriverError(ErrorStatus(check_int(status, "fence error status")), str(message)))
                fences.append(fence)
            else:
                raise invalid(f"unknown fence kind {kind!r}")
        return fences

    def _notify(self, call_id: int, status: int, payload) -> None:
        """Queue an execution's ``done`` notification for the writer thread (never blocks)."""
        with self._outbox_ready:
            if self._closed:
                return
            if len(self._outbox) >= MAX_UNSENT_NOTIFICATIONS:
                log.warning("client %s does not read its notifications; closing its connection", self.peer)
                threading.Thread(target=self.close, daemon=True).start()
                return
            self._outbox.append(("done", call_id, status, payload))
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_notifications, daemon=True,
                                                name=f"gpu_driver session {self.peer} writer")
                self._writer.start()
            self._outbox_ready.notify()

    def _write_notifications(self) -> None:
        while True:
            with self._outbox_ready:
                self._outbox_ready.wait_for(lambda: self._outbox or self._closed)
                if self._closed:
                    return
                message = self._outbox.pop(0)
            if not self.send(message):
                return

    def _notify_fence(self, call_id: int, callback: FencedExecutionCallback) -> None:
        try:
            launched, fenced = callback.get_execution_info(0)
        except DriverError as exc:
            self._notify(call_id, int(exc.status), wire.error_payload(exc))
            return
        self._notify(call_id, 0, ((launched.time_on_device, launched.time_in_driver),
                                  (fenced.time_on_device, fenced.time_in_driver)))

    def _fenced_reply(self, call_id: int, fence: SyncFence, callback: FencedExecutionCallback) -> "_Then":
        handle = self._add(fence)
        return _Then(handle, lambda: fence.add_done_callback(lambda _f: self._notify_fence(call_id, callback)))

    # ---- calls ------------------------------------------------------------------------------------------
    def _hello(self, args, fds, call_id):
        (version,) = check_seq(args, "hello", 1)
        if version != PROTOCOL_VERSION:
            raise invalid(f"protocol version {version!r} is not the server's {PROTOCOL_VERSION}")
        self._greeted = True
        return self.server.device_info

    def _model(self, data: Any, n_fds: Any, fds: _Fds):
        if not isinstance(data, bytes):
            raise invalid("the model must be serialized bytes")
        received = [fds.get(i) for i in range(check_int(n_fds, "model descriptor count"))]
        model = serialize.unpack(data, received)
        for pool in getattr(model, "pools", ()):
            if isinstance(pool, Memory):
                keep_fds_with(pool, fds)
        return model

    def _supported(self, args, fds, call_id):
        device, data, n_fds = check_seq(args, "supported", 3)
        return tuple(self._device(device).get_supported_operations(self._model(data, n_fds, fds)))

    def _prepared_reply(self, prepared: PreparedModel) -> tuple:
        with self._state_lock:
            if self.count(PreparedModel) >= self.limits.max_prepared_models:
                raise exhausted(f"per-client limit of {self.limits.max_prepared_models} prepared models reached")
        handle = self._add(prepared)
        outputs = range(len(prepared.model.main.output_indexes))
        io, _ = serialize.pack(codec.io_model(prepared.model))
        return handle, io, tuple(prepared.known_output_shape(i) for i in outputs), int(prepared.preference), \
            int(prepared.priority)

    @staticmethod
    def _cache_fds(fds: _Fds, first: int, n_model: Any, n_data: Any) -> tuple[list[int], list[int]]:
        n_model, n_data = check_int(n_model, "model cache count"), check_int(n_data, "data cache count")
        if n_model < 0 or n_data < 0:
            raise invalid("cache file counts must be >= 0")
        files = [fds.get(first + i) for i in range(n_model + n_data)]
        return files[:n_model], files[n_model:]

    @staticmethod
    def _token(token: Any) -> bytes | None:
        if token is not None and not isinstance(token, bytes):
            raise invalid("the cache token must be bytes")
        return token

    def _prepare(self, args, fds, call_id):
        device, data, n_fds, preference, priority, deadline, n_model, n_data, token = check_seq(args, "prepare", 9)
        with self._state_lock:
            if self.count(PreparedModel) >= self.limits.max_prepared_models:
                raise exhausted(f"per-client limit of {self.limits.max_prepared_models} prepared models reached")
        model = self._model(data, n_fds, fds)
        model_cache, data_cache = self._cache_fds(fds, check_int(n_fds, "model descriptor count"), n_model, n_data)
        prepared = self._device(device).prepare_model(
            model, ExecutionPreference(check_int(preference, "preference")), Priority(check_int(priority, "priority")),
            check_optional_int(deadline, "deadline"), model_cache, data_cache, self._token(token))
        return self._prepared_reply(prepared)

    def _prepare_from_cache(self, args, fds, call_id):
        device, n_model, n_data, token, deadline = check_seq(args, "prepare_from_cache", 5)
        model_cache, data_cache = self._cache_fds(fds, 0, n_model, n_data)
        prepared = self._device(device).prepare_model_from_cache(model_cache, data_cache, self._token(token),
                                                                 check_optional_int(deadline, "deadline"))
        return self._prepared_reply(prepared)

    def _execute(self, args, fds, call_id):
        pm, req, pools, new_pools, measure, deadline, loop = check_seq(args, "execute", 7)
        prepared = self._get(pm, PreparedModel, "prepared model")
        request = self._request(req, pools, new_pools, fds)
        return _Result(*prepared.execute_synchronously(request, MeasureTiming(measure), deadline, loop))

    def _execute_async(self, args, fds, call_id):
        pm, req, pools, new_pools, measure, deadline, loop = check_seq(args, "execute_async", 7)
        prepared = self._get(pm, PreparedModel, "prepared model")
        request = self._request(req, pools, new_pools, fds)
        future = prepared.execute_asynchronously(request, MeasureTiming(measure), deadline, loop)

        def done(fut) -> None:
            exc = fut.exception()
            if exc is None:
                self._notify(call_id, 0, codec.encode_result(*fut.result()))
                return
            if not isinstance(exc, DriverError):
                exc = failure(f"{type(exc).__name__}: {exc}")
            self._notify(call_id, int(exc.status), wire.error_payload(exc))

        return _Then(None, lambda: future.add_done_callback(done))

    def _execute_fenced(self, args, fds, call_id):
        pm, req, pools, new_pools, wait_for, measure, deadline, loop, after = check_seq(args, "execute_fenced", 9)
        prepared = self._get(pm, PreparedModel, "prepared model")
        request = self._request(req, pools, new_pools, fds)
        fences = self._wait_fences(wait_for, fds)
        fence, callback = prepared.execute_fenced(request, fences, MeasureTiming(measure), deadline, loop, after)
        return self._fenced_reply(call_id, fence, callback)

    def _burst_new(self, args, fds, call_id):
        (pm,) = check_seq(args, "burst_new", 1)
        return self._add(_BurstState(self._get(pm, PreparedModel, "prepared model").configure_execution_burst()))

    def _burst(self, args, fds, call_id):
        """A burst execution sending its request whole; with a binding, later ones send compact messages."""
        handle, req, pool_ids, new_pools, measure, deadline, loop, binding = check_seq(args, "burst", 8)
        state = self._get(handle, _BurstState, "burst")
        if new_pools:
            self._add_pools(new_pools, fds)
        slots = tuple(state.burst.cache_memory(self._pool(p)) for p in check_seq(pool_ids, "burst pools"))
        request = Request(*codec.decode_arguments(req), [])
        if binding is not None:
            state.bind(binding, request, slots)
        return _Result(*state.burst.execute_synchronously(request, slots, measure, deadline, loop))

    def _burst_free(self, args, fds, call_id):
        handle, pool_id = check_seq(args, "burst_free", 2)
        state = self._get(handle, _BurstState, "burst")
        burst = state.burst
        slot = burst.cache_memory(self._pool(pool_id))
        burst.free_memory(slot)
        state.forget_slot(slot)

    def _reusable_new(self, args, fds, call_id):
        pm, req, pools, new_pools, measure, loop = check_seq(args, "reusable_new", 6)
        prepared = self._get(pm, PreparedModel, "prepared model")
        request = self._request(req, pools, new_pools, fds)
        return self._add(prepared.create_reusable_execution(request, MeasureTiming(measure), loop))

    def _reusable_compute(self, args, fds, call_id):
        handle, deadline = check_seq(args, "reusable_compute", 2)
        return _Result(*self._get(handle, ReusableExecution, "reusable execution").compute(deadline))

    def _reusable_fenced(self, args, fds, call_id):
        handle, wait_for, deadline, after = check_seq(args, "reusable_fenced", 4)
        execution = self._get(handle, ReusableExecution, "reusable execution")
        fence, callback = execution.compute_fenced(self._wait_fences(wait_for, fds), deadline, after)
        return self._fenced_reply(call_id, fence, callback)

    def _allocate(self, args, fds, call_id):
        device, dims, pms, input_roles, output_roles = check_seq(args, "allocate", 5)
        models = [self._get(h, PreparedModel, "prepared model") for h in check_seq(pms, "prepared models")]

        def roles(enc, what):
            return [BufferRole(*check_seq(r, what, 3)) for r in check_seq(enc, what)]

        buffer, token = self._device(device).allocate(BufferDesc(list(check_seq(dims, "dimensions"))), models,
                                                      roles(input_roles, "input role"),
                                                      roles(output_roles, "output role"))
        nbytes = buffer.nbytes or 0
        with self._state_lock:
            held = sum(self.buffer_bytes.values())
            if held + nbytes > self.limits.max_buffer_bytes:
                raise exhausted(f"per-client limit of {self.limits.max_buffer_bytes} buffer bytes reached "
                                f"({held} held, {nbytes} asked)")
            self.buffer_bytes[token] = nbytes
        try:
            return self._add(buffer), token
        except DriverError:
            self.buffer_bytes.pop(token, None)
            raise

    def _copy_to(self, args, fds, call_id):
        handle, new_pools, pool_id = check_seq(args, "copy_to", 3)
        buffer = self._get(handle, DriverBuffer, "buffer")
        self._add_pools(new_pools, fds)
        buffer.copy_to(None if pool_id is None else self._pool(pool_id))  # None: no pool (refused by the rules)

    def _copy_from(self, args, fds, call_id):
        handle, new_pools, pool_id, dims = check_seq(args, "copy_from", 4)
        buffer = self._get(handle, DriverBuffer, "buffer")
        self._add_pools(new_pools, fds)
        buffer.copy_from(None if pool_id is None else self._pool(pool_id), dims)

    def _buffer_info(self, args, fds, call_id):
        (handle,) = check_seq(args, "buffer_info", 1)
        buffer = self._get(handle, DriverBuffer, "buffer")
        return buffer.initialized, tuple(buffer.dimensions), buffer.nbytes, buffer.is_tensor

    def _release(self, args, fds, call_id):
        handles, pool_ids = check_seq(args, "release", 2)
        with self._state_lock:
            for h in check_seq(handles, "handles"):
                obj = self.handles.pop(h, None)
                if isinstance(obj, DriverBuffer):
                    self.buffer_bytes.pop(obj.token, None)
            for p in check_seq(pool_ids, "pool ids"):
                self.pools.pop(p, None)


@dataclass
class _Then:
    """A handler's result plus what to do once the reply is sent (start notifications that must
    follow it)."""

    result: Any
    after: Callable[[], None]
