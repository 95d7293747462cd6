"""A client of the service in a process of its own (``python -m tests.service.client_process MODE SOCKET
DEVICE …``), for the tests that need several client processes or kill one.

* ``burst``: prepare a model, allocate a driver buffer, configure a burst, print ``ready`` and run burst
  executions until killed.
* ``check ROUNDS SEED``: prepare the four test models, run each ROUNDS times with fresh inputs, check
  every output against numpy and the local reference device; print ``ok``.
"""
import sys

import numpy as np

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole

from .models import add_request, add_request_model, check, four_models


def burst(device) -> None:
    prepared = device.prepare_model(add_request_model())
    buffer = device.allocate(BufferDesc([1, 16]), [prepared], [BufferRole(0, 0)], [])  # noqa: F841 (kept)
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    prepared.execute([x, x])  # the numpy path's pools, kept by the server
    pools = [gd.SharedMemory(64) for _ in range(3)]
    b = prepared.configure_execution_burst()
    slots = [b.cache_memory(p) for p in pools]
    request = add_request(*pools)
    b.execute_synchronously(request, slots)
    print("ready", flush=True)
    while True:
        b.execute_synchronously(request, slots)


def check_models(device, rounds: int, seed: int) -> None:
    reference = gd.get_device("reference")
    cases = four_models(seed)
    prepared = [(device.prepare_model(m), reference.prepare_model(m)) for m, _, _ in cases]
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        for (remote_pm, reference_pm), (_, inputs, expected) in zip(prepared, cases):
            if r:  # fresh inputs of the same kind; expected from the reference device
                inputs = [(rng.permutation(x.reshape(-1)).reshape(x.shape)) for x in inputs]
                expected = reference_pm.execute(inputs)
            else:
                check(reference_pm.execute(inputs), expected)
            check(remote_pm.execute(inputs), expected)
    print("ok", flush=True)


def main(argv) -> int:
    mode, path, device_name, *rest = argv
    conn = gd.connect(path)
    device = conn.get_device(device_name)
    if mode == "burst":
        burst(device)
    elif mode == "check":
        check_models(device, int(rest[0]), int(rest[1]))
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
