"""The PoCL library in pyopencl's wheel, found and changed in memory before PoCL initialises.

PoCL 3.0 as shipped there fixes some of its behaviour at compile time (the CPU it compiles for, the
size of its cache of loaded kernels, how its idle worker threads wait).  The modules that correct it
(``pocl_host_cpu``, ``pocl_kernel_cache``, ``pocl_worker_wait``) find the library and its functions
here (:class:`ElfImage` reads the symbol tables of the library file) and rewrite a few bytes of its
loaded code with :func:`write_code`.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import mmap
import os
import platform
import struct

import numpy as np


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


# ELF64 little-endian: the few tables the rewrites read (the library file, not its loaded image)
_SECTION = struct.Struct("<IIQQQQIIQQ")     # name, type, flags, addr, offset, size, link, info, align, entsize
_SYMBOL = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                    ("value", "<u8"), ("size", "<u8")])
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
_FUNC, _JUMP_SLOT = 2, 7


class ElfImage:
    """Section tables of an x86-64 shared library file, read on demand: function symbols (local ones
    too, from ``.symtab``), the GOT slots its PLT calls through, and section addresses."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            header = f.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
            shoff, = struct.unpack_from("<Q", header, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3a)
            f.seek(shoff)
            table = f.read(shentsize * shnum)
        self._headers = [_SECTION.unpack_from(table, i * shentsize) for i in range(shnum)]
        self._contents: dict[int, bytes] = {}    # file offset -> a section's bytes, each read once
        names = self._read(self._headers[shstrndx])
        self.sections = {names[h[0]:names.index(b"\0", h[0])].decode(): h for h in self._headers}

    def _read(self, header) -> bytes:
        if header[4] not in self._contents:
            with open(self.path, "rb") as f:
                f.seek(header[4])
                self._contents[header[4]] = f.read(header[5])
        return self._contents[header[4]]

    def section_range(self, name: str) -> tuple[int, int] | None:
        """(address, size) of section ``name`` relative to the load address, or None."""
        h = self.sections.get(name)
        return (h[3], h[5]) if h else None

    def function(self, name: str) -> tuple[int, int] | None:
        """(address relative to the load address, size) of the function symbol ``name`` in
        ``.symtab``, or None unless exactly one is found."""
        h = self.sections.get(".symtab")
        if h is None:
            return None
        strings = self._read(self._headers[h[6]])
        wanted = name.encode() + b"\0"
        offsets, at = [], strings.find(wanted)
        while at >= 0:                      # every place the name ends a string (shared suffixes)
            offsets.append(at)
            at = strings.find(wanted, at + 1)
        symbols = np.frombuffer(self._read(h), dtype=_SYMBOL)
        hits = symbols[np.isin(symbols["name"], offsets) & (symbols["info"] & 0xf == _FUNC)]
        values = {(int(s["value"]), int(s["size"])) for s in hits}
        return values.pop() if len(values) == 1 else None

    def plt_slot(self, name: str) -> int | None:
        """The GOT slot (relative to the load address) through which PLT calls to ``name`` jump."""
        rela, dynsym = self.sections.get(".rela.plt"), self.sections.get(".dynsym")
        if rela is None or dynsym is None:
            return None
        strings = self._read(self._headers[dynsym[6]])
        symbols = np.frombuffer(self._read(dynsym), dtype=_SYMBOL)
        for r in np.frombuffer(self._read(rela), dtype=_RELA):
            if int(r["info"]) & 0xffffffff != _JUMP_SLOT:
                continue
            at = int(symbols[int(r["info"]) >> 32]["name"])
            if strings[at:strings.index(b"\0", at)] == name.encode():
                return int(r["offset"])
        return None


def load_address(path: str) -> int | None:
    """Where the library at ``path`` is mapped in this process (its first mapping's start), or None."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[-1] == real and int(fields[2], 16) == 0:
                    return int(fields[0].split("-")[0], 16)
    except OSError:
        pass
    return None
