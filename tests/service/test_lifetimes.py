"""Lifetimes and isolation: a client killed mid-burst leaves nothing behind on the server; a server
killed mid-execution makes every pending and later call raise DEAD_OBJECT at once, and a restarted
server serves the client again (from its cache files); per-client limits; who may connect."""
import gc
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import DriverError, ErrorStatus, FenceState, SharedMemory, SyncFence
from gpu_driver.hal.model import BufferDesc, BufferRole
from gpu_driver.runtime.driver_buffer import DriverBuffer
from gpu_driver.service.session import PROTOCOL_VERSION

from .conftest import ROOT, python_env, served_device_names
from .models import N, add_pools, add_request, add_request_model, check, four_models


def _status(fn):
    with pytest.raises(DriverError) as err:
        fn()
    return err.value.status


def _wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def client_process(*args):
    return subprocess.Popen([sys.executable, "-m", "tests.service.client_process", *map(str, args)],
                            cwd=ROOT, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("device_name", served_device_names())
def test_client_killed_mid_burst_releases_everything(server, device_name):
    proc = client_process("burst", server.path, device_name)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        (session,) = server.sessions
        held = [weakref.ref(obj if not hasattr(obj, "burst") else obj.burst) for obj in session.handles.values()]
        pools = [weakref.ref(p) for p in session.pools.values()]
        tokens = [obj.token for obj in session.handles.values() if isinstance(obj, DriverBuffer)]
        assert len(held) >= 3 and tokens and pools
        time.sleep(0.05)  # bursts are running
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert _wait_until(lambda: not server.sessions), "the session outlived its client"
    assert _wait_until(lambda: (gc.collect(), not any(r() for r in held + pools))[1]), \
        [r() for r in held + pools if r() is not None]
    device = gd.get_device(device_name)
    assert all(device.buffers.get(t) is None for t in tokens)
    with gd.connect(server.path) as conn:  # the server goes on serving
        model, inputs, expected = four_models()[0]
        check(conn.get_device(device_name).prepare_model(model).execute(inputs), expected)


def test_closing_a_connection_releases_its_handles(server):
    conn = gd.connect(server.path)
    prepared = conn.get_device("reference").prepare_model(add_request_model())
    prepared.configure_execution_burst()
    (session,) = server.sessions
    assert session.handles
    conn.close()
    assert _wait_until(lambda: not server.sessions)
    assert _status(lambda: prepared.execute([np.zeros((1, 16))] * 2)) == ErrorStatus.DEAD_OBJECT


def test_dropped_remote_objects_are_released_on_the_server(remote, server):
    device = remote.get_device("reference")
    prepared = device.prepare_model(add_request_model())
    buffer, _ = device.allocate(BufferDesc([1, 16]), [prepared], [BufferRole(0, 0)], [])
    (session,) = server.sessions
    assert len(session.handles) == 2
    del prepared, buffer
    gc.collect()
    device.get_supported_operations(add_request_model())  # the next call carries the releases
    assert _wait_until(lambda: not session.handles)


def test_server_killed_mid_execution(spawn_server, tmp_path):
    proc, path = spawn_server()
    conn = gd.connect(path)
    caching = [d for d in conn.get_devices() if d.get_number_of_cache_files_needed() != (0, 0)]
    model, inputs, expected = four_models()[1]
    token = bytes(range(32))
    mc, dc = open(tmp_path / "model.cache", "w+b"), open(tmp_path / "data.cache", "w+b")
    try:
        if caching:
            caching[0].prepare_model(model, model_cache=[mc], data_cache=[dc], token=token)
        prepared = conn.get_device("reference").prepare_model(add_request_model())
        x, y, a, b = add_pools()
        gate = SyncFence()
        fence, callback = prepared.execute_fenced(add_request(a, b, SharedMemory(64)), [gate])  # pending on the server
        errors, running = [], threading.Event()

        def executions():  # synchronous executions back to back until the server dies
            try:
                while True:
                    prepared.execute([x.reshape(1, 16), y.reshape(1, 16)])
                    running.set()
            except DriverError as exc:
                errors.append(exc)

        worker = threading.Thread(target=executions, daemon=True)
        worker.start()
        assert running.wait(30)
        killed = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        worker.join(5)
        assert not worker.is_alive(), "a pending call hung after the server died"
        assert fence.wait(5) is FenceState.ERROR
        assert time.monotonic() - killed < 5
        assert errors[0].status == ErrorStatus.DEAD_OBJECT
        assert fence.error.status == ErrorStatus.DEAD_OBJECT
        assert _status(lambda: callback.get_execution_info(1)) == ErrorStatus.DEAD_OBJECT
        # every later call raises DEAD_OBJECT at once
        assert _status(lambda: prepared.execute_synchronously(add_request(a, b, SharedMemory(64)))) == ErrorStatus.DEAD_OBJECT
        assert _status(lambda: prepared.execute_asynchronously(add_request(a, b, SharedMemory(64)))) == ErrorStatus.DEAD_OBJECT
        assert _status(lambda: conn.get_device("reference").get_status()) == ErrorStatus.DEAD_OBJECT
        assert _status(lambda: conn.get_device("reference").prepare_model(model)) == ErrorStatus.DEAD_OBJECT
        gate.signal()
        # a restarted server (the dead one's socket file is still there) serves the client again
        _, path2 = spawn_server(path)
        with gd.connect(path2) as again:
            if caching:
                warm = again.get_device(caching[0].name).prepare_model_from_cache([mc], [dc], token)
                check(warm.execute(inputs), expected)
            check(again.get_device("reference").prepare_model(model).execute(inputs), expected)
    finally:
        mc.close()
        dc.close()
        conn.close()


def test_pending_asynchronous_executions_fail_when_the_connection_dies(remote):
    prepared = remote.get_device("reference").prepare_model(add_request_model())
    _, _, a, b = add_pools()
    gate = SyncFence()
    fence, _ = prepared.execute_fenced(add_request(a, b, SharedMemory(64)), [gate])
    remote.close()
    assert fence.wait(5) is FenceState.ERROR and fence.error.status == ErrorStatus.DEAD_OBJECT


def test_per_client_limits(make_server):
    server = make_server(max_prepared_models=2, max_buffer_bytes=100)
    with gd.connect(server.path) as conn:
        device = conn.get_device("reference")
        models = [device.prepare_model(add_request_model()) for _ in range(2)]
        with pytest.raises(DriverError) as err:
            device.prepare_model(add_request_model())
        assert err.value.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
        assert "limit of 2 prepared models" in err.value.message
        with gd.connect(server.path) as other:  # limits are per client
            other.get_device("reference").prepare_model(add_request_model())
        models.pop()
        gc.collect()
        device.prepare_model(add_request_model())  # a released model frees its place
        roles = ([models[0]], [BufferRole(0, 0)], [])
        kept = device.allocate(BufferDesc([1, 16]), *roles)  # noqa: F841 (64 bytes, kept)
        with pytest.raises(DriverError) as err:
            device.allocate(BufferDesc([1, 16]), *roles)
        assert err.value.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT and "buffer bytes" in err.value.message


def test_socket_is_private_to_its_owner(server):
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_other_users_cannot_connect(server):
    def connect_as_nobody():
        pid = os.fork()
        if pid == 0:  # the child: another user
            code = 3
            try:
                os.setgid(65534)
                os.setuid(65534)
                gd.connect(server.path).close()
                code = 0
            except DriverError as exc:
                code = 1 if exc.status == ErrorStatus.DEVICE_UNAVAILABLE else 2
            finally:
                os._exit(code)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    assert connect_as_nobody() == 1  # the socket's permissions refuse them
    os.chmod(server.path, 0o666)
    assert connect_as_nobody() in (1, 2)  # the peer-credential check refuses them
    assert not server.sessions


def test_a_call_before_hello_is_refused(server):
    import socket

    from gpu_driver.service import wire

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    sock.settimeout(10)
    wire.send_message(sock, (1, "supported", (0, b"", 0)))
    (call_id, status, (message, _)), _ = wire.recv_message(sock)
    assert call_id == 1 and status == ErrorStatus.INVALID_ARGUMENT and "hello" in message
    with pytest.raises(DriverError) as err:
        wire.recv_message(sock)
    assert err.value.status == ErrorStatus.DEAD_OBJECT  # and closed
    sock.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    sock.settimeout(10)
    wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION + 1,)))
    (_, status, _), _ = wire.recv_message(sock)
    assert status == ErrorStatus.INVALID_ARGUMENT
    sock.close()


