"""Operation definitions: decode an operation's arguments, check them, infer output shapes.

One definition per operation (or family), shared by every consumer: validation calls it when shapes
and constant arguments are known, the reference device calls it on every execution with actual
values, and the kernel compiler reads the decoded parameters to specialise device code.

A definition is a function ``define(inputs, outputs) -> OpParams`` registered with
:func:`operation`.  ``inputs``/``outputs`` are :class:`TensorInfo`; scalar arguments arrive with
their ``value`` (constant or, at execution, actual).  It raises ``DriverError(INVALID_ARGUMENT)`` for
a violated constraint, and :class:`ShapeUnknown` when a shape or argument it needs is not known yet
(deferred to execution).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import invalid
from ..hal.model import SymmPerChannelQuantParams
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType


class ShapeUnknown(Exception):
    """Raised by a definition when it needs a shape or value that is only known at execution."""


@dataclass
class TensorInfo:
    """What an operation definition sees of one operand.

    ``shape`` is ``None`` for unknown rank; a 0 entry is an unknown dimension before execution and
    a real zero-sized dimension at execution.  ``value`` holds a constant's value (numpy array for
    tensors, Python scalar for scalars) or, at execution, the actual data; ``None`` when unknown.
    """

    type: OperandType
    shape: tuple[int, ...] | None = ()
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: SymmPerChannelQuantParams | None = None
    value: Any = None
    omitted: bool = False
    index: int = -1  # operand index in its subgraph (for messages)
    known_shape: bool = True  # False before execution when a 0 entry means "unknown"

    @property
    def rank(self) -> int:
        if self.shape is None:
            raise ShapeUnknown(f"operand {self.index}: rank unknown")
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return OPERAND_TYPE_INFO[self.type].dtype

    @property
    def is_quantized(self) -> bool:
        return OPERAND_TYPE_INFO[self.type].quant_range is not None

    @property
    def qrange(self) -> tuple[int, int]:
        return OPERAND_TYPE_INFO[self.type].quant_range

    def dims(self) -> tuple[int, ...]:
        """The shape, fully known, or ShapeUnknown."""
        if self.shape is None or (not self.known_shape and 0 in self.shape):
            raise ShapeUnknown(f"operand {self.index}: shape not fully known")
        return self.shape

    def scalar(self):
        """The value of a scalar argument, or ShapeUnknown if not known yet."""
        if self.value is None:
            raise ShapeUnknown(f"operand {self.index}: scalar value not known before execution")
        v = self.value
        if isinstance(v, np.ndarray):
            v = v.reshape(-1)[0]
        if self.type in (OperandType.BOOL,):
            return bool(v)
        if self.type in (OperandType.FLOAT32, OperandType.FLOAT16):
            return float(v)
        return int(v)

    def array(self) -> np.ndarray:
        if self.value is None:
            raise ShapeUnknown(f"operand {self.index}: tensor value not known before execution")
        return np.asarray(self.value)


@dataclass
class OpParams:
    """Decoded arguments of one operation.  Subclasses add fields; ``output_shapes`` is required."""

    output_shapes: list[tuple[int, ...]] = field(default_factory=list)


Definition = Callable[[list[TensorInfo], list[TensorInfo]], OpParams]
DEFINITIONS: dict[OperationType, Definition] = {}


def operation(*op_types: OperationType):
    """Register a definition for one or more operation codes."""

    def register(fn: Definition) -> Definition:
        for t in op_types:
            DEFINITIONS[t] = fn
        return fn

    return register


def define(op_type: OperationType, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> OpParams:
    fn = DEFINITIONS.get(op_type)
    if fn is None:
        raise invalid(f"operation {op_type.name} is not implemented by this driver")
    return fn(inputs, outputs)


# ---- helpers shared by definitions -----------------------------------------------------------------

def require(cond: bool, op_name: str, message: str) -> None:
    if not cond:
        raise invalid(f"{op_name}: {message}")


def fuse_code(info: TensorInfo, op_name: str) -> int:
    code = info.scalar()
    require(code in (0, 1, 2, 3), op_name, f"fused activation code {code} is not NONE/RELU/RELU1/RELU6")
    return code


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...], op_name: str) -> tuple[int, ...]:
    """numpy broadcasting with NNAPI's zero-size rule (operations.md §0.3)."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise invalid(f"{op_name}: shapes {a} and {b} are not broadcast-compatible")
    return tuple(out)


def same_quant_as_input(inp: TensorInfo, out: TensorInfo, op_name: str) -> None:
    """Check the "=in" output quantization rule (operations.md §0.4)."""
    if inp.is_quantized:
        require(out.scale == inp.scale and out.zero_point == inp.zero_point, op_name,
                f"output scale/zeroPoint ({out.scale}, {out.zero_point}) must equal the input's "
                f"({inp.scale}, {inp.zero_point})")
