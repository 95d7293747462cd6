"""What a driver-managed buffer holds, and the dimension rules every buffer follows (interface.md §6).

:class:`BufferSpec` is what allocation establishes (operand type, quantisation, merged dimensions,
roles); :func:`merge_dims` / :func:`fully_specified` are the shape rules shared by allocation, the
buffer itself and request binding.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..hal.types import OPERAND_TYPE_INFO, OperandType

#: the largest driver-managed buffer (HAL sizes are uint32; allocations beyond this are refused)
MAX_DRIVER_BUFFER_BYTES = 1 << 31


def merge_dims(a: Sequence[int] | None, b: Sequence[int] | None) -> list[int] | None:
    """Merge two dimension lists (``[]`` = unknown rank, 0 = unknown axis); None if incompatible."""
    a = list(a or [])
    b = list(b or [])
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return out


def fully_specified(dims: Sequence[int], is_tensor: bool) -> bool:
    return not is_tensor or (len(dims) > 0 and 0 not in dims)


@dataclass
class BufferSpec:
    """A buffer to allocate, as :func:`~gpu_driver.runtime.buffer_allocation.validate_allocation` establishes it."""

    type: OperandType
    scale: float
    zero_point: int
    extra_params: Any
    dims: list[int]
    #: (prepared model, "in" / "out", io index) of every role
    roles: set[tuple[Any, str, int]] = field(default_factory=set)
    prepared_models: list = field(default_factory=list)

    @property
    def is_tensor(self) -> bool:
        return OPERAND_TYPE_INFO[self.type].is_tensor
