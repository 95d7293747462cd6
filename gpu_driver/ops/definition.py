"""What an operation's definition sees and returns: TensorInfo in, OpParams out.

A definition is a function ``define(inputs, outputs) -> OpParams`` (registered with
gpu_driver.ops.registry.operation): it decodes an operation's arguments, checks them and infers the
output shapes.  Validation calls it when shapes and constant arguments are known, the reference
kernel receives its params on every execution, and the lowering reads them to specialise kernels.  ``inputs``/``outputs`` are :class:`TensorInfo`; scalar arguments arrive with
their ``value`` (constant or, at execution, actual).  It raises ``DriverError(INVALID_ARGUMENT)`` for
a violated constraint, and :class:`ShapeUnknown` when a shape or argument it needs is not known yet
(deferred to execution).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import quant
from ..errors import failure, invalid
from ..hal.model import SymmPerChannelQuantParams
from ..hal.types import OPERAND_TYPE_INFO, OperandType


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
    #: a model input a specialisation (or a request) provides: present, though its value is not known
    provided: bool = False

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


def as_float32(x: float) -> float:
    """A scale as the C++ reference sees it (a ``float``), widened back to a Python float."""
    return float(np.float32(x))


def require_nonempty(shape: tuple[int, ...], op_name: str) -> None:
    """Ops outside operations.md §0.6's list fail (GENERAL_FAILURE) on a zero-sized input.

    A 0 in a fully known shape only happens at execution (before it, 0 means "unknown").
    """
    if 0 in shape:
        raise failure(f"{op_name}: zero-sized input {list(shape)} is not supported by this operation")


def optional_bool(inputs: list[TensorInfo], index: int) -> bool:
    """Decode an optional trailing BOOL input (layout flag, align_corners, …); default false."""
    return bool(inputs[index].scalar()) if len(inputs) > index and not inputs[index].omitted else False


def presence(info: TensorInfo) -> bool | None:
    """True = present, False = omitted (NO_VALUE), None = undecided (a model input before execution)."""
    if info.omitted:
        return False
    if info.value is not None or info.provided:
        return True
    return None


def float_values(info: TensorInfo) -> np.ndarray:
    """A tensor's values as the fp32 the reference computes with ((q − zp)·scale when quantized)."""
    if info.is_quantized:
        return quant.dequantize(info.array(), info.scale, info.zero_point)
    return np.asarray(info.array()).astype(np.float32)


def stored_values(x: np.ndarray, out: TensorInfo) -> np.ndarray:
    """fp32 results in ``out``'s storage: quantized as AOSP's convertFloat32ToQuant (round half away
    of x/scale + zp in fp32, saturated), else cast."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, dtype=np.float32)
        if out.is_quantized:
            q = quant.round_half_away((x / np.float32(out.scale) + np.float32(out.zero_point)).astype(np.float32))
            return np.clip(q, *out.qrange).astype(out.dtype)
        return x.astype(out.dtype)
