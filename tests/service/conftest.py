"""Fixtures of the service tests: a server in a thread of this process (``server``), a server in a
process of its own (``spawn_server``), and a connection to the in-process one (``remote``).  Servers
host the reference device and the OpenCL (PoCL) device when there is one; everything started is
stopped at teardown."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import gpu_driver as gd
from gpu_driver.service import Limits, Server

ROOT = Path(__file__).resolve().parents[2]


def served_device_names() -> list[str]:
    names = ["reference"]
    try:
        names.append(gd.get_device("opencl").name)
    except gd.DriverError:
        pass
    return names


@pytest.fixture
def socket_dir():
    """A short directory for sockets (a Unix socket path has at most 107 bytes)."""
    path = tempfile.mkdtemp(prefix="gds", dir="/tmp")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_server(socket_dir):
    """``make_server(**limits)``: an in-process server on a fresh socket, closed at teardown."""
    servers = []

    def make(name="s.sock", **limits):
        server = Server(socket_dir / name, served_device_names(), Limits(**limits)).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def server(make_server):
    return make_server()


@pytest.fixture
def remote(server):
    conn = gd.connect(server.path)
    yield conn
    conn.close()


def wait_for_socket(path: Path, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
            return
        except OSError:
            time.sleep(0.05)
        finally:
            probe.close()
    raise TimeoutError(f"no server on {path} after {timeout} s")


def python_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def spawn_server(socket_dir):
    """``spawn_server(path=None, *options)``: ``python -m gpu_driver serve`` in a process of its own, ready
    to accept; killed at teardown."""
    procs = []

    def spawn(path=None, *options):
        path = Path(path or socket_dir / "p.sock")
        proc = subprocess.Popen([sys.executable, "-m", "gpu_driver", "serve", "--socket", str(path),
                                 "--devices", *served_device_names(), *options],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=python_env())
        procs.append(proc)
        wait_for_socket(path, proc)
        return proc, path

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.stderr.close()


@pytest.fixture(scope="module")
def suite_service():
    """A connection to an in-process server, for a whole module (the local suites run remotely)."""
    directory = Path(tempfile.mkdtemp(prefix="gds", dir="/tmp"))
    server = Server(directory / "suite.sock", served_device_names()).start()
    conn = gd.connect(server.path)
    yield conn
    conn.close()
    server.close()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=served_device_names())
def device_pair(request, remote):
    """(local device, the same device through the service)."""
    return gd.get_device(request.param), remote.get_device(request.param)
