"""A model's subgraphs seen as typed tensors: constant values resolved, shapes propagated.

Shared by validation (to run each operation's definition where shapes are known), the reference
device, and the kernel compiler.  Builds on a model that has passed structural validation.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import DriverError, invalid
from .hal.model import Model, Operand, Subgraph
from .hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType, OperationType
from .ops.catalog import define, lookup
from .ops.definition import OpParams, ShapeUnknown, TensorInfo

_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)


def constant_bytes(model: Model, operand: Operand) -> memoryview:
    """The raw bytes of a CONSTANT_COPY / CONSTANT_REFERENCE operand."""
    loc = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        return memoryview(model.operand_values)[loc.offset:loc.offset + loc.length]
    if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        return model.pools[loc.pool_index].view()[loc.offset:loc.offset + loc.length]
    raise ValueError("not a constant operand")


def decode_value(operand_type: OperandType, shape: tuple[int, ...], raw) -> object:
    """Decode little-endian bytes into a numpy array (tensor) or Python scalar."""
    info = OPERAND_TYPE_INFO[operand_type]
    if operand_type == OperandType.SUBGRAPH or info.dtype is None:
        return bytes(raw)
    count = int(np.prod(shape)) if info.is_tensor else 1
    arr = np.frombuffer(raw, dtype=info.dtype.newbyteorder("<"), count=count).astype(info.dtype)
    if info.dtype == np.bool_:
        arr = np.frombuffer(raw, dtype=np.uint8, count=count) != 0
    if not info.is_tensor:
        v = arr[0]
        return bool(v) if info.dtype == np.bool_ else v.item()
    return arr.reshape(shape)


def encode_value(operand_type: OperandType, value) -> bytes:
    """The little-endian bytes of ``value`` as an operand of ``operand_type`` stores it (booleans one
    byte each): the inverse of :func:`decode_value`."""
    dtype = OPERAND_TYPE_INFO[operand_type].dtype
    arr = np.ascontiguousarray(value, dtype=np.uint8 if dtype == np.bool_ else dtype)
    return arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def operand_info(model: Model, subgraph: Subgraph, index: int, with_value: bool = True) -> TensorInfo:
    """TensorInfo of a subgraph operand as declared by the model (constant value decoded)."""
    op = subgraph.operands[index]
    value = None
    if with_value and op.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        value = decode_value(op.type, tuple(op.dimensions), constant_bytes(model, op))
    elif op.lifetime == OperandLifeTime.SUBGRAPH:
        value = op.location.offset
    return declared_info(op, index, value)


def declared_info(op: Operand, index: int, value=None) -> TensorInfo:
    """TensorInfo of operand ``op`` (number ``index``) as declared, holding ``value`` (a constant's
    decoded value, a SUBGRAPH reference, or None)."""
    shape = (tuple(op.dimensions) if op.dimensions else None) if OPERAND_TYPE_INFO[op.type].is_tensor else ()
    channel = op.extra_params if op.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else None
    return TensorInfo(type=op.type, shape=shape, scale=op.scale, zero_point=op.zero_point,
                      channel_quant=channel, value=value, omitted=op.lifetime == OperandLifeTime.NO_VALUE,
                      index=index, known_shape=shape is not None and 0 not in shape)


@dataclass
class Node:
    """One operation with its input/output TensorInfos and, once shapes are known, its params."""

    index: int
    type: OperationType
    inputs: list[int]
    outputs: list[int]
    params: OpParams | None = None


@dataclass
class Graph:
    """A subgraph with every operand as a TensorInfo and shapes propagated as far as they are known."""

    model: Model
    subgraph: Subgraph
    tensors: list[TensorInfo]
    nodes: list[Node] = field(default_factory=list)

    @property
    def fully_specified(self) -> bool:
        return all(n.params is not None for n in self.nodes if n.type not in _CONTROL_FLOW)

    def infos(self, indexes: list[int]) -> list[TensorInfo]:
        return [self.tensors[i] for i in indexes]


def merge_shapes(declared: tuple[int, ...] | None, inferred: tuple[int, ...], what: str) -> tuple[int, ...]:
    """Combine a declared (maybe partial) shape with an inferred one (operands.md §2)."""
    if declared is None:
        return tuple(inferred)
    if len(declared) != len(inferred):
        raise invalid(f"{what}: declared rank {len(declared)} but the operation produces rank {len(inferred)}")
    for d, i in zip(declared, inferred):
        if d != 0 and d != i:
            raise invalid(f"{what}: declared dimensions {list(declared)} but the operation produces {list(inferred)}")
    return tuple(inferred)


def build_graph(model: Model, subgraph: Subgraph, input_shapes: list[tuple[int, ...]] | None = None,
                input_values: dict[int, object] | None = None) -> Graph:
    """Resolve constants and propagate shapes through ``subgraph``.

    ``input_shapes`` (one per subgraph input) overrides the declared input dimensions, e.g. with a
    request's (None: the request omits that input); ``input_values`` (subgraph input position → value) gives inputs known values, as
    constants have (an accelerator's value specialisation).  Operations whose inputs are not fully known keep ``params = None``; everything after
    them whose shapes depend on them stays unknown too.  Constraint violations raise INVALID_ARGUMENT.
    """
    tensors = [operand_info(model, subgraph, i) for i in range(len(subgraph.operands))]
    if input_shapes is not None:
        for idx, shape in zip(subgraph.input_indexes, input_shapes):
            t = tensors[idx]
            if shape is None:  # omitted by the request
                t.omitted = True
                continue
            t.shape = tuple(shape)
            t.known_shape = True
            t.provided = True
    for pos, value in (input_values or {}).items():
        tensors[subgraph.input_indexes[pos]].value = value
    graph = Graph(model, subgraph, tensors)
    for n, op in enumerate(subgraph.operations):
        node = Node(n, op.type, list(op.inputs), list(op.outputs))
        graph.nodes.append(node)
        for out_idx in op.outputs:
            tensors[out_idx].provided = True  # an operation's result is never omitted
        if op.type in _CONTROL_FLOW or lookup(op.type) is None:
            continue  # control flow is interpreted; ops without a definition are reported unsupported
        ins = graph.infos(op.inputs)
        outs = graph.infos(op.outputs)
        try:
            params = define(op.type, ins, outs)
        except ShapeUnknown:
            continue
        except DriverError:
            raise
        except Exception as exc:  # a definition failed on input it should have rejected
            raise invalid(f"operation {n} ({op.type.name}): arguments rejected ({type(exc).__name__}: {exc})") \
                from None
        node.params = params
        for out_idx, shape in zip(op.outputs, params.output_shapes):
            t = tensors[out_idx]
            t.shape = merge_shapes(t.shape if t.shape is not None else None, shape,
                                   f"operation {n} ({op.type.name}) output operand {out_idx}")
            t.known_shape = True
    return graph
