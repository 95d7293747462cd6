"""The framing of the service's wire: messages and descriptors round-trip; oversized, truncated,
malformed and descriptor-flooded frames are clear DriverErrors; a closed peer is DEAD_OBJECT."""
import array
import os
import socket
import struct

import pytest

from gpu_driver import DriverError, ErrorStatus, SharedMemory
from gpu_driver.service import wire


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    a.close()
    b.close()


def test_message_and_descriptors_round_trip(pair):
    a, b = pair
    mem = SharedMemory(4096)
    mem.write(0, b"hello")
    wire.send_message(a, (7, "call", (1, [2, 3], b"\x00\x01", None, {"k": 1.5})), mem.fds())
    message, fds = wire.recv_message(b)
    assert message == (7, "call", (1, (2, 3), b"\x00\x01", None, {"k": 1.5}))
    assert len(fds) == 1 and fds[0] != mem.fds()[0]
    assert SharedMemory(4096, fd=fds[0]).read(0, 5) == b"hello"  # the same bytes, mapped: no copy
    os.close(fds[0])


def test_large_message_arrives_whole(pair):
    a, b = pair
    payload = os.urandom(3 << 20)
    import threading
    t = threading.Thread(target=wire.send_message, args=(a, (1, payload)))
    t.start()
    message, fds = wire.recv_message(b)
    t.join()
    assert message == (1, payload) and fds == []


def test_consecutive_messages_keep_their_descriptors_apart(pair):
    a, b = pair
    m1, m2 = SharedMemory(4096), SharedMemory(8192)
    wire.send_message(a, ("first",), m1.fds())
    wire.send_message(a, ("none",))
    wire.send_message(a, ("second",), m2.fds())
    got = [wire.recv_message(b) for _ in range(3)]
    assert [len(f) for _, f in got] == [1, 0, 1]
    assert os.fstat(got[0][1][0]).st_size == 4096 and os.fstat(got[2][1][0]).st_size == 8192
    wire.close_fds(got[0][1] + got[2][1])


def test_oversized_message_is_refused_before_reading_it(pair):
    a, b = pair
    a.sendall(struct.pack("<I", 1 << 31))
    with pytest.raises(DriverError) as err:
        wire.recv_message(b, max_bytes=1 << 20)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "exceeds the limit" in err.value.message


def test_sending_an_oversized_message_is_refused(pair):
    a, _ = pair
    with pytest.raises(DriverError) as err:
        wire.send_message(a, b"x" * 2000, max_bytes=1000)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_truncated_message_is_invalid_and_its_descriptors_closed(pair):
    a, b = pair
    mem = SharedMemory(4096)
    frame = wire.encode(("x" * 100,))
    a.sendmsg([frame[:20]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", mem.fds()))])
    a.shutdown(socket.SHUT_WR)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(DriverError) as err:
        wire.recv_message(b)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "truncated" in err.value.message
    assert len(os.listdir("/proc/self/fd")) <= before  # the received descriptor did not leak


def test_truncated_header_is_invalid(pair):
    a, b = pair
    a.sendall(b"\x05\x00")
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(DriverError) as err:
        wire.recv_message(b)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("body", [b"\x93\x01\x02", b"\x01\x02", b"\x91\xc1"],
                         ids=["short array", "extra data", "0xc1 inside"])
def test_malformed_body_is_invalid(pair, body):
    a, b = pair
    a.sendall(struct.pack("<I", len(body)) + body)
    with pytest.raises(DriverError) as err:
        wire.recv_message(b)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "malformed" in err.value.message


def test_compact_body_arrives_as_its_bytes(pair):
    """A body starting with 0xc1 (never used by msgpack) is a compact message: its bytes, undecoded."""
    a, b = pair
    body = wire.BURST_EXECUTE.pack(wire.COMPACT, wire.KIND_BURST_EXECUTE, 7, 0, 3, 1, 0, 0)
    wire.send_frame(a, wire.frame_of_body(body))
    wire.send_message(a, ("after",))
    receiver = wire.Receiver(b)
    assert receiver.recv() == (body, [])
    assert wire.compact_call_id(body) == 7
    assert receiver.recv() == (("after",), [])
    with pytest.raises(DriverError) as err:
        wire.compact_call_id(b"\xc1\x01\x00")
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_peer_closed_between_messages_is_dead_object(pair):
    a, b = pair
    a.close()
    with pytest.raises(DriverError) as err:
        wire.recv_message(b)
    assert err.value.status == ErrorStatus.DEAD_OBJECT


def test_sending_to_a_closed_peer_is_dead_object(pair):
    a, b = pair
    b.close()
    with pytest.raises(DriverError) as err:
        for _ in range(3):
            wire.send_message(a, ("x",))
    assert err.value.status == ErrorStatus.DEAD_OBJECT


def test_too_many_descriptors_are_refused(pair):
    a, _ = pair
    with pytest.raises(DriverError) as err:
        wire.send_message(a, ("x",), [0] * (wire.MAX_FDS + 1))
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_greedy_receiver_keeps_descriptors_with_their_messages(pair):
    """Messages that arrive together are read at once; each keeps its own descriptors."""
    a, b = pair
    mems = [SharedMemory(4096 * (i + 1)) for i in range(4)]
    sent = [(("a",), [mems[0]]), (("b",), []), (("c",), [mems[1], mems[2]]), (("d", b"x" * 100_000), []),
            (("e",), [mems[3]])]
    import threading
    t = threading.Thread(target=lambda: [wire.send_message(a, m, [fd for mem in ms for fd in mem.fds()])
                                         for m, ms in sent])
    t.start()
    receiver = wire.Receiver(b)
    for message, memories in sent:
        got, fds = receiver.recv()
        assert got == message
        assert [os.fstat(fd).st_size for fd in fds] == [m.size for m in memories]
        wire.close_fds(fds)
    t.join()
