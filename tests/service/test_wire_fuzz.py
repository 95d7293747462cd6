"""The wire is untrusted input: random bytes and random messages of the right shape (after a proper
hello) get an error reply or a closed connection, never a hang or a dead server — a well-behaved
client connected all along keeps being served."""
import socket
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_driver import DriverError, ErrorStatus
from gpu_driver.service import wire
from gpu_driver.service.session import PROTOCOL_VERSION, Session

from .models import add_request, add_request_model, check, four_models

METHODS = sorted(Session(type("S", (), {"devices": [], "limits": None})(), None, "")._handlers)
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats() | st.text(max_size=20)
    | st.binary(max_size=64),
    lambda inner: st.lists(inner, max_size=6).map(tuple) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=24)
small_ints = st.integers(-2, 6)
#: arguments shaped like real ones more often than not: tuples of small handles, indexes and values
arguments = st.lists(small_ints | values | st.lists(small_ints | values, max_size=4).map(tuple), max_size=10).map(tuple)


@pytest.fixture
def bystander(remote):
    """A well-behaved client and a check that it is still served."""
    model, inputs, expected = four_models()[3]
    prepared = remote.get_device("reference").prepare_model(model)

    def still_served():
        check(prepared.execute(inputs), expected)

    still_served()
    return still_served


def _raw_client(server):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    sock.settimeout(20)  # a hang fails the test instead of blocking it
    return sock


def reply_of(message) -> tuple:
    """(call id, status) of a reply; a compact reply (bytes) is a result: status 0."""
    return (wire.compact_call_id(message), 0) if isinstance(message, bytes) else tuple(message[:2])


def _replies_or_closes(sock, call_id):
    """The server answers ``call_id`` (any status) or closes the connection."""
    try:
        while True:
            message, fds = wire.recv_message(sock)
            wire.close_fds(fds)
            if reply_of(message)[0] == call_id:
                return reply_of(message)[1]
    except DriverError as exc:
        assert exc.status == ErrorStatus.DEAD_OBJECT  # closed, not garbage
        return None


def _send_then_release(sock, send):
    """``send()``, then a release call: answered, or the connection closed."""
    try:
        send()
        wire.send_message(sock, (99, "release", ((), ())))
    except DriverError:
        pass  # closed by the server already
    _replies_or_closes(sock, 99)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(server, bystander, data):
    sock = _raw_client(server)
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        try:
            while wire.recv_message(sock):
                pass
        except DriverError:
            pass  # replies, then closed
    finally:
        sock.close()
    bystander()


@FUZZ
@given(data=st.binary(max_size=200))
def test_random_frames(server, bystander, data):
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        assert _replies_or_closes(sock, 1) == 0
        sock.sendall(wire.HEADER.pack(len(data)) + data)
        try:
            wire.send_message(sock, (2, "release", ((), ())))
        except DriverError:
            pass  # closed by the server already
        _replies_or_closes(sock, 2)
    finally:
        sock.close()
    bystander()


@FUZZ
@given(calls=st.lists(st.tuples(st.sampled_from(METHODS) | st.text(max_size=10), arguments), min_size=1, max_size=4))
def test_random_calls(server, bystander, calls):
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        assert _replies_or_closes(sock, 1) == 0
        for call_id, (method, args) in enumerate(calls, start=2):
            if method == "hello":
                continue
            try:
                wire.send_message(sock, (call_id, method, args))
            except DriverError:
                break  # closed by the server after an earlier call
            if _replies_or_closes(sock, call_id) is None:
                break
    finally:
        sock.close()
    bystander()


@FUZZ
@given(envelope=values)
def test_random_envelopes(server, bystander, envelope):
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        assert _replies_or_closes(sock, 1) == 0
        _send_then_release(sock, lambda: wire.send_message(sock, envelope))
    finally:
        sock.close()
    bystander()


def test_a_stalled_client_does_not_stop_the_others(server, bystander):
    sock = _raw_client(server)
    try:
        sock.sendall(wire.HEADER.pack(1000) + b"partial")  # and then nothing
        for _ in range(3):
            bystander()
        deadline = time.monotonic() + 10  # the server registers the stalled connection in its own thread
        while len(server.sessions) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        np.testing.assert_equal(len(server.sessions), 2)
    finally:
        sock.close()


