"""Memory planning: every temporary and scratch tensor gets an offset in one arena.

Lifetimes are measured in launch positions (first and last kernel that touches the tensor); tensors
whose lifetimes do not overlap share memory.  Placement is greedy by decreasing size, each tensor at
the lowest 256-byte-aligned offset that does not collide with an already placed tensor whose lifetime
intersects its own (the usual "greedy by size" offset assignment).  Model inputs and outputs get
their own device buffers; constants are packed (aligned) into one constant buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sizes import round_up

ALIGNMENT = 256


@dataclass
class Interval:
    key: str
    nbytes: int
    first: int
    last: int
    offset: int = -1


@dataclass
class MemoryPlan:
    offsets: dict[str, int] = field(default_factory=dict)   # arena tensor -> byte offset
    arena_bytes: int = 0                                      # size of the arena (the peak of temporaries)
    naive_bytes: int = 0                                      # sum of all temporaries (no reuse), for reports

    @property
    def peak_bytes(self) -> int:
        return self.arena_bytes


def plan_arena(intervals: list[Interval], alignment: int = ALIGNMENT) -> MemoryPlan:
    """Offsets for ``intervals`` (inclusive [first, last] launch positions) with reuse."""
    placed: list[Interval] = []
    order = sorted(intervals, key=lambda iv: (-iv.nbytes, iv.first, iv.key))
    for iv in order:
        size = round_up(max(iv.nbytes, 1), alignment)
        live = sorted((p for p in placed if not (p.last < iv.first or iv.last < p.first)), key=lambda p: p.offset)
        offset = 0
        for p in live:
            p_end = p.offset + round_up(max(p.nbytes, 1), alignment)
            if offset + size <= p.offset:
                break
            offset = max(offset, p_end)
        iv.offset = offset
        placed.append(iv)
    plan = MemoryPlan()
    for iv in placed:
        plan.offsets[iv.key] = iv.offset
        plan.arena_bytes = max(plan.arena_bytes, iv.offset + round_up(max(iv.nbytes, 1), alignment))
        plan.naive_bytes += round_up(max(iv.nbytes, 1), alignment)
    return plan


def pack(sizes: list[tuple[str, int]], alignment: int = ALIGNMENT) -> tuple[dict[str, int], int]:
    """Consecutive aligned offsets (no reuse), e.g. for constants: (offsets, total bytes)."""
    offsets, pos = {}, 0
    for key, n in sizes:
        offsets[key] = pos
        pos += round_up(max(n, 1), alignment)
    return offsets, pos
