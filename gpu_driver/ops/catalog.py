"""The filled operation registry: importing this module imports every operation family."""
from __future__ import annotations

from ..errors import invalid
from ..hal.types import OperationType
from . import (activation, binary, concatenation, conv, fully_connected, lsh, normalization,  # noqa: F401
               pooling, recurrent, resize, shape_ops, table_lookup)
from .definition import OpParams, TensorInfo
from .registry import REGISTRY, OperationDef


def lookup(op_type) -> OperationDef | None:
    """The definition of ``op_type``, or None when this driver does not implement it."""
    return REGISTRY.get(op_type)


def define(op_type: OperationType, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> OpParams:
    """Decode one operation's arguments (INVALID_ARGUMENT for a violated constraint)."""
    entry = REGISTRY.get(op_type)
    if entry is None:
        raise invalid(f"operation {OperationType(op_type).name} is not implemented by this driver")
    return entry.define(inputs, outputs)
