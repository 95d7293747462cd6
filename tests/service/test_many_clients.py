"""Several client processes at once against one server, each preparing the four test models and
checking every output against numpy and the local reference device (clients alternate between the
served devices)."""
from .conftest import served_device_names
from .test_lifetimes import client_process


def _run_clients(server, n_clients: int, rounds: int) -> None:
    devices = served_device_names()
    procs = [client_process("check", server.path, devices[i % len(devices)], rounds, i) for i in range(n_clients)]
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.strip() == "ok", err[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_eight_clients_four_models(server):
    """About 14 s on the 2-core CI machine under load (the clients' imports and preparations dominate)."""
    _run_clients(server, 8, 10)
