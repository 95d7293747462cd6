"""Size arithmetic used across the driver: element counts of shapes, rounding and alignment."""
from __future__ import annotations

from typing import Iterable


def element_count(shape: Iterable[int]) -> int:
    """Number of elements of a tensor of ``shape`` (exact Python ints; a scalar's empty shape is 1)."""
    n = 1
    for d in shape:
        n *= int(d)
    return n


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (an alignment or a work-group size)."""
    return ceil_div(n, multiple) * int(multiple)
