"""The service's wire: length-prefixed msgpack messages over a Unix stream socket, with file descriptors
passed alongside (SCM_RIGHTS).

A frame is a 4-byte little-endian body length followed by the msgpack body; the descriptors of a
message travel with its first bytes (one ``sendmsg`` per message).  The receiver reads exactly one
frame at a time, so the descriptors it collects while reading a frame are that frame's.

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
#: the largest message body accepted or sent by default (models carry their constants inline)
MAX_MESSAGE_BYTES = 1 << 30
#: the most descriptors one message may carry (the kernel's SCM_MAX_FD)
MAX_FDS = 253
_FD_SIZE = array.array("i").itemsize
_ANCILLARY = socket.CMSG_SPACE(MAX_FDS * _FD_SIZE)
_SOL_SOCKET, _SCM_RIGHTS, _MSG_CTRUNC = int(socket.SOL_SOCKET), int(socket.SCM_RIGHTS), int(socket.MSG_CTRUNC)


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


def _recv_exact(sock: socket.socket, n: int, fds: list[int], at_boundary: bool) -> bytes:
    """Exactly ``n`` bytes (collecting any descriptors into ``fds``)."""
    chunks, got = [], 0
    while got < n:
        try:
            data, ancdata, flags, _addr = sock.recvmsg(n - got, _ANCILLARY)
        except OSError as exc:
            raise dead(f"the connection is broken ({exc.strerror or exc})") from None
        for level, kind, payload in ancdata:
            if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                usable = len(payload) - len(payload) % _FD_SIZE
                fds.extend(array.array("i", payload[:usable]))
        if flags & _MSG_CTRUNC:
            raise invalid(f"a message carried more than {MAX_FDS} file descriptors")
        if not data:
            if at_boundary and got == 0:
                raise dead("the peer closed the connection")
            raise invalid(f"truncated message: the connection closed after {got} of {n} bytes")
        chunks.append(data)
        got += len(data)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)



def recv_message(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> tuple[Any, list[int]]:
    """The next message and the descriptors that came with it.

    DEAD_OBJECT when the peer closed the connection between messages; INVALID_ARGUMENT (descriptors
    closed) for a truncated, oversized or undecodable message — the stream cannot be trusted after
    that, so the caller closes the connection.
    """
    fds: list[int] = []
    try:
        (length,) = HEADER.unpack(_recv_exact(sock, HEADER.size, fds, at_boundary=True))
        if length > max_bytes:
            raise invalid(f"message of {length} bytes exceeds the limit of {max_bytes} bytes")
        body = _recv_exact(sock, length, fds, at_boundary=False)
        try:
            obj = msgpack.unpackb(body, raw=False, use_list=False, strict_map_key=True)
        except Exception as exc:  # msgpack raises many kinds (ValueError, ExtraData, StackError, …)
            raise invalid(f"malformed message ({type(exc).__name__}: {exc})") from None
    except BaseException:
        close_fds(fds)
        raise
    return obj, fds


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
