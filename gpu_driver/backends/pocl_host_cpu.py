"""PoCL's target CPU on hosts newer than its LLVM: name a CPU the compiler knows.

PoCL 3.0 as shipped in pyopencl's wheels (with ``pocl-binary-distribution``'s kernel libraries) asks
its LLVM 14 for the host CPU's name (``pocl_get_llvm_cpu_name``) and passes it to the compiler as
``-target-cpu``.  LLVM 14 names a CPU it does not know (AMD Zen 5, CPU family 26) "generic", which
its own x86 front end then rejects: every kernel build fails with ``unknown target CPU 'generic'``;
and it names AMD Zen 4 "znver3", a CPU without AVX-512, so kernels would use half the vector width
the host has.  PoCL has no setting for the name, so before PoCL initialises, :func:`name_host_cpu`
rewrites that exported function in the loaded library to return the LLVM 14 CPU whose instruction
set the host has (from its ``/proc/cpuinfo`` flags: AVX-512 → ``skylake-avx512``, the CPU of PoCL's
own AVX-512 kernel library; AVX2 → ``haswell``; …).  It does nothing where LLVM's name already
covers the host's vector width, or off x86-64 Linux.  ``GPU_DRIVER_POCL_TARGET_CPU`` chooses the
name (``none``: leave PoCL as it is).
"""
from __future__ import annotations

import ctypes
import logging
import os
import re

from .pocl_library import bundled_pocl, patchable, write_code

log = logging.getLogger(__name__)

SETTING = "GPU_DRIVER_POCL_TARGET_CPU"

#: (flags the host must have, the LLVM 14 CPU to compile for), widest instruction set first; the
#: CPUs of PoCL's distribution kernel libraries (avx512, avx2, avx, sse41, ssse3, sse2)
CPU_BY_FLAGS = (
    ({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}, "skylake-avx512"),
    ({"avx2", "fma", "bmi2"}, "haswell"),
    ({"avx"}, "sandybridge"),
    ({"sse4_1"}, "penryn"),
    ({"ssse3"}, "core2"),
    (set(), "x86-64"),
)

#: the LLVM 14 x86 CPUs with AVX-512
AVX512_CPUS = frozenset({"skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
                         "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "knl", "knm",
                         "x86-64-v4"})

_done = False


def cpu_for_flags(flags: set[str]) -> str:
    """The LLVM 14 CPU name for a host with these ``/proc/cpuinfo`` flags."""
    return next(cpu for needed, cpu in CPU_BY_FLAGS if needed <= flags)


def replacement(llvm_name: str, flags: set[str]) -> str | None:
    """The CPU PoCL should compile for instead of ``llvm_name`` (LLVM's name for a host with
    ``flags``), or None to keep it: replaced when LLVM does not know the CPU, or names one without
    the AVX-512 the host has."""
    best = cpu_for_flags(flags)
    if llvm_name == "generic":
        return best
    if best == "skylake-avx512" and llvm_name not in AVX512_CPUS:
        return best
    return None


def host_flags() -> set[str]:
    """The CPU flags of ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _return_constant(function_address: int, text: bytes) -> None:
    """Rewrite the x86-64 function at ``function_address`` into ``return strdup(text)``: the caller
    frees the name it gets, so each call gets a copy of a string allocated here and never freed."""
    libc = ctypes.CDLL(None)
    libc.strdup.restype = ctypes.c_void_p
    libc.strdup.argtypes = [ctypes.c_char_p]
    constant = libc.strdup(text)
    strdup = ctypes.cast(libc.strdup, ctypes.c_void_p).value
    write_code(function_address,
               b"\x48\xbf" + constant.to_bytes(8, "little")     # movabs rdi, constant
               + b"\x48\xb8" + strdup.to_bytes(8, "little")     # movabs rax, strdup
               + b"\xff\xe0")                                   # jmp rax (strdup returns to our caller)


def name_host_cpu() -> str | None:
    """Make PoCL compile for the CPU :func:`replacement` (or ``GPU_DRIVER_POCL_TARGET_CPU``) names
    instead of its LLVM's answer (see the module docstring); once per process, before PoCL
    initialises.  Returns the name given, if any."""
    global _done
    if _done:
        return None
    _done = True
    wanted = os.environ.get(SETTING, "").strip()
    if wanted and not re.fullmatch(r"[A-Za-z0-9_.-]+", wanted):
        log.warning("%s=%r is not an LLVM CPU name: ignored", SETTING, wanted)
        wanted = ""
    if wanted.lower() == "none" or not patchable():
        return None
    for path in bundled_pocl():
        try:
            lib = ctypes.CDLL(path)
            function = lib.pocl_get_llvm_cpu_name
        except (OSError, AttributeError):
            continue
        function.restype = ctypes.c_void_p
        libc = ctypes.CDLL(None)
        libc.free.argtypes = [ctypes.c_void_p]
        answer = function()
        current = ctypes.string_at(answer).decode("ascii", "replace")
        libc.free(answer)
        name = wanted or replacement(current, host_flags())
        if not name:
            continue
        try:
            _return_constant(ctypes.cast(function, ctypes.c_void_p).value, name.encode("ascii"))
        except OSError as exc:
            log.warning("PoCL names this CPU %r and its code could not be changed to name %r (%s)",
                        current, name, exc)
            continue
        log.info("PoCL's LLVM names this CPU %r; its kernels are compiled for %r (%s)",
                 current, name, SETTING)
        return name
    return None
