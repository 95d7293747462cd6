"""GPU_DRIVER_VLOG: debug lines per area under ``gpu_driver.<tag>`` loggers, off by default.

The variable is read once at import, so each case runs in a fresh interpreter with its own environment.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_driver as gd
from gpu_driver.vlog import TAGS, parse_tags, vlog

ROOT = Path(__file__).resolve().parents[1]

#: a small session touching the memory pools and the compilation cache on the reference device
SESSION = """
import logging, sys, tempfile
import numpy as np
import gpu_driver as gd
from gpu_driver import zoo
from gpu_driver.reference.device import ReferenceDevice
mem = gd.SharedMemory(64)
mem.close()
gd.HardwareBuffer.blob(32)
cache = gd.CompilationCache(tempfile.mkdtemp())
model = zoo.chain_model(2, (8,), seed=1)
cache.prepare(ReferenceDevice(), model)
cache.prepare(ReferenceDevice(), model)
print("levels", *(logging.getLogger("gpu_driver." + t).isEnabledFor(logging.DEBUG) for t in
                  ("compilation", "execution", "cache", "memory")))
"""


def _run(code: str, vlog_value: str | None):
    env = {k: v for k, v in os.environ.items() if k != "GPU_DRIVER_VLOG"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if vlog_value is not None:
        env["GPU_DRIVER_VLOG"] = vlog_value
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r


def _tags_logged(text: str) -> set[str]:
    return {line.split(":")[0].removeprefix("gpu_driver.") for line in text.splitlines()
            if line.startswith("gpu_driver.")}


def test_off_by_default_even_when_the_application_logs_at_debug():
    r = _run("import logging, sys; logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, "
             "format='%(name)s: %(message)s')\n" + SESSION, None)
    assert r.stderr == ""
    assert _tags_logged(r.stdout) == set()
    assert "levels False False False False" in r.stdout


def test_memory_tag_prints_the_memory_lines_only_on_stderr():
    r = _run(SESSION, "memory")
    assert _tags_logged(r.stderr) == {"memory"}
    assert "gpu_driver.memory: SharedMemory: 64 bytes on fd" in r.stderr and "(created)" in r.stderr
    assert "unmapped" in r.stderr
    assert "gpu_driver.memory: HardwareBuffer: BLOB 32x1x1 (stride 32), 32 bytes in host shared memory" in r.stderr
    assert "levels False False False True" in r.stdout


def test_cache_and_compilation_tags_tell_miss_then_hit():
    r = _run(SESSION, "compilation, cache")
    assert _tags_logged(r.stderr) == {"cache", "compilation"}
    lines = [line for line in r.stderr.splitlines() if line.startswith("gpu_driver.cache: ")]
    assert lines[0].startswith("gpu_driver.cache: CompilationCache in ")
    assert lines[1].startswith("gpu_driver.cache: miss: token ") and "on reference" in lines[1]
    assert lines[2].startswith("gpu_driver.cache: hit: token ") and lines[2].endswith(" ms")
    assert "gpu_driver.compilation: prepared a model of 2 operations on reference in " in r.stderr


def test_all_enables_every_tag_and_configured_logging_gets_each_line_once():
    code = ("import logging, sys; logging.basicConfig(stream=sys.stdout, format='APP %(name)s: %(message)s')\n"
            + SESSION)
    r = _run(code, "all")
    assert "levels True True True True" in r.stdout
    assert r.stderr == ""  # the application's handler prints them, the driver's own stays quiet
    app = [line.removeprefix("APP ") for line in r.stdout.splitlines() if line.startswith("APP ")]
    assert _tags_logged("\n".join(app)) == {"cache", "compilation", "memory"}
    # one miss and one hit, each printed once
    assert sum(line.startswith("gpu_driver.cache: miss") for line in app) == 1
    assert sum(line.startswith("gpu_driver.cache: hit") for line in app) == 1


def test_parse_tags():
    assert parse_tags("Compilation, cache") == {"compilation", "cache"}
    assert parse_tags("memory execution") == {"memory", "execution"}
    assert parse_tags("1") == parse_tags("all") == {"all"}
    assert parse_tags(None) == parse_tags("") == frozenset()
    assert set(TAGS) == {"compilation", "execution", "cache", "memory"}


def test_a_tag_is_a_lower_case_word():
    with pytest.raises(gd.DriverError) as info:
        vlog("Not a tag")
    assert info.value.message == "a VLOG tag is a lower-case word, got 'Not a tag'"
    assert vlog("memory").name == "gpu_driver.memory"
