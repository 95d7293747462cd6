"""PoCL's cache of loaded kernels holds more than its own 128 (backends/pocl_kernel_cache.py)."""
import collections
import os

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.backends.pocl_kernel_cache import (LOADED_KERNELS_MAX, POCL_LOADED_KERNELS_MAX, limit_compare,
                                                   loaded_kernel_limit)

from .helpers import opencl_device

# PoCL 3.0 (pyopencl's wheel), pocl_check_kernel_dlhandle_cache:
#   mov 0x4d1004c(%rip),%edx ; cmp $0x7f,%edx ; jbe +0x73
POCL_LIMIT_TEST = bytes.fromhex("8b154c00d104" "83fa7f" "7673")


def test_the_limit_compare_is_found_and_widened():
    code = b"\x90" * 40 + POCL_LIMIT_TEST + b"\xc3" * 8
    # cmp $3,%dh: the count's second byte, so entries are added while the count is below 4 * 256
    assert limit_compare(code, 1024) == (46, bytes.fromhex("80fe03"))
    assert limit_compare(code, 256) == (46, bytes.fromhex("80fe00"))
    # eax: mov 0x10(%rip),%eax ; cmp $0x7f,%eax ; jbe -> cmp $0xf,%ah
    assert limit_compare(bytes.fromhex("8b0510000000" "83f87f" "7610"), 4096) == (6, bytes.fromhex("80fc0f"))


def test_the_limit_compare_is_left_alone_unless_found_once():
    assert limit_compare(b"\x90" * 64) is None
    assert limit_compare(POCL_LIMIT_TEST + POCL_LIMIT_TEST) is None
    # the value loaded into edx, the compare on ecx: not the pattern
    assert limit_compare(bytes.fromhex("8b154c00d104" "83f97f" "7673")) is None
    # another bound than 127
    assert limit_compare(bytes.fromhex("8b154c00d104" "83fa3f" "7673")) is None
    with pytest.raises(ValueError):
        limit_compare(POCL_LIMIT_TEST, 1000)


def _mapped_kernels_by_program() -> collections.Counter:
    """Kernel libraries this process has loaded from PoCL's disk cache, counted per program directory
    (<cache>/<xx>/<program hash>/<kernel>/<local size>/<kernel>.so)."""
    roots = [r for r in (os.environ.get("POCL_CACHE_DIR"), os.path.join("pocl", "kcache")) if r]
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
        paths = {line.split()[-1] for line in f if line.rstrip().endswith(".so")}
    return collections.Counter(os.path.dirname(os.path.dirname(os.path.dirname(p)))
                               for p in paths if any(r in p for r in roots))


def test_a_model_of_more_kernels_than_pocl_keeps_stays_loaded():
    dev = opencl_device()
    if "pocl" not in dev.get_version_string().lower():
        pytest.skip("PoCL's cache of loaded kernels")
    if loaded_kernel_limit() == POCL_LOADED_KERNELS_MAX:
        pytest.skip("PoCL's limit was not raised here (not the x86-64 PoCL of pyopencl's wheel)")
    # 135 ADDs of distinct sizes: 135 distinct kernels in one program
    n = POCL_LOADED_KERNELS_MAX + 7
    b = gd.ModelBuilder()
    outs = []
    for k in range(1, n + 1):
        x = b.add_input(T.TENSOR_FLOAT32, [k])
        c = b.add_constant(T.TENSOR_FLOAT32, [k], np.arange(k, dtype=np.float32))
        out = b.add_operand(T.TENSOR_FLOAT32, [k])
        b.add_operation(O.ADD, [x, c, b.add_scalar(T.INT32, 0)], [out])
        outs.append(out)
    b.set_outputs(outs)
    prepared = dev.prepare_model(b.finish())
    inputs = [np.full(k, 0.5, np.float32) for k in range(1, n + 1)]
    for _ in range(2):
        results = prepared.execute(inputs)
        for k, r in zip(range(1, n + 1), results):
            assert r.tolist() == [i + 0.5 for i in range(k)]
    # every kernel of the program is loaded at once: PoCL's own limit would have unloaded some
    assert max(_mapped_kernels_by_program().values()) >= n


def test_the_setting_names_the_limit(caplog):
    from gpu_driver.backends.pocl_kernel_cache import wanted_limit

    assert wanted_limit("") == LOADED_KERNELS_MAX
    assert wanted_limit("none") is None and wanted_limit(" None ") is None
    assert wanted_limit("4096") == 4096
    with caplog.at_level("WARNING"):
        assert wanted_limit("1000") == LOADED_KERNELS_MAX
        assert wanted_limit("lots") == LOADED_KERNELS_MAX
    assert "GPU_DRIVER_POCL_LOADED_KERNELS='1000'" in caplog.text and "'lots'" in caplog.text