def test_a_client_that_does_not_read_does_not_stop_the_device(server, remote):
    """A client floods asynchronous executions and never reads its socket: its notifications wait in
    its own session, the device's worker thread goes on, other clients' executions complete."""
    import socket as socket_module

    from gpu_driver.service import wire

    from .test_wire_fuzz import _real_calls, reply_of

    calls, owners = _real_calls()
    sock = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    sock.connect(str(server.path))
    sock.settimeout(20)
    receiver = wire.Receiver(sock)
    wire.send_message(sock, (1, "hello", (PROTOCOL_VERSION,)))
    receiver.recv()
    for call_id, (method, args, fds) in enumerate(calls[:2], start=2):  # prepare; execute (sends the pools)
        wire.send_message(sock, (call_id, method, args), fds)
        assert reply_of(receiver.recv()[0]) == (call_id, 0)
    _, execute_args, _ = calls[1]
    flood_args = execute_args[:3] + ((),) + execute_args[4:]  # the pools are on the server already

    def flood():
        try:
            for call_id in range(100, 100_000):
                wire.send_message(sock, (call_id, "execute_async", flood_args))
        except DriverError:
            pass  # the socket was closed at the end of the test

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    time.sleep(1.0)  # its buffers fill up
    prepared = remote.get_device("reference").prepare_model(add_request_model())
    _, _, a, b = add_pools()
    for _ in range(3):
        prepared.execute_asynchronously(add_request(a, b, SharedMemory(64))).result(timeout=20)
    sock.shutdown(socket_module.SHUT_RDWR)
    sock.close()
    flooder.join(10)
    del owners


