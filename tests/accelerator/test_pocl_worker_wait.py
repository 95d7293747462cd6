"""PoCL's idle worker threads spin before they sleep (backends/pocl_worker_wait.py)."""
import ctypes
import os
import re
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.backends import pocl_worker_wait as ww

from .helpers import opencl_device

FIELDS = {"seq": ww.SEQ, "idle_seq": ww.IDLE_SEQ, "spin_ns": ww.SPIN_NS, "real_wait": ww.REAL_WAIT,
          "real_broadcast": ww.REAL_BROADCAST, "mutex_lock": ww.MUTEX_LOCK, "mutex_unlock": ww.MUTEX_UNLOCK,
          "sched_yield": ww.SCHED_YIELD, "clock_gettime": ww.CLOCK_GETTIME, "sleeps": ww.SLEEPS,
          "caught": ww.CAUGHT, "timeouts": ww.TIMEOUTS}


def _listing():
    """(offset in the code page, bytes, text) of each instruction of the listing."""
    at, rows = 0, []
    for hexa, text in ww.CODE:
        rows.append((at, bytes.fromhex(hexa), text))
        at += len(bytes.fromhex(hexa))
    return rows


def test_each_rip_relative_operand_reaches_the_field_it_names():
    """The displacement in each instruction (its last four bytes) added to the address after it lands
    on the data field the listing names, one page below the code."""
    checked = 0
    for at, code, text in _listing():
        m = re.search(r"(\w+)\(%rip\)", text)
        if not m:
            continue
        field = FIELDS[m.group(1)]
        disp_at = len(code) - 4
        target = ww.PAGE + at + len(code) + struct.unpack_from("<i", code, disp_at)[0]
        assert target == field, (text, hex(target), hex(field))
        checked += 1
    assert checked == 15


def test_the_entry_points_and_local_jumps_land_on_their_labels():
    rows = _listing()
    offsets = {text.split(":")[0]: at for at, _, text in rows if text.startswith(".")}
    assert rows[0][0] == ww.COUNTED_BROADCAST
    assert [at for at, _, text in rows if text.startswith("mov seq")] == [ww.SPIN_WAIT]
    now_ns = next(at for at, code, text in rows if text.startswith("sub $0x18"))
    for at, code, text in rows:
        if code[0] == 0xe8:                                        # call rel32
            assert at + 5 + struct.unpack_from("<i", code, 1)[0] == now_ns
        elif code[0] in (0x72, 0x75, 0xeb) and len(code) == 2:     # jb / jne / jmp rel8
            label = text.split()[1] if not text.startswith(".") else text.split()[2]
            assert at + 2 + struct.unpack_from("<b", code, 1)[0] == offsets[label], text
    assert len(ww.machine_code()) == now_ns + 0x24


def test_plt_calls_are_found_through_their_slot():
    # memory: [call stub_a][e8 that is data][call stub_b][stub_a: jmp *slot_a(%rip)][stub_b: jmp *slot_b]
    buf = ctypes.create_string_buffer(64)
    base = ctypes.addressof(buf)
    stub_a, stub_b, slot_a, slot_b = 32, 40, 48, 56
    code = bytearray(64)
    code[0:5] = b"\xe8" + struct.pack("<i", stub_a - 5)
    code[5:10] = b"\xb8\xe8\x00\x00\x00"                           # mov $0xe8,%eax: no call
    code[10:15] = b"\xe8" + struct.pack("<i", stub_b - 15)
    code[stub_a:stub_a + 6] = b"\xff\x25" + struct.pack("<i", slot_a - stub_a - 6)
    code[stub_b:stub_b + 6] = b"\xff\x25" + struct.pack("<i", slot_b - stub_b - 6)
    ctypes.memmove(base, bytes(code), 64)
    plt = (base + 32, 16)
    assert ww.plt_calls(bytes(code[:15]), base, base + slot_a, plt) == [base]
    assert ww.plt_calls(bytes(code[:15]), base, base + slot_b, plt) == [base + 10]
    assert ww.plt_calls(bytes(code[:15]), base, base + 8, plt) == []


