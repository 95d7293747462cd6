"""The service's wire: length-prefixed msgpack messages over a Unix stream socket, with file descriptors
passed alongside (SCM_RIGHTS).

A frame is a 4-byte little-endian body length followed by the body; the descriptors of a message
travel with its first bytes (one ``sendmsg`` per message).  The receiver reads exactly one frame at a
time, so the descriptors it collects while reading a frame are that frame's.  A body is msgpack, or,
when its first byte is :data:`COMPACT` (a byte msgpack never uses), a *compact* message of fixed
binary layout for the calls made per execution (a burst execution, an execution's result): those
are read as the raw body bytes and parsed with the structs below, with no nested structure to build
or check.

Everything read is untrusted: an oversized, truncated or malformed frame, too many or truncated
descriptors, raise :class:`~gpu_driver.errors.DriverError` (INVALID_ARGUMENT) and close what was
received; a closed or broken connection raises DEAD_OBJECT.  Arrays decode as tuples (hashable).
"""
from __future__ import annotations

import array
import os
import socket
import struct
from typing import Any, Sequence

import msgpack

from ..errors import DriverError, invalid
from ..hal.types import ErrorStatus

HEADER = struct.Struct("<I")
#: the largest message body accepted or sent by default (a model's small constants travel inline, its pools
#: as descriptors)
MAX_MESSAGE_BYTES = 256 << 20
#: the most descriptors one message may carry (the kernel's SCM_MAX_FD)
MAX_FDS = 253
_FD_SIZE = array.array("i").itemsize
_ANCILLARY = socket.CMSG_SPACE(MAX_FDS * _FD_SIZE)
_SOL_SOCKET, _SCM_RIGHTS, _MSG_CTRUNC = int(socket.SOL_SOCKET), int(socket.SCM_RIGHTS), int(socket.MSG_CTRUNC)


#: the first byte of a compact message (0xc1: never used by msgpack)
COMPACT = 0xC1
#: kinds of compact message (their second byte)
KIND_BURST_EXECUTE, KIND_RESULT = 1, 2
#: a burst execution: COMPACT, kind, call id, flags (:data:`MEASURE`, :data:`HAS_DEADLINE`,
#: :data:`HAS_LOOP_TIMEOUT`), burst handle, binding (a request and slots the burst was sent before), deadline,
#: loop timeout
BURST_EXECUTE = struct.Struct("<BBQBQIqq")
_BURST_EXECUTE_FRAME = struct.Struct("<I" + BURST_EXECUTE.format[1:])


def burst_execute_frame(call_id: int, flags: int, burst: int, binding: int, deadline: int, loop_timeout: int,
                        _pack=_BURST_EXECUTE_FRAME.pack, _size=BURST_EXECUTE.size) -> bytes:
    """The whole frame (header and body, packed at once) of a compact burst execution."""
    return _pack(_size, COMPACT, KIND_BURST_EXECUTE, call_id, flags, burst, binding, deadline, loop_timeout)
MEASURE, HAS_DEADLINE, HAS_LOOP_TIMEOUT = 1, 2, 4
#: an execution's result: COMPACT, kind, call id, time on device, time in driver, then the output shapes
#: (msgpack ``((dimensions, is_sufficient), …)``)
RESULT = struct.Struct("<BBQQQ")
#: every compact message's call id (after COMPACT and the kind)
_CALL_ID = struct.Struct("<Q")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def compact_call_id(body: bytes) -> int:
    """The call id of a compact message (INVALID_ARGUMENT when it is too short to hold one)."""
    if len(body) < 2 + _CALL_ID.size:
        raise invalid(f"compact message of {len(body)} bytes is too short")
    return _CALL_ID.unpack_from(body, 2)[0]


def fits_int64(value: Any) -> bool:
    """``value`` is an int (not a bool) that a compact message's signed 64-bit field holds."""
    return type(value) is int and _INT64[0] <= value <= _INT64[1]


def frame_of_body(body: bytes) -> bytes:
    """The frame of an already encoded body (INVALID_ARGUMENT when larger than the default limit)."""
    if len(body) > MAX_MESSAGE_BYTES:
        raise invalid(f"message of {len(body)} bytes exceeds the limit of {MAX_MESSAGE_BYTES} bytes")
    return HEADER.pack(len(body)) + body


def dead(message: str) -> DriverError:
    """The peer is gone (HAL DEAD_OBJECT)."""
    return DriverError(ErrorStatus.DEAD_OBJECT, message)


