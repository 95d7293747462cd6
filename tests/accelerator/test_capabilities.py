"""Capabilities are measured once and cached per device + driver version: stable across calls and processes."""
import json
import subprocess
import sys
from pathlib import Path

from .helpers import opencl_device

_SCRIPT = """
import json, gpu_driver as gd
c = gd.get_device({name!r}).get_capabilities()
print(json.dumps([c.relaxed_float32_to_float16_performance_tensor.exec_time,
                  [p.info.exec_time for p in c.operand_performance]]))
"""


def _run(name: str, env_dir: Path) -> list:
    import os
    env = dict(os.environ, GPU_DRIVER_STATE_DIR=str(env_dir))
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _SCRIPT.format(name=name)], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_capabilities_stable_across_calls_and_processes(tmp_path):
    dev = opencl_device()
    first = _run(dev.name, tmp_path)
    second = _run(dev.name, tmp_path)
    assert first == second
    assert first[0] > 0 and all(v > 0 for v in first[1])
    cached = json.loads((tmp_path / "capabilities.json").read_text())
    assert any(k.startswith(dev.name + "|") for k in cached)


def test_capabilities_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path))
    dev = opencl_device()
    a = dev.get_capabilities()
    b = dev.get_capabilities()
    assert a == b
    assert a.relaxed_float32_to_float16_performance_scalar.exec_time > 0