def test_the_setting_names_the_spin(caplog):
    assert ww.wanted_spin_us("") == ww.SPIN_US_DEFAULT
    assert ww.wanted_spin_us("0") == 0 and ww.wanted_spin_us(" 200 ") == 200
    with caplog.at_level("WARNING"):
        assert ww.wanted_spin_us("fast") == ww.SPIN_US_DEFAULT
        assert ww.wanted_spin_us("-5") == ww.SPIN_US_DEFAULT
    assert "GPU_DRIVER_POCL_SPIN_US='fast'" in caplog.text and "'-5'" in caplog.text


def _conv_chain(layers: int, size: int, channels: int = 16):
    """``layers`` 1x1 convolutions in a row (the threaded device: enough work per kernel)."""
    rng = np.random.default_rng(3)
    weights = [(rng.standard_normal((channels, channels)) / 4).astype(np.float32) for _ in range(layers)]
    b = gd.ModelBuilder()
    cur = b.add_input(T.TENSOR_FLOAT32, [1, size, size, channels])
    for w in weights:
        filt = b.add_constant(T.TENSOR_FLOAT32, [channels, 1, 1, channels], w.reshape(channels, 1, 1, channels))
        bias = b.add_constant(T.TENSOR_FLOAT32, [channels], np.zeros(channels, np.float32))
        out = b.add_operand(T.TENSOR_FLOAT32, [1, size, size, channels])
        b.add_operation(O.CONV_2D, [cur, filt, bias] + [b.add_scalar(T.INT32, v) for v in (1, 1, 1, 0)], [out])
        cur = out
    b.set_outputs([cur])
    return b.finish(), weights


def test_workers_spin_between_launches_and_sleep_when_idle():
    dev = opencl_device()
    if "pocl" not in dev.get_version_string().lower():
        pytest.skip("PoCL's worker threads")
    if ww.statistics() is None:
        pytest.skip("PoCL's waits were not changed here (not the x86-64 PoCL of pyopencl's wheel)")
    model, weights = _conv_chain(24, 64)
    prepared = dev.prepare_model(model)
    x = np.random.default_rng(4).uniform(-1, 1, (1, 64, 64, 16)).astype(np.float32)
    # the filter is [co, 1, 1, ci]: out[co] = sum over ci of x[ci] * w[co, ci]
    expected = x.astype(np.float64)
    for w in weights:
        expected = expected @ w.astype(np.float64).T
    before = ww.statistics()
    for _ in range(5):
        out, = prepared.execute([x])
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)
    during = ww.statistics()
    # the workers went through the redirected wait (how many of its spins catch the next kernel
    # depends on the machine's load: benchmarks/pocl_worker_spin.py measures what they save)
    assert sum(during.values()) > sum(before.values())
    time.sleep(0.2)   # past any spin, ours (50 µs) or numpy's BLAS threads' after the expected values
    settled, cpu = ww.statistics(), time.process_time()
    time.sleep(0.3)
    # idle: both workers stopped spinning and sleep (well under 10 % of one CPU, no wait begun or ended)
    assert time.process_time() - cpu < 0.03
    assert ww.statistics() == settled
    # they got there by spins that ran out and then a real sleep (the last spin may run out before the
    # host has read the results of the last execution, so the counts are compared with ``before``)
    assert settled["ran_out"] > before["ran_out"] and settled["slept"] > before["slept"]


def test_the_setting_zero_leaves_pocl_waits_alone():
    code = ("import gpu_driver as gd; from gpu_driver.backends import pocl_worker_wait as ww\n"
            "try:\n    gd.get_device('opencl')\nexcept gd.DriverError:\n    pass\nprint(ww.statistics())")
    env = dict(os.environ, GPU_DRIVER_POCL_SPIN_US="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
