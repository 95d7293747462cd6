"""Operation definitions (argument decoding, constraints, shape inference), one module per family.

Importing this package registers every definition in :data:`DEFINITIONS`.
"""
from . import binary  # noqa: F401  (each import registers its definitions)
from . import conv, pool, fully_connected, concatenation  # noqa: F401
from . import activation, shape_ops, normalization, lookup, resize  # noqa: F401
from . import recurrent, lsh  # noqa: F401
from .base import DEFINITIONS, OpParams, ShapeUnknown, TensorInfo, define, operation

__all__ = ["DEFINITIONS", "OpParams", "ShapeUnknown", "TensorInfo", "define", "operation"]
