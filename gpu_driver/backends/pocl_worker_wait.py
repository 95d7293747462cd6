"""PoCL's worker threads wait for the next command by spinning briefly before they sleep.

PoCL 3.0's threaded device hands every command to its worker threads through one condition
variable: a worker that finds no work sleeps in ``pthread_cond_wait`` and the thread that queues the
next command (usually the other worker, finishing the previous kernel) wakes it with
``pthread_cond_broadcast``.  On a virtual machine that sleep and wake cost several microseconds per
kernel launch in the kernel's scheduler (perf: a quarter of all samples of a 41-launch model in
``futex`` wake-up and context switch), which is most of what a small kernel costs.

:func:`spin_before_sleeping` redirects four calls in PoCL's worker code (found in its symbol table,
checked, and left alone unless each is found as expected):

* the worker loop's ``call pthread_cond_wait@plt`` in ``pocl_pthread_driver_thread`` goes to
  ``spin_wait`` below: unless no command was queued since a worker last spun in vain, it releases
  the lock and yields the CPU in a loop (``sched_yield``: a thread that has work on that CPU runs
  first) until a command is queued or :data:`SPIN_US_DEFAULT` µs pass, then takes the lock again
  and returns 0, as a spurious wake-up would; PoCL then looks for work again under the lock, and
  waits again.  After a spin that ran out, the next wait sleeps in ``pthread_cond_wait`` itself, its
  condition checked under the lock by PoCL, so an idle device sleeps as before;
* the three ``pthread_cond_broadcast`` calls that queue work (two in ``pthread_scheduler_push_command``,
  the kernel hand-over in ``pocl_pthread_driver_thread``) go to ``counted_broadcast``, which counts the
  broadcast (the number ``spin_wait`` watches) and calls the real one.

Only PoCL's worker threads spin; the thread that waits for an execution sleeps as before.
``GPU_DRIVER_POCL_SPIN_US=N`` sets the spin (microseconds; ``0``: PoCL as it is).
"""
from __future__ import annotations

import ctypes
import logging
import mmap
import os
import struct

from .pocl_library import ElfImage, bundled_pocl, load_address, patchable, write_code

log = logging.getLogger(__name__)

SETTING = "GPU_DRIVER_POCL_SPIN_US"
#: how long an idle worker spins before it sleeps, in microseconds: longer than a kernel's hand-over
#: between the workers, far shorter than the pause of a host between executions
SPIN_US_DEFAULT = 50

