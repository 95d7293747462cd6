"""PoCL's cache of loaded kernels: room for the kernels of every model a process runs.

PoCL 3.0 keeps the kernels it has loaded (a dlopen handle per kernel and work-group size) in one
process-wide cache of at most 128 entries (``MAX_CACHE_ITEMS``, a compile-time constant); past that,
loading a kernel evicts the least recently used one that is not running.  Models whose kernels
together exceed 128, run in turn in one process, load every kernel again from PoCL's disk cache at
every launch (README).  PoCL tests the limit in one place, in ``pocl_check_kernel_dlhandle_cache``:
``mov handle_count(%rip), %r32; cmp $0x7f, %r32; jbe <allocate another entry>``.
:func:`raise_loaded_kernel_limit` rewrites that compare (3 bytes) to ``cmp $K, %r8h``, which tests the
count's second byte: the cache then holds 256·(K + 1) kernels before it evicts,
:data:`LOADED_KERNELS_MAX` unless ``GPU_DRIVER_POCL_LOADED_KERNELS`` names another multiple of 256
(``none``: leave PoCL as it is).  Where the instruction is not found exactly once (another PoCL
build), nothing changes.
"""
from __future__ import annotations

import ctypes
import logging
import os
import re

from .pocl_library import bundled_pocl, function_address, patchable, write_code

log = logging.getLogger(__name__)

SETTING = "GPU_DRIVER_POCL_LOADED_KERNELS"

#: loaded kernels PoCL keeps once the limit is raised: a multiple of 256, at most 65536
LOADED_KERNELS_MAX = 1024
#: PoCL 3.0's own limit
POCL_LOADED_KERNELS_MAX = 128
#: bytes of the function searched for the compare (found 0x1ae bytes in, PoCL 3.0 in pyopencl's wheel)
SEARCH_BYTES = 2048

# mov disp32(%rip), r32 (r32: eax, ecx, edx or ebx, which have a high-byte register); cmp $0x7f, r32; jbe
_LIMIT_TEST = re.compile(rb"\x8b([\x05\x0d\x15\x1d])....\x83([\xf8-\xfb])\x7f\x76", re.DOTALL)

_done = False
_raised: int | None = None


def limit_compare(code: bytes, limit: int = LOADED_KERNELS_MAX) -> tuple[int, bytes] | None:
    """Where in ``code`` (machine code of ``pocl_check_kernel_dlhandle_cache``) PoCL compares its
    count of loaded kernels with 127, and the instruction that compares it with ``limit`` - 1 instead
    (``limit`` a multiple of 256); None unless that compare occurs exactly once."""
    if limit % 256 or not 256 <= limit <= 65536:
        raise ValueError(f"limit {limit}: a multiple of 256 up to 65536")
    hits = [m for m in _LIMIT_TEST.finditer(code) if (m.group(1)[0] >> 3) & 7 == m.group(2)[0] & 7]
    if len(hits) != 1:
        return None
    register = hits[0].group(2)[0] & 7                  # 0-3: eax, ecx, edx, ebx
    # cmp $imm8, r8 with r8 = ah, ch, dh, bh (codes 4-7): count < limit while count < 65536
    return hits[0].start() + 6, bytes([0x80, 0xf8 | (register + 4), limit // 256 - 1])


def loaded_kernel_limit() -> int:
    """How many loaded kernels PoCL keeps in this process (its own 128 unless raised)."""
    return _raised or POCL_LOADED_KERNELS_MAX


def wanted_limit(setting: str) -> int | None:
    """The limit ``GPU_DRIVER_POCL_LOADED_KERNELS`` asks for: None for ``none``; the default for an
    empty or unusable value (the latter with a warning)."""
    setting = setting.strip().lower()
    if setting == "none":
        return None
    if setting:
        if setting.isdigit() and int(setting) % 256 == 0 and 256 <= int(setting) <= 65536:
            return int(setting)
        log.warning("%s=%r is not a multiple of 256 from 256 to 65536 (or none): %d kept", SETTING,
                    setting, LOADED_KERNELS_MAX)
    return LOADED_KERNELS_MAX


def raise_loaded_kernel_limit() -> int | None:
    """Let PoCL keep :data:`LOADED_KERNELS_MAX` (or ``GPU_DRIVER_POCL_LOADED_KERNELS``) loaded kernels
    instead of 128 (module docstring); once per process, before PoCL initialises.  Returns the limit
    set, if any."""
    global _done, _raised
    if _done or not patchable():
        return None
    _done = True
    limit = wanted_limit(os.environ.get(SETTING, ""))
    if limit is None:
        return None
    for path in bundled_pocl():
        address = function_address(path, "pocl_check_kernel_dlhandle_cache")
        if address is None:
            continue
        found = limit_compare(ctypes.string_at(address, SEARCH_BYTES), limit)
        if found is None:
            log.debug("%s: PoCL's test of its loaded-kernel limit not found; left at %d", path,
                      POCL_LOADED_KERNELS_MAX)
            continue
        offset, code = found
        try:
            write_code(address + offset, code)
        except OSError as exc:
            log.warning("PoCL's loaded-kernel limit stays %d: its code could not be changed (%s)",
                        POCL_LOADED_KERNELS_MAX, exc)
            continue
        log.info("PoCL keeps up to %d loaded kernels (was %d)", limit, POCL_LOADED_KERNELS_MAX)
        _raised = limit
        return _raised
    return None
