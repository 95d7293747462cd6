"""Operation definitions (argument decoding, constraints, shape inference), one module per family.

Importing this package registers every definition in :data:`DEFINITIONS`.
"""
from . import binary  # noqa: F401  (registers definitions)
from .base import DEFINITIONS, OpParams, ShapeUnknown, TensorInfo, define, operation

__all__ = ["DEFINITIONS", "OpParams", "ShapeUnknown", "TensorInfo", "define", "operation"]