PAGE = 4096
# The data page (read and written by the code below, RIP-relative): the broadcast count alone on
# its cache line, then the settings and the addresses of the functions called, then statistics.
SEQ, IDLE_SEQ, SPIN_NS = 0x00, 0x40, 0x48
REAL_WAIT, REAL_BROADCAST, MUTEX_LOCK, MUTEX_UNLOCK, SCHED_YIELD, CLOCK_GETTIME = range(0x50, 0x80, 8)
SLEEPS, CAUGHT, TIMEOUTS = 0x80, 0x88, 0x90
# The code page, one page after the data page.  Written for this layout with GNU as (x86-64,
# System V ABI); each line is one instruction.
COUNTED_BROADCAST, SPIN_WAIT = 0x000, 0x010
CODE = (
    # counted_broadcast(cond):
    ("f048ff05f8efffff", "lock incq seq(%rip)"),
    ("ff254af0ffff", "jmp *real_broadcast(%rip)"),
    ("6690", "(padding)"),
    # spin_wait(cond, mutex):
    ("488b05e9efffff", "mov seq(%rip),%rax"),
    ("483b0522f0ffff", "cmp idle_seq(%rip),%rax"),
    ("750e", "jne .spin                       # queued since the last spin ran out"),
    ("f048ff0558f0ffff", "lock incq sleeps(%rip)"),
    ("ff2522f0ffff", "jmp *real_wait(%rip)            # pthread_cond_wait(cond, mutex)"),
    ("53", ".spin: push %rbx"),
    ("4154", "push %r12"),
    ("4155", "push %r13"),
    ("4889c3", "mov %rax,%rbx                   # rbx: the count seen"),
    ("4989f4", "mov %rsi,%r12                   # r12: the mutex"),
    ("4889f7", "mov %rsi,%rdi"),
    ("ff1526f0ffff", "call *mutex_unlock(%rip)"),
    ("e859000000", "call now_ns"),
    ("480305faefffff", "add spin_ns(%rip),%rax"),
    ("4989c5", "mov %rax,%r13                   # r13: the deadline"),
    ("ff1519f0ffff", ".loop: call *sched_yield(%rip)"),
    ("483b1da2efffff", "cmp seq(%rip),%rbx"),
    ("751b", "jne .caught"),
    ("e83b000000", "call now_ns"),
    ("4c39e8", "cmp %r13,%rax"),
    ("72e7", "jb .loop"),
    ("48891dcfefffff", "mov %rbx,idle_seq(%rip)         # ran out: the next wait sleeps"),
    ("f048ff0517f0ffff", "lock incq timeouts(%rip)"),
    ("eb08", "jmp .relock"),
    ("f048ff0505f0ffff", ".caught: lock incq caught(%rip)"),
    ("4c89e7", ".relock: mov %r12,%rdi"),
    ("ff15d4efffff", "call *mutex_lock(%rip)"),
    ("31c0", "xor %eax,%eax                   # 0, as after a wake-up"),
    ("415d", "pop %r13"),
    ("415c", "pop %r12"),
    ("5b", "pop %rbx"),
    ("c3", "ret"),
    ("66662e0f1f84000000000090", "(padding)"),
    # now_ns(): CLOCK_MONOTONIC in nanoseconds
    ("4883ec18", "sub $0x18,%rsp"),
    ("bf01000000", "mov $1,%edi                     # CLOCK_MONOTONIC"),
    ("4889e6", "mov %rsp,%rsi"),
    ("ff15c6efffff", "call *clock_gettime(%rip)"),
    ("4869042400ca9a3b", "imul $1000000000,(%rsp),%rax"),
    ("4803442408", "add 8(%rsp),%rax"),
    ("4883c418", "add $0x18,%rsp"),
    ("c3", "ret"),
)

_done = False
_data: int | None = None        # address of the data page once installed (mapped for the process's life)


def machine_code() -> bytes:
    """The code page's contents: :data:`CODE`'s instructions in order."""
    return b"".join(bytes.fromhex(h) for h, _ in CODE)


def wanted_spin_us(setting: str) -> int:
    """The spin ``GPU_DRIVER_POCL_SPIN_US`` asks for (0: off); the default for an empty or unusable
    value (the latter with a warning)."""
    setting = setting.strip()
    if setting:
        if setting.isdigit() and int(setting) <= 100_000:
            return int(setting)
        log.warning("%s=%r is not a number of microseconds from 0 to 100000: %d kept", SETTING, setting,
                    SPIN_US_DEFAULT)
    return SPIN_US_DEFAULT


def plt_calls(code: bytes, address: int, slot: int, plt: tuple[int, int]) -> list[int]:
    """Addresses of the ``call rel32`` instructions in ``code`` (loaded at ``address``) whose target is
    the PLT entry ``jmp *slot(%rip)``; ``plt`` is the PLT section's (address, size), all loaded."""
    found = []
    at = code.find(b"\xe8")
    while 0 <= at <= len(code) - 5:
        site = address + at
        target = site + 5 + struct.unpack_from("<i", code, at + 1)[0]
        if plt[0] <= target <= plt[0] + plt[1] - 6:
            stub = ctypes.string_at(target, 6)
            if stub[:2] == b"\xff\x25" and target + 6 + struct.unpack_from("<i", stub, 2)[0] == slot:
                found.append(site)
        at = code.find(b"\xe8", at + 1)
    return found


def _map_near(address: int) -> int | None:
    """Two pages (data, then code) mapped within reach of a rel32 call from ``address``."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    rw = mmap.PROT_READ | mmap.PROT_WRITE
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    for hint in (address - (64 << 20), address - (512 << 20), address + (512 << 20)):
        pages = libc.mmap(hint & ~(PAGE - 1), 2 * PAGE, rw, flags, -1, 0)
        if pages in (None, ctypes.c_void_p(-1).value):
            continue
        if abs(pages - address) < (1 << 31) - (256 << 20):
            return pages
        libc.munmap(ctypes.c_void_p(pages), ctypes.c_size_t(2 * PAGE))
    return None


def statistics() -> dict[str, int] | None:
    """Counts since the install: waits that slept, spins that saw a command queued, spins that ran
    out; None when PoCL's waits are unchanged."""
    if _data is None:
        return None
    read = lambda offset: ctypes.c_uint64.from_address(_data + offset).value  # noqa: E731
    return {"slept": read(SLEEPS), "caught": read(CAUGHT), "ran_out": read(TIMEOUTS)}


