"""ModelBuilder: a fluent way to build a valid HAL ``Model`` (the NDK ANeuralNetworksModel_* calls)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .errors import invalid
from .graph import encode_value
from .hal.model import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams
from .hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType, OperationType
from .validation import validate_model
from .memory import SharedMemory
from .runtime.prepared_model import to_dtype

#: constants up to this many bytes are copied into Model.operand_values (the NDK's rule)
MAX_CONSTANT_COPY_BYTES = 128
POOL_ALIGNMENT = 64


def _copy_alignment(length: int) -> int:
    return 1 if length < 2 else 2 if length < 4 else 4


class ModelBuilder:
    """Build a model operand by operand, operation by operation.

    Every ``add_*`` returns the new operand's index.  Subgraphs for IF/WHILE are built with their own
    ModelBuilder and attached with :meth:`add_subgraph`; their constants share this model's storage.
    """

    def __init__(self, relax_computation_float32_to_float16: bool = False):
        self._subgraph = Subgraph()
        self._values = bytearray()
        self._large: list[tuple[int, bytes]] = []  # (operand index, bytes) of CONSTANT_REFERENCE values
        self._referenced: list[Subgraph] = []
        self._children: list["ModelBuilder"] = []
        self.relax = bool(relax_computation_float32_to_float16)
        self._finished = False

    # ---- operands ----------------------------------------------------------------------------------
    def add_operand(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0,
                    channel_quant: SymmPerChannelQuantParams | None = None,
                    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE) -> int:
        """Add an operand (ANeuralNetworksModel_addOperand); a temporary unless a lifetime is given."""
        try:
            t = OperandType(type)
        except (ValueError, TypeError):
            raise invalid(f"unknown operand type {type!r}") from None
        if isinstance(dims, (str, bytes)) or not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
            raise invalid(f"dimensions must be non-negative integers, got {dims!r}")
        operand = Operand(type=t, dimensions=[int(d) for d in dims], scale=float(scale), zero_point=int(zero_point),
                          lifetime=lifetime, extra_params=channel_quant)
        self._subgraph.operands.append(operand)
        return len(self._subgraph.operands) - 1

    def add_input(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0,
                  channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        """Add a (sub)graph input; inputs are numbered in the order they are added."""
        idx = self.add_operand(type, dims, scale, zero_point, channel_quant, OperandLifeTime.SUBGRAPH_INPUT)
        self._subgraph.input_indexes.append(idx)
        return idx

    def add_constant(self, type: OperandType, dims: Sequence[int], value, scale: float = 0.0, zero_point: int = 0,
                     channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        """Add a constant (ANeuralNetworksModel_setOperandValue): ≤128 bytes are copied into
        operand_values (CONSTANT_COPY), larger values go to a shared-memory pool (CONSTANT_REFERENCE)."""
        idx = self.add_operand(type, dims, scale, zero_point, channel_quant)
        self.set_constant(idx, value)
        return idx

    def set_constant(self, idx: int, value) -> None:
        """Give operand ``idx``, added as a temporary, the constant ``value`` (its lifetime becomes
        CONSTANT_COPY or CONSTANT_REFERENCE, as :meth:`add_constant` chooses)."""
        operand = self.operand(idx)
        if operand.lifetime != OperandLifeTime.TEMPORARY_VARIABLE:
            raise invalid(f"operand {idx} ({operand.lifetime.name}) cannot be given a constant value: "
                          "only a temporary can")
        info = OPERAND_TYPE_INFO[operand.type]
        if info.dtype is None:
            raise invalid(f"cannot set a value for an operand of type {operand.type.name}")
        what = f"constant of type {operand.type.name}"
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise invalid(f"{what}: not array-like: {exc}") from None
        if arr.dtype.kind == "f" and info.dtype.kind in "iu":  # whole-number floats, as numpy data often is
            if not np.all(np.isfinite(arr)) or np.any(arr != np.trunc(arr)):
                raise invalid(f"{what}: values must be whole numbers")
            arr = arr.astype(np.int64)
        arr = to_dtype(arr, info.dtype, what)  # range-checked: no silent wrap-around
        expected = int(np.prod(operand.dimensions)) if info.is_tensor else 1
        if arr.size != expected:
            raise invalid(f"constant of dimensions {operand.dimensions} needs {expected} values, got {arr.size}")
        data = encode_value(operand.type, arr)
        if len(data) <= MAX_CONSTANT_COPY_BYTES:
            align = _copy_alignment(len(data))
            pad = (-len(self._values)) % align
            self._values.extend(b"\0" * pad)
            operand.lifetime = OperandLifeTime.CONSTANT_COPY
            operand.location = DataLocation(0, len(self._values), len(data))
            self._values.extend(data)
        else:
            operand.lifetime = OperandLifeTime.CONSTANT_REFERENCE
            self._large.append((idx, data))

    def add_scalar(self, type: OperandType, value) -> int:
        """Add a constant scalar argument (INT32, FLOAT32, BOOL, …)."""
        return self.add_constant(type, [], value)

    def add_no_value(self, type: OperandType, dims: Sequence[int] = ()) -> int:
        """Add an omitted optional argument (lifetime NO_VALUE)."""
        return self.add_operand(type, dims, lifetime=OperandLifeTime.NO_VALUE)

    def add_subgraph(self, builder: "ModelBuilder") -> int:
        """Add a SUBGRAPH operand referring to the subgraph ``builder`` describes (for IF / WHILE)."""
        if not isinstance(builder, ModelBuilder) or builder is self:
            raise invalid("add_subgraph takes another ModelBuilder")
        self._children.append(builder)
        idx = self.add_operand(OperandType.SUBGRAPH, lifetime=OperandLifeTime.SUBGRAPH)
        self._subgraph.operands[idx].location = DataLocation(0, len(self._children) - 1, 0)
        return idx

    # ---- operations -------------------------------------------------------------------------------
    def add_operation(self, op_type: OperationType, inputs: Sequence[int], outputs: Sequence[int]) -> "ModelBuilder":
        """Add an operation (ANeuralNetworksModel_addOperation); operations run in the order added."""
        try:
            t = OperationType(op_type)
        except (ValueError, TypeError):
            raise invalid(f"unknown operation type {op_type!r}") from None
        n = len(self._subgraph.operands)
        for i in [*inputs, *outputs]:
            if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                raise invalid(f"{t.name}: operand index {i!r} out of range (have {n} operands)")
        self._subgraph.operations.append(Operation(t, [int(i) for i in inputs], [int(i) for i in outputs]))
        return self

    def constant_value(self, index: int):
        """The value of constant operand ``index`` as added (numpy array, or a Python scalar for a
        scalar operand); None for an operand that is not a constant."""
        from .graph import decode_value

        operand = self.operand(index)
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            loc = operand.location
            raw = bytes(self._values[loc.offset:loc.offset + loc.length])
        elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
            raw = next(data for idx, data in self._large if idx == index)
        else:
            return None
        return decode_value(operand.type, tuple(operand.dimensions), raw)

    def operand(self, index: int) -> Operand:
        """Operand ``index`` as added so far (type, dimensions, quantization, lifetime)."""
        n = len(self._subgraph.operands)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
            raise invalid(f"operand index {index!r} out of range (have {n} operands)")
        return self._subgraph.operands[index]

    @property
    def operands(self) -> list[Operand]:
        """The operands added so far, in index order."""
        return self._subgraph.operands

    def set_outputs(self, outputs: Sequence[int]) -> "ModelBuilder":
        """Declare the (sub)graph outputs, in order (ANeuralNetworksModel_identifyInputsAndOutputs)."""
        n = len(self._subgraph.operands)
        for i in outputs:
            if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                raise invalid(f"output operand index {i!r} out of range")
            operand = self._subgraph.operands[i]
            if operand.lifetime != OperandLifeTime.TEMPORARY_VARIABLE:
                raise invalid(f"operand {i} ({operand.lifetime.name}) cannot be an output")
            operand.lifetime = OperandLifeTime.SUBGRAPH_OUTPUT
        self._subgraph.output_indexes = [int(i) for i in outputs]
        return self

    # ---- result -----------------------------------------------------------------------------------
    def _collect(self, model_subgraphs: list[Subgraph], values: bytearray, large: list) -> Subgraph:
        """Flatten this builder (and its children) into the model's referenced list and storage."""
        import copy

        sg = copy.deepcopy(self._subgraph)
        # constants: re-base this builder's operand_values into the shared buffer
        base = len(values)
        base += (-base) % 4
        values.extend(b"\0" * (base - len(values)))
        values.extend(self._values)
        for idx, data in self._large:
            large.append((sg.operands[idx], data))
        for operand in sg.operands:
            if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
                operand.location.offset += base
        # children become referenced subgraphs
        child_index = []
        for child in self._children:
            placeholder = len(model_subgraphs)
            model_subgraphs.append(None)  # reserve the slot so indexes are stable
            model_subgraphs[placeholder] = child._collect(model_subgraphs, values, large)
            child_index.append(placeholder)
        for operand in sg.operands:
            if operand.lifetime == OperandLifeTime.SUBGRAPH:
                operand.location.offset = child_index[operand.location.offset]
        return sg

    def finish(self, validate: bool = True) -> Model:
        """Assemble and (by default) validate the model (ANeuralNetworksModel_finish)."""
        referenced: list[Subgraph] = []
        values = bytearray()
        large: list[tuple[Operand, bytes]] = []
        main = self._collect(referenced, values, large)
        pools = []
        if large:
            offset = 0
            for operand, data in large:
                operand.location = DataLocation(0, offset, len(data))
                offset += len(data) + (-len(data)) % POOL_ALIGNMENT
            pool = SharedMemory(max(offset, 1))
            for operand, data in large:
                pool.write(operand.location.offset, data)
            pools.append(pool)
        model = Model(main=main, referenced=referenced, operand_values=bytes(values), pools=pools,
                      relax_computation_float32_to_float16=self.relax)
        if validate:
            validate_model(model)
        return model
