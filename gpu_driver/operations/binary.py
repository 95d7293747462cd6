"""Broadcasting binary arithmetic: ADD, MUL (HAL 1.0); SUB, DIV arrive with the full operation set."""
from __future__ import annotations

from dataclasses import dataclass

from ..hal.types import OperandType, OperationType
from .base import OpParams, TensorInfo, broadcast_shapes, fuse_code, operation, require

_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass
class BinaryParams(OpParams):
    activation: int = 0


def _binary(name: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    a, b, act = inputs
    activation = fuse_code(act, name)
    if a.type == OperandType.TENSOR_INT32:
        require(activation == 0, name, "TENSOR_INT32 arithmetic allows only fused activation NONE")
    shape = broadcast_shapes(a.dims(), b.dims(), name)
    return BinaryParams(output_shapes=[shape], activation=activation)


@operation(OperationType.ADD)
def add(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    return _binary("ADD", inputs, outputs)


@operation(OperationType.MUL)
def mul(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BinaryParams:
    a, b, _ = inputs
    if a.type in _QUANT8:
        out = outputs[0]
        require(out.scale > a.scale * b.scale, "MUL",
                f"quantized output scale {out.scale} must exceed the input scale product {a.scale * b.scale}")
    return _binary("MUL", inputs, outputs)