def spin_before_sleeping() -> int | None:
    """Make PoCL's idle worker threads spin :data:`SPIN_US_DEFAULT` µs (or ``GPU_DRIVER_POCL_SPIN_US``)
    before they sleep (module docstring); once per process, before PoCL starts its threads.  Returns
    the spin set, if any."""
    global _done, _data
    if _done or not patchable():
        return None
    _done = True
    spin_us = wanted_spin_us(os.environ.get(SETTING, ""))
    if not spin_us:
        return None
    for path in bundled_pocl():
        try:
            image = ElfImage(path)
        except (OSError, ValueError):
            continue
        if load_address(path) is not None:
            log.debug("%s is loaded already (PoCL's threads may run): its waits are left as they are", path)
            return None
        ctypes.CDLL(path)                       # the copy PoCL's ICD loader gets later
        base = load_address(path)
        worker = image.function("pocl_pthread_driver_thread")
        push = image.function("pthread_scheduler_push_command")
        wait_slot, broadcast_slot = image.plt_slot("pthread_cond_wait"), image.plt_slot("pthread_cond_broadcast")
        plt = image.section_range(".plt")
        if None in (base, worker, push, wait_slot, broadcast_slot, plt):
            log.debug("%s: PoCL's worker code not found; its waits are left as they are", path)
            continue
        plt = (base + plt[0], plt[1])
        worker_code = ctypes.string_at(base + worker[0], worker[1])
        push_code = ctypes.string_at(base + push[0], push[1])
        waits = plt_calls(worker_code, base + worker[0], base + wait_slot, plt)
        broadcasts = (plt_calls(worker_code, base + worker[0], base + broadcast_slot, plt)
                      + plt_calls(push_code, base + push[0], base + broadcast_slot, plt))
        if len(waits) != 1 or not 2 <= len(broadcasts) <= 4:
            log.debug("%s: %d worker waits and %d broadcasts found (expected 1 and 2-4); PoCL's waits "
                      "are left as they are", path, len(waits), len(broadcasts))
            continue
        pages = _map_near(base + worker[0])
        if pages is None:
            log.debug("no memory within a call's reach of PoCL's code; its waits are left as they are")
            continue
        libc = ctypes.CDLL(None)
        addresses = {REAL_WAIT: "pthread_cond_wait", REAL_BROADCAST: "pthread_cond_broadcast",
                     MUTEX_LOCK: "pthread_mutex_lock", MUTEX_UNLOCK: "pthread_mutex_unlock",
                     SCHED_YIELD: "sched_yield", CLOCK_GETTIME: "clock_gettime"}
        for offset, name in addresses.items():
            ctypes.c_void_p.from_address(pages + offset).value = ctypes.cast(getattr(libc, name),
                                                                             ctypes.c_void_p).value
        ctypes.c_uint64.from_address(pages + SPIN_NS).value = spin_us * 1000
        ctypes.c_uint64.from_address(pages + SEQ).value = 1      # idle_seq 0: the first wait spins
        code = pages + PAGE
        try:
            write_code(code, machine_code())    # the code page: written, then read and execute only
            # the broadcasts first: stopped half-way, PoCL only counts them (spins need the count)
            for site in broadcasts:
                write_code(site + 1, struct.pack("<i", code + COUNTED_BROADCAST - site - 5))
            for site in waits:
                write_code(site + 1, struct.pack("<i", code + SPIN_WAIT - site - 5))
        except OSError as exc:
            log.warning("PoCL's worker waits are left as they are: its code could not be changed (%s)", exc)
            return None
        _data = pages
        log.info("PoCL's idle workers spin %d µs before they sleep", spin_us)
        return spin_us
    return None
