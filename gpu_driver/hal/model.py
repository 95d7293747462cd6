"""NN HAL 1.3 model and request records (interface.md §4, §6, §7.1).

Plain dataclasses, canonical field names in snake_case.  ``Model.pools`` and ``Request.pools`` hold
:class:`gpu_driver.memory.Memory` objects (a request pool may instead be an ``int`` memory-domain token,
the HAL 1.3 ``MemoryPool`` union).  :mod:`gpu_driver.hal.serialize` turns all of them into msgpack.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from .types import OperandLifeTime, OperandType, OperationType

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory


@dataclass
class DataLocation:
    pool_index: int = 0
    offset: int = 0
    length: int = 0
    padding: int = 0


@dataclass
class SymmPerChannelQuantParams:
    scales: list[float]
    channel_dim: int


@dataclass
class Operand:
    type: OperandType
    dimensions: list[int] = field(default_factory=list)
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    extra_params: SymmPerChannelQuantParams | bytes | None = None


@dataclass
class Operation:
    type: OperationType
    inputs: list[int]
    outputs: list[int]


@dataclass
class Subgraph:
    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    input_indexes: list[int] = field(default_factory=list)
    output_indexes: list[int] = field(default_factory=list)


@dataclass
class ExtensionNameAndPrefix:
    name: str
    prefix: int


@dataclass
class Model:
    main: Subgraph
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytes = b""
    pools: list["Memory"] = field(default_factory=list)
    relax_computation_float32_to_float16: bool = False
    extension_name_to_prefix: list[ExtensionNameAndPrefix] = field(default_factory=list)


@dataclass
class RequestArgument:
    """One request input/output.  ``has_no_value`` marks an omitted optional input."""

    location: DataLocation = field(default_factory=DataLocation)
    dimensions: list[int] = field(default_factory=list)
    has_no_value: bool = False


RequestPool = Union["Memory", int]


@dataclass
class Request:
    inputs: list[RequestArgument]
    outputs: list[RequestArgument]
    pools: list[RequestPool] = field(default_factory=list)


@dataclass
class BufferDesc:
    dimensions: list[int] = field(default_factory=list)


@dataclass
class BufferRole:
    model_index: int
    io_index: int
    probability: float = 1.0
