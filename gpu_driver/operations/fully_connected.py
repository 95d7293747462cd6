"""FULLY_CONNECTED (HAL 1.0): out[B, U] = act(X[B, I]·Wᵀ + bias)."""
from __future__ import annotations

from dataclasses import dataclass

from ..hal.types import OperationType
from ..sizes import element_count
from .base import TensorInfo, operation, require
from .conv import ActivationParams, Requantization, activation_fields, requantization


@dataclass
class FullyConnectedParams(ActivationParams):
    """Input 0 (rank 2–4) is viewed as [batch, input_size]; weights [num_units, input_size];
    bias [num_units]; output [batch, num_units].  ``quant`` (None for float types) holds the
    requantisation constants (per-tensor: every entry of output_multiplier/output_shift equal)."""

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    quant: Requantization | None = None


@operation(OperationType.FULLY_CONNECTED)
def fully_connected(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> FullyConnectedParams:
    name = "FULLY_CONNECTED"
    inp, weights, bias, act = inputs[:4]
    dims = inp.dims()
    require(2 <= len(dims) <= 4, name, f"input rank must be 2..4, got shape {list(dims)}")
    wdims = weights.dims()
    require(len(wdims) == 2, name, f"weights must be rank 2 [num_units, input_size], got {list(wdims)}")
    units, size = wdims
    require(units > 0 and size > 0, name, f"weights dimensions {list(wdims)} must be > 0")
    bdims = bias.dims()
    require(len(bdims) == 1 and bdims[0] == units, name, f"bias shape {list(bdims)} must be [{units}]")
    numel = element_count(dims)
    require(numel % size == 0, name, f"input of {numel} elements is not a whole number of rows of {size}")
    batch = numel // size
    return FullyConnectedParams(output_shapes=[(batch, units)], **activation_fields(act, outputs[0], name),
                                batch=batch, input_size=size, num_units=units,
                                quant=requantization(inp, weights, bias, outputs[0], units, 0, name))
