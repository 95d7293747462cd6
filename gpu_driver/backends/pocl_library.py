"""The PoCL library in pyopencl's wheel, found and changed in memory before PoCL initialises.

PoCL 3.0 as shipped there fixes some of its behaviour at compile time (the CPU it compiles for, the
size of its cache of loaded kernels).  The modules that correct it (``pocl_host_cpu``,
``pocl_kernel_cache``) find the library here and rewrite a few bytes of its loaded code with
:func:`write_code`.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import mmap
import os
import platform


def patchable() -> bool:
    """Whether this host runs the x86-64 Linux code the rewrites expect."""
    return platform.system() == "Linux" and platform.machine() == "x86_64"


def bundled_pocl() -> list[str]:
    """The PoCL libraries named by the ICD files in pyopencl's wheel (found without importing it;
    none where they cannot be read)."""
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return []
    libs = os.path.join(list(spec.submodule_search_locations)[0], ".libs")
    found = []
    for icd in glob.glob(os.path.join(libs, "*.icd")):
        try:
            with open(icd, encoding="utf-8", errors="replace") as f:
                name = f.read().strip()
        except OSError:
            continue
        path = name if os.path.isabs(name) else os.path.join(libs, name)
        if "pocl" in os.path.basename(path) and os.path.exists(path):
            found.append(path)
    return found


def function_address(path: str, name: str) -> int | None:
    """The address of the exported function ``name`` of the library at ``path`` (loaded now, the
    same copy PoCL's ICD loader gets later), or None."""
    try:
        return ctypes.cast(getattr(ctypes.CDLL(path), name), ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


def write_code(address: int, code: bytes) -> None:
    """Overwrite ``len(code)`` bytes of loaded machine code at ``address`` (its pages made writable
    for the copy); OSError where the system refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = address & ~(mmap.PAGESIZE - 1)
    length = address + len(code) - page
    read, write, execute = mmap.PROT_READ, mmap.PROT_WRITE, mmap.PROT_EXEC
    if libc.mprotect(page, length, read | write | execute) != 0:
        raise OSError(ctypes.get_errno(), "mprotect refused to make PoCL's code writable")
    ctypes.memmove(address, code, len(code))
    libc.mprotect(page, length, read | execute)