def close_fds(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def encode(obj: Any, max_bytes: int = MAX_MESSAGE_BYTES) -> bytes:
    """One frame (header + msgpack body) for ``obj``; INVALID_ARGUMENT when it cannot be encoded or is
    larger than ``max_bytes``."""
    try:
        body = msgpack.packb(obj, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise invalid(f"cannot encode the message: {exc}") from None
    if len(body) > max_bytes:
        raise invalid(f"message of {len(body)} bytes exceeds the limit of {max_bytes} bytes")
    return HEADER.pack(len(body)) + body


def send_frame(sock: socket.socket, frame: bytes, fds: Sequence[int] = ()) -> None:
    """Send one encoded frame and its descriptors; DEAD_OBJECT when the peer is gone."""
    if len(fds) > MAX_FDS:
        raise invalid(f"a message carries at most {MAX_FDS} file descriptors, got {len(fds)}")
    try:
        if fds:
            sent = sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            sent = sock.send(frame)
        if sent < len(frame):
            sock.sendall(memoryview(frame)[sent:])
    except OSError as exc:
        raise dead(f"the connection is closed ({exc.strerror or exc})") from None


def send_message(sock: socket.socket, obj: Any, fds: Sequence[int] = (), max_bytes: int = MAX_MESSAGE_BYTES) -> None:
    """Encode and send ``obj`` with ``fds`` (see :func:`encode`, :func:`send_frame`)."""
    send_frame(sock, encode(obj, max_bytes), fds)


class Receiver:
    """Reads the messages of one socket.

    ``greedy`` (what server and client use): each read takes whatever has arrived (at least the rest of
    the current message), so a small message costs one system call; bytes beyond the message wait
    for the next one.  A read that brings descriptors ends with the first segment of the message
    they were sent with (the kernel stops a stream read after a segment that carries descriptors,
    and they travel with a message's first bytes), so they belong to the message holding the read's
    last byte.  Not greedy: reads never go past the current message (for a socket read elsewhere too).
    """

    CHUNK = 65536

    def __init__(self, sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES, greedy: bool = True) -> None:
        self.sock = sock
        self.max_bytes = max_bytes
        self.greedy = greedy
        self._buf = bytearray()
        self._start = 0  # stream offset of _buf[0]
        self._fds: list[tuple[int, list[int]]] = []  # (stream offset of the read's last byte, its descriptors)

    def _fill(self, n: int, at_boundary: bool) -> None:
        """Read until at least ``n`` bytes are buffered."""
        while len(self._buf) < n:
            want = n - len(self._buf)
            try:
                data, ancdata, flags, _addr = self.sock.recvmsg(max(want, self.CHUNK) if self.greedy else want,
                                                                _ANCILLARY)
            except OSError as exc:
                raise dead(f"the connection is broken ({exc.strerror or exc})") from None
            fds: list[int] = []
            for level, kind, payload in ancdata:
                if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                    fds.extend(array.array("i", payload[:len(payload) - len(payload) % _FD_SIZE]))
            if fds:
                self._fds.append((self._start + len(self._buf) + max(len(data), 1) - 1, fds))
            if flags & _MSG_CTRUNC:
                raise invalid(f"a message carried more than {MAX_FDS} file descriptors")
            if not data:
                if at_boundary and not self._buf:
                    raise dead("the peer closed the connection")
                raise invalid(f"truncated message: the connection closed after {len(self._buf)} of {n} bytes")
            self._buf += data

    def recv(self) -> tuple[Any, list[int]]:
        """The next message and the descriptors that came with it: the decoded msgpack value, or the
        body (bytes) of a compact message.

        DEAD_OBJECT when the peer closed the connection between messages; INVALID_ARGUMENT (every
        descriptor received closed) for a truncated, oversized or undecodable message: the stream
        cannot be trusted after that, the caller closes the connection.
        """
        buf = self._buf
        try:
            if len(buf) < HEADER.size:
                self._fill(HEADER.size, at_boundary=True)
            (length,) = HEADER.unpack_from(buf)
            if length > self.max_bytes:
                raise invalid(f"message of {length} bytes exceeds the limit of {self.max_bytes} bytes")
            size = HEADER.size + length
            if len(buf) < size:
                self._fill(size, at_boundary=False)
            obj = bytes(buf[HEADER.size:size]) if length and buf[HEADER.size] == COMPACT else self._decode(size)
        except BaseException:
            close_fds([fd for _, fds in self._fds for fd in fds])
            self._fds = []
            raise
        del buf[:size]
        end = self._start = self._start + size
        if not self._fds:
            return obj, []
        mine: list[int] = []
        while self._fds and self._fds[0][0] < end:
            mine.extend(self._fds.pop(0)[1])
        return obj, mine

    def _decode(self, size: int) -> Any:
        with memoryview(self._buf) as view:
            try:
                return msgpack.unpackb(view[HEADER.size:size], raw=False, use_list=False, strict_map_key=True)
            except Exception as exc:  # msgpack raises many kinds (ValueError, ExtraData, StackError, …)
                raise invalid(f"malformed message ({type(exc).__name__}: {exc})") from None


def recv_message(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> tuple[Any, list[int]]:
    """The next message of ``sock`` and its descriptors, reading no further (see :class:`Receiver`)."""
    return Receiver(sock, max_bytes, greedy=False).recv()


# ---- values that cross the wire --------------------------------------------------------------------------
def error_payload(exc: DriverError) -> tuple:
    """A DriverError's (message, output shapes); its status travels beside them."""
    return exc.message, [(list(s.dimensions), bool(s.is_sufficient)) for s in exc.output_shapes]


def error_from_payload(status: int, payload) -> DriverError:
    """The DriverError :func:`error_payload` described (a malformed description: GENERAL_FAILURE)."""
    from ..hal.types import OutputShape

    try:
        message, shapes = payload
        return DriverError(ErrorStatus(status), str(message),
                           [OutputShape(list(d), bool(ok)) for d, ok in shapes])
    except (TypeError, ValueError):
        return DriverError(ErrorStatus.GENERAL_FAILURE, f"the server sent a malformed error: {payload!r}")