def _real_calls():
    """Valid calls of a session (after hello), with the descriptors each sends — prepare a model, run it
    synchronously, configure a burst and run it, … — and the objects that own those descriptors."""
    from gpu_driver.hal import serialize
    from gpu_driver.service import codec
    from gpu_driver import SharedMemory

    model = add_request_model()
    data, model_fds = serialize.pack(model)
    a, b, out = SharedMemory(64), SharedMemory(64), SharedMemory(64)
    request = add_request(a, b, out)
    args = codec.encode_arguments(request)
    pools = [(i, dict(p.describe(), fds=(i,))) for i, p in enumerate((a, b, out))]
    h = 1  # the prepared model's handle: the session's first
    return [
        ("prepare", (0, data, len(model_fds), 1, 1, None, 0, 0, None), model_fds),
        ("execute", (h, args, ((0, 0), (0, 1), (0, 2)), tuple(pools), 0, None, None),
         [m.fds()[0] for m in (a, b, out)]),
        ("burst_new", (h,), []),
        ("burst", (h + 1, args, (0, 1, 2), (), 0, None, None, 0), []),
        ("execute_fenced", (h, args, ((0, 0), (0, 1), (0, 2)), (), (), 0, None, None, None), []),
        ("allocate", (0, (1, 16), (h,), ((0, 0, 1.0),), ()), []),
        ("copy_from", (h + 3, ((2, dict(out.describe(), fds=(0,))),), 2, (1, 16)), out.fds()),
    ], (a, b, out, model)


def _mutate(value, path, replacement):
    """``value`` with the element at ``path`` (indexes taken modulo each tuple's length) replaced."""
    if not path or not isinstance(value, tuple) or not value:
        return replacement
    i = path[0] % len(value)
    return value[:i] + (_mutate(value[i], path[1:], replacement),) + value[i + 1:]


@FUZZ
@given(which=st.integers(0, 6), path=st.lists(st.integers(0, 12), min_size=1, max_size=4), replacement=values)
def test_mutated_real_calls(server, bystander, caplog, which, path, replacement):
    calls, _owners = _real_calls()
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        assert _replies_or_closes(sock, 1) == 0
        for call_id, (method, args, fds) in enumerate(calls, start=2):
            if call_id - 2 == which:
                args = _mutate(args, path, replacement)
            try:
                wire.send_message(sock, (call_id, method, args), fds)
            except DriverError:
                break
            if _replies_or_closes(sock, call_id) is None:
                break
    finally:
        sock.close()
    bystander()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], "a raw exception inside a call"


def test_unmutated_real_calls_succeed(server):
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        _replies_or_closes(sock, 1)
        calls, _owners = _real_calls()
        for call_id, (method, args, fds) in enumerate(calls, start=2):
            wire.send_message(sock, (call_id, method, args), fds)
            message, _ = wire.recv_message(sock)
            while message[0] == "done":  # the fenced execution's notification
                assert message[2] == 0, message
                message, _ = wire.recv_message(sock)
            assert reply_of(message) == (call_id, 0), message
    finally:
        sock.close()


@FUZZ
@given(tail=st.binary(max_size=80), before_hello=st.booleans())
def test_random_compact_messages(server, bystander, tail, before_hello):
    """Bodies starting with the compact marker: any length, any kind, before or after hello."""
    sock = _raw_client(server)
    try:
        if not before_hello:
            wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
            assert _replies_or_closes(sock, 1) == 0
        _send_then_release(sock, lambda: wire.send_frame(sock, wire.frame_of_body(bytes([wire.COMPACT]) + tail)))
    finally:
        sock.close()
    bystander()


u64 = st.integers(0, 2**64 - 1)
i64 = st.integers(-2**63, 2**63 - 1)


@FUZZ
@given(flags=st.integers(0, 255), handle=st.integers(0, 6) | u64, binding=st.integers(0, 20) | st.integers(0, 2**32 - 1),
       deadline=i64, loop=i64)
def test_mutated_compact_burst_executions(server, bystander, caplog, flags, handle, binding, deadline, loop):
    """A burst bound to a real request, then compact executions with any fields: each is answered (a
    result or an error), the session goes on."""
    calls, _owners = _real_calls()
    sock = _raw_client(server)
    try:
        wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
        assert _replies_or_closes(sock, 1) == 0
        for call_id, (method, args, fds) in enumerate(calls[:4], start=2):  # prepare, execute, burst_new, burst
            wire.send_message(sock, (call_id, method, args), fds)
            assert _replies_or_closes(sock, call_id) == 0
        body = wire.BURST_EXECUTE.pack(wire.COMPACT, wire.KIND_BURST_EXECUTE, 50, flags, handle, binding, deadline,
                                       loop)
        wire.send_frame(sock, wire.frame_of_body(body))
        assert _replies_or_closes(sock, 50) is not None
        wire.send_frame(sock, wire.frame_of_body(wire.BURST_EXECUTE.pack(wire.COMPACT, wire.KIND_BURST_EXECUTE, 51,
                                                                         0, 2, 0, 0, 0)))
        assert _replies_or_closes(sock, 51) == 0  # the real one still runs
    finally:
        sock.close()
    bystander()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], "a raw exception inside a call"