def test_a_client_cannot_shrink_its_pool_under_the_server(spawn_server):
    """SharedMemory is created size-sealed: a client that tries to shrink a pool it sent (which would
    fault the server's mapping with SIGBUS) is refused by the kernel, and the server keeps serving."""
    proc, path = spawn_server()
    with gd.connect(path) as conn:
        prepared = conn.get_device("reference").prepare_model(add_request_model())
        x, y, a, b = add_pools()
        out = SharedMemory(64)
        prepared.execute_synchronously(add_request(a, b, out))
        with pytest.raises(PermissionError):
            os.ftruncate(a.fds()[0], 0)
        prepared.execute_synchronously(add_request(a, b, out))
        np.testing.assert_array_equal(out.array(np.float32, 0, N), x + y)
    assert proc.poll() is None, f"the server died ({proc.returncode})"


def test_an_unsealed_memfd_is_refused(spawn_server):
    """A pool whose memfd is not size-sealed (the client made it itself) is refused with
    INVALID_ARGUMENT; the session and the server go on."""
    proc, path = spawn_server()
    with gd.connect(path) as conn:
        prepared = conn.get_device("reference").prepare_model(add_request_model())
        x, y, a, b = add_pools()
        fd = os.memfd_create("unsealed")
        try:
            os.ftruncate(fd, 4 * N)
            unsealed = SharedMemory(4 * N, fd=fd)
            unsealed.write(0, x.tobytes())
            with pytest.raises(DriverError) as err:
                prepared.execute_synchronously(add_request(unsealed, b, SharedMemory(64)))
            assert err.value.status == gd.ErrorStatus.INVALID_ARGUMENT and "sealed" in err.value.message
            out = SharedMemory(64)
            prepared.execute_synchronously(add_request(a, b, out))
            np.testing.assert_array_equal(out.array(np.float32, 0, N), x + y)
            unsealed.close()
        finally:
            os.close(fd)
    assert proc.poll() is None, f"the server died ({proc.returncode})"


def test_waited_for_client_fences_are_limited(make_server):
    server = make_server(max_client_fences=2)
    with gd.connect(server.path) as conn:
        prepared = conn.get_device("reference").prepare_model(add_request_model())
        _, _, a, b = add_pools()
        gates = [SyncFence() for _ in range(3)]
        fences = [prepared.execute_fenced(add_request(a, b, SharedMemory(64)), [g])[0] for g in gates[:2]]
        with pytest.raises(DriverError) as err:
            prepared.execute_fenced(add_request(a, b, SharedMemory(64)), [gates[2]])
        assert err.value.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
        gates[0].signal()
        assert fences[0].wait(10) is FenceState.SIGNALED
        fence, _ = prepared.execute_fenced(add_request(a, b, SharedMemory(64)), [gates[2]])  # a place is free again
        gates[1].signal()
        gates[2].signal()
        assert fence.wait(10) is FenceState.SIGNALED


def test_connecting_to_a_server_that_never_answers_times_out(socket_dir, monkeypatch):
    import socket as socket_module

    from gpu_driver.service import client

    monkeypatch.setattr(client, "HELLO_TIMEOUT_S", 0.5)
    listener = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    listener.bind(str(socket_dir / "mute.sock"))
    listener.listen(1)  # accepts (in the kernel), never answers
    try:
        started = time.monotonic()
        assert _status(lambda: gd.connect(socket_dir / "mute.sock")) == ErrorStatus.DEAD_OBJECT
        assert time.monotonic() - started < 10
    finally:
        listener.close()
