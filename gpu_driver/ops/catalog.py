"""The filled operation registry: importing this module imports every operation family."""
from __future__ import annotations

from ..errors import invalid
from ..hal.types import OperationType, operation_feature_level
from . import (activation, binary, comparison, concatenation, conv, conversion, densify, detection,  # noqa: F401
               fully_connected, logical, lsh, matmul, normalization, padding, pooling, random_multinomial, recurrent,
               quantized_lstm, reduction, resize, roi, shape_ops, slicing, table_lookup, unary)
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


#: the interface level of the driver: NN HAL 1.3 (operations it does not implement are reported
#: unsupported, as the HAL allows)
INTERFACE_FEATURE_LEVEL = 4
#: the newest NNAPI feature level (AIDL v3); the interface records do not change above 4
NEWEST_FEATURE_LEVEL = 7


def implemented_feature_level() -> int:
    """The feature level the driver reports: the interface level, raised to each later level whose
    additional operation codes all have a registered definition (5 adds none, 6 BATCH_MATMUL and
    PACK, 7 MIRROR_PAD and REVERSE)."""
    level = INTERFACE_FEATURE_LEVEL
    for candidate in range(INTERFACE_FEATURE_LEVEL + 1, NEWEST_FEATURE_LEVEL + 1):
        added = [t for t in OperationType if operation_feature_level(t) == candidate]
        if not all(t in REGISTRY for t in added):
            break
        level = candidate
    return level
