"""Restart persistence (a new Python process) and concurrent writers (threads and processes)."""
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path


from gpu_driver.cache.format import source_digest

from .conftest import chain_model, model_input, new_files, token

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    import gpu_driver as gd
    from gpu_driver.reference.device import ReferenceDevice
    from tests.cache.conftest import model_input
    name, state, model_path, data_path, token_hex, mode = sys.argv[1:7]
    dev = ReferenceDevice() if name == "reference" else gd.get_device(name)
    dev.cache_state_dir = state
    with open(model_path, "r+b") as mc, open(data_path, "r+b") as dc:
        if mode == "load":
            pm = dev.prepare_model_from_cache([mc], [dc], bytes.fromhex(token_hex))
            sys.stdout.write(pm.execute([model_input()])[0].tobytes().hex())
        else:  # save
            from tests.cache.conftest import chain_model
            dev.prepare_model(chain_model(int(mode)), model_cache=[mc], data_cache=[dc], token=bytes.fromhex(token_hex))
""")


def _child(args, env_extra=None):
    env = dict(os.environ, GPU_DRIVER_BUILD_ID=source_digest(), PYTHONPATH=str(ROOT))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", CHILD, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_restart_persistence(device, tmp_path):
    """A cache written here is loaded by a NEW process (records persisted in the state directory)."""
    model, tok = chain_model(4), token()
    mpath, dpath = tmp_path / "m.bin", tmp_path / "d.bin"
    with open(os.open(mpath, os.O_RDWR | os.O_CREAT), "r+b") as mc, open(os.open(dpath, os.O_RDWR | os.O_CREAT), "r+b") as dc:
        pm = device.prepare_model(model, model_cache=[mc], data_cache=[dc], token=tok)
    expected = pm.execute([model_input()])[0]
    r = _child([device.name, device.cache_state_dir, mpath, dpath, tok.hex(), "load"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected.tobytes().hex()
    # the other process refuses a tampered copy as well
    data = bytearray(mpath.read_bytes())
    data[len(data) // 2] ^= 0x40
    mpath.write_bytes(bytes(data))
    r = _child([device.name, device.cache_state_dir, mpath, dpath, tok.hex(), "load"])
    assert r.returncode != 0 and "GENERAL_FAILURE" in r.stderr


def test_concurrent_thread_writers(device):
    """Many threads prepare different models into the SAME files; the result is always one whole cache."""
    tok = token()
    mc, dc = new_files()
    models = {n: chain_model(n, seed=n) for n in (1, 2, 3, 4)}
    expected = {n: device.prepare_model(m).execute([model_input()])[0].tobytes() for n, m in models.items()}
    errors = []

    def writer(n):
        try:
            for _ in range(3):
                device.prepare_model(models[n], model_cache=mc, data_cache=dc, token=tok)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in models for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    pm = device.prepare_model_from_cache(mc, dc, tok)  # consistent: files and record from the same writer
    n = len(pm.model.main.operations)
    assert pm.execute([model_input()])[0].tobytes() == expected[n]


def test_concurrent_process_writers(device, tmp_path):
    tok = token()
    mpath, dpath = tmp_path / "m.bin", tmp_path / "d.bin"
    mpath.touch()
    dpath.touch()
    env = dict(os.environ, GPU_DRIVER_BUILD_ID=source_digest(), PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, device.name, str(device.cache_state_dir), str(mpath),
                               str(dpath), tok.hex(), str(n)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n in (1, 2, 3, 4)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with open(mpath, "r+b") as mc, open(dpath, "r+b") as dc:
        pm = device.prepare_model_from_cache([mc], [dc], tok)
    n = len(pm.model.main.operations)
    cold = device.prepare_model(chain_model(n)).execute([model_input()])[0]
    assert pm.execute([model_input()])[0].tobytes() == cold.tobytes()
