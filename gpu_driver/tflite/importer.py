"""TF Lite subgraphs → NNAPI models: tensors become operands, operators become operations.

:class:`Emitter` owns the NNAPI model under construction (a :class:`gpu_driver.builder.ModelBuilder`)
and the mapping from TF Lite tensors to operands; the per-operator converters live in
``gpu_driver/tflite/operators.py``.  Constant work is done at import: float16 (or quantized)
constants behind DEQUANTIZE and sparse constants behind DENSIFY become dense constant operands.
Every operator that cannot be expressed is collected, and the import then fails with one
DriverError(INVALID_ARGUMENT) listing each (index, name, why).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..builder import ModelBuilder
from ..errors import DriverError, invalid
from ..graph import declared_info
from ..hal.model import Model, Operation, SymmPerChannelQuantParams
from ..hal.types import OPERAND_TYPE_INFO, OperandLifeTime, OperandType as T, OperationType
from ..ops.catalog import define, lookup
from ..ops.definition import TensorInfo
from ..ops.signature import OpContext, check_signature
from ..ops.densify import SparseFormatError, SparseLevel, expand_sparse
from .reader import TENSOR_DTYPES, Subgraph, Tensor, TfliteModel


#: largest result (elements) the importer computes from constants to learn values converters need
#: (shape arithmetic); bigger all-constant results are left to preparation's constant folding
FOLD_ELEMENTS = 4096


class Unsupported(Exception):
    """An operator (or one of its tensors) has no NNAPI equivalent; the message says why."""


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as the TF Lite file names it: -1 in ``shape`` = unknown until execution."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass
class ImportedModel:
    """What :func:`gpu_driver.tflite.load_model` returns."""

    model: Model
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]


def densify(tensor: Tensor) -> np.ndarray:
    """A sparse constant (TACO format: traversal order, dense/CSR dimension metadata, block map) as a
    dense array of the tensor's shape, expanded by :func:`gpu_driver.ops.densify.expand_sparse`."""
    sp = tensor.sparse
    order = [int(d) for d in sp.TraversalOrderAsNumpy()]
    block_map = [int(d) for d in sp.BlockMapAsNumpy()] if not sp.BlockMapIsNone() else []
    rank = len(tensor.shape)
    metas = [sp.DimMetadata(k) for k in range(sp.DimMetadataLength())]
    if len(metas) != len(order) or len(order) != rank + len(block_map):
        raise Unsupported(f"sparse tensor {tensor.name!r}: {len(metas)} dimension metadata, a traversal order "
                          f"of {len(order)} and a block map of {len(block_map)} for rank {rank}")
    # TF Lite stores the size of DENSE levels only: a SPARSE_CSR level of dimension d spans the
    # tensor's size over the (DENSE) blocks that divide d, as TF Lite's FormatConverter reads it
    level_of = {dim: level for level, dim in enumerate(order)}
    blocked = list(tensor.shape)
    for j, d in enumerate(block_map):
        block = metas[level_of[rank + j]] if rank + j in level_of else None
        if block is None or block.Format() != 0 or not 0 <= d < rank:
            raise Unsupported(f"sparse tensor {tensor.name!r}: block dimension {j} is not a DENSE block of a dimension")
        blocked[d] //= max(int(block.DenseSize()), 1)
    levels = []
    for meta, dim in zip(metas, order):
        if meta.Format() == 0:  # DENSE
            levels.append(SparseLevel(int(meta.DenseSize())))
            continue
        seg = meta.ArraySegments()
        idx = meta.ArrayIndices()
        seg_cls, idx_cls = _index_vector_class(meta.ArraySegmentsType()), _index_vector_class(meta.ArrayIndicesType())
        s, i = seg_cls(), idx_cls()
        s.Init(seg.Bytes, seg.Pos)
        i.Init(idx.Bytes, idx.Pos)
        levels.append(SparseLevel(blocked[dim] if dim < rank else 0, s.ValuesAsNumpy() if s.ValuesLength() else [],
                                  i.ValuesAsNumpy() if i.ValuesLength() else []))
    try:
        out = expand_sparse(tensor.data, order, block_map, levels)
    except SparseFormatError as err:
        raise Unsupported(f"sparse tensor {tensor.name!r}: {err}") from None
    if out.shape != tuple(tensor.shape):
        raise Unsupported(f"sparse tensor {tensor.name!r}: its metadata describe shape {list(out.shape)}, "
                          f"the tensor has {list(tensor.shape)}")
    return out


def _index_vector_class(kind: int):
    import tflite

    names = {1: "Int32Vector", 2: "Uint16Vector", 3: "Uint8Vector"}
    if kind not in names:
        raise Unsupported(f"sparse index vector type {kind}")
    return getattr(tflite, names[kind])


class Emitter:
    """The NNAPI model being built for one TF Lite subgraph."""

    def __init__(self, model: TfliteModel, subgraph: Subgraph, builder: ModelBuilder, converters: dict,
                 dynamic_dims: bool = False):
        self.tfl = model
        self.dynamic_dims = dynamic_dims
        self.sg = subgraph
        self.b = builder
        self.converters = converters
        self.operands: dict[int, int] = {}           # TF Lite tensor -> operand
        self.folded: dict[int, np.ndarray] = {}       # TF Lite tensor -> value computed at import
        self.known: dict[int, TensorInfo] = {}         # operand -> what the operations so far determine
        #: TF Lite tensor -> a description a later converter may consume instead of an operand (a
        #: rank-5 intermediate NNAPI cannot hold, e.g. the EXPAND_DIMS → TILE → RESHAPE of a repeat)
        self.deferred: dict[int, tuple] = {}
        self.outputs = set(subgraph.outputs)

    # ---- tensors -----------------------------------------------------------------------------------
    def tensor(self, i: int) -> Tensor:
        return self.sg.tensors[i]

    def value(self, i: int) -> np.ndarray | None:
        """The constant value of tensor ``i`` (folded, stored, or computed from constants by the
        operations emitted for it), None for activations."""
        if i < 0:
            return None
        if i in self.folded:
            return self.folded[i]
        if i in self.operands:
            value = self.info(self.operands[i]).value
            return None if value is None else np.asarray(value)
        t = self.tensor(i)
        if t.sparse is not None:
            return None
        if t.variable and t.data is None:
            # recurrent state: every execution starts from the state TF Lite allocates (as an interpreter
            # whose variables are reset before each invocation): zero, which an int8 tensor holds as its
            # zero point (ResetVariableTensor)
            zero = t.quantization.zero_points[0] if t.type_name == "INT8" and t.quantization else 0
            return np.full(t.shape, zero, TENSOR_DTYPES.get(t.type, np.float32))
        return t.data

    def operand_type(self, t: Tensor, value: np.ndarray | None = None) -> tuple[T, float, int, object]:
        """(operand type, scale, zero point, per-channel params) of a TF Lite tensor."""
        q = t.quantization
        name = t.type_name
        if value is not None and value.dtype == np.float32 and name in ("FLOAT16", "INT8", "UINT8"):
            return T.TENSOR_FLOAT32, 0.0, 0, None  # a folded DEQUANTIZE / DENSIFY result
        if name == "FLOAT32":
            return T.TENSOR_FLOAT32, 0.0, 0, None
        if name == "FLOAT16":
            return T.TENSOR_FLOAT16, 0.0, 0, None
        if name == "BOOL":
            return T.TENSOR_BOOL8, 0.0, 0, None
        if name in ("INT32", "INT64"):
            return T.TENSOR_INT32, (q.scales[0] if q and len(q.scales) == 1 else 0.0), 0, None
        if q is None:
            raise Unsupported(f"tensor {t.index} ({t.name}) of type {name} has no quantization parameters")
        if name == "UINT8":
            return T.TENSOR_QUANT8_ASYMM, q.scales[0], q.zero_points[0], None
        if name == "INT8":
            if len(q.scales) > 1:
                return T.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0, SymmPerChannelQuantParams(q.scales, q.dimension)
            return T.TENSOR_QUANT8_ASYMM_SIGNED, q.scales[0], q.zero_points[0], None
        if name == "INT16":
            return T.TENSOR_QUANT16_SYMM, q.scales[0], 0, None
        raise Unsupported(f"tensor {t.index} ({t.name}) has type {name}, which NNAPI does not have")

    def dims(self, i: int) -> tuple[int, ...]:
        """TF Lite dimensions of tensor ``i`` as the NNAPI model declares them (−1: unknown).  A
        subgraph input takes the shape TF Lite allocates by default (as its interpreter and NNAPI
        delegate do before any input is resized) unless importing with dynamic dimensions; other
        tensors keep their signature, since TF Lite recomputes their sizes at allocation (the stored
        shape of a tensor behind an open batch dimension can be stale) — NNAPI infers them."""
        t = self.tensor(i)
        if not t.signature or (not self.dynamic_dims and i in self.sg.inputs):
            return tuple(t.shape)
        return tuple(t.signature)

    def known_dims(self, i: int) -> tuple[int, ...]:
        """The dimensions of tensor ``i`` a converter may rely on at import: those the operations
        emitted so far determine, else :meth:`dims`, open dimensions (−1) taking TF Lite's default
        allocation unless importing with dynamic dimensions."""
        dims = self.dims(i)
        if i in self.operands and any(d < 0 for d in dims):
            info = self.info(self.operands[i])
            if info.shape is not None and info.known_shape and len(info.shape) == len(dims):
                return tuple(info.shape)
        if any(d < 0 for d in dims) and not self.dynamic_dims:
            # an operation before it did not define (validation will say why): TF Lite's allocation
            return tuple(self.tensor(i).shape)
        return dims

    def info(self, operand: int) -> TensorInfo:
        """What is known of NNAPI operand ``operand`` at this point of the import: declared type and
        dimensions, a constant's value, and what the operations emitted so far infer (dimensions,
        and values computed from constants with the reference kernels)."""
        if operand not in self.known:
            self.known[operand] = declared_info(self.b.operand(operand), operand, self.b.constant_value(operand))
        return self.known[operand]

    def refusal(self, op_type: OperationType, inputs: list[int], outputs: list[int]) -> str | None:
        """Why the operation's definition refuses these operands (None: it accepts them, or cannot
        decide yet) — asked before emitting, to choose another form (say through float)."""
        entry = lookup(op_type)
        if entry is None:
            return f"{op_type.name} has no definition"
        try:
            check_signature(entry.signature, OpContext(-1, Operation(op_type, list(inputs), list(outputs)),
                                                       self.b.operands))
            define(op_type, [self.info(i) for i in inputs], [self.info(o) for o in outputs])
        except DriverError as exc:
            return exc.message
        except Exception:  # noqa: BLE001 - shapes not known yet: nothing to say
            return None
        return None

    def _infer(self, op_type: OperationType, inputs: list[int], outputs: list[int]) -> bool:
        """Run the operation's definition on what is known of its inputs (as preparation will) to
        learn its outputs' dimensions; when every input is a constant and the result small, compute
        it (the reference kernel) and return True: the outputs become constants instead of the
        operation (shape arithmetic, which NNAPI often lacks the INT32 operations for, folds away).
        Anything it cannot decide stays open; errors are left to the model's validation."""
        entry = lookup(op_type)
        if entry is None or op_type in (OperationType.IF, OperationType.WHILE):
            return False
        ins, outs = [self.info(i) for i in inputs], [self.info(o) for o in outputs]
        try:
            params = define(op_type, ins, outs)
        except Exception:  # noqa: BLE001 - unknown shapes, or a problem validation will report
            return False
        outs = [replace(t, shape=tuple(shape), known_shape=True) for t, shape in zip(outs, params.output_shapes)]
        for o, t in zip(outputs, outs):
            self.known[o] = t
        constant = all(t.value is not None or t.omitted for t in ins) and any(
            OPERAND_TYPE_INFO[t.type].is_tensor and t.value is not None for t in ins)
        if not constant or sum(int(np.prod(t.shape)) for t in outs) > FOLD_ELEMENTS or \
                any(self.b.operand(o).lifetime != OperandLifeTime.TEMPORARY_VARIABLE for o in outputs):
            return False
        try:
            values = entry.reference(params, ins, outs)
        except Exception:  # noqa: BLE001 - left to preparation, which folds or reports it
            return False
        for o, t, v in zip(outputs, outs, values):
            operand = self.b.operand(o)
            operand.dimensions = list(t.shape) or [1]
            self.b.set_constant(o, v)
            self.known[o] = replace(t, value=v)
        return True

    def shape_of(self, i: int) -> list[int]:
        """NNAPI dimensions of tensor ``i``: 0 for a dimension unknown until execution; a TF Lite
        scalar (rank 0) becomes [1], since NNAPI reads empty dimensions as "rank unknown"."""
        dims = self.dims(i)
        return [0 if d < 0 else d for d in dims] if dims else [1]

    def operand(self, i: int) -> int:
        """The operand of TF Lite tensor ``i`` (a constant, or the activation's operand), created once."""
        if i in self.operands:
            return self.operands[i]
        if i in self.deferred:
            raise Unsupported(f"tensor {i} ({self.tensor(i).name}) has rank {len(self.tensor(i).shape)}, more than "
                              f"NNAPI's operations take")
        t = self.tensor(i)
        value = self.value(i)
        otype, scale, zp, cq = self.operand_type(t, value)
        if value is not None:
            value = np.asarray(value)
            if value.dtype == np.int64:
                if value.size and (value.min() < -(1 << 31) or value.max() >= (1 << 31)):
                    raise Unsupported(f"int64 constant {t.index} ({t.name}) does not fit int32")
                value = value.astype(np.int32)
            idx = self.b.add_constant(otype, list(t.shape) or [1], value.reshape(-1), scale, zp, cq)
        else:
            idx = self.b.add_operand(otype, self.shape_of(i), scale, zp, cq)
        self.operands[i] = idx
        return idx

    def optional(self, i: int, otype: T = T.TENSOR_FLOAT32) -> int:
        """The operand of an optional input: tensor ``i``, or an omitted (NO_VALUE) operand for -1."""
        return self.operand(i) if i >= 0 else self.b.add_no_value(otype)

    def output(self, i: int) -> int:
        """The operand an operator writes for TF Lite tensor ``i``."""
        return self.operand(i)

    def like(self, i: int, shape=None, otype: T | None = None) -> int:
        """A new temporary with tensor ``i``'s type and quantization (and ``shape`` if given)."""
        t = self.tensor(i)
        ot, scale, zp, cq = self.operand_type(t)
        return self.b.add_operand(otype or ot, list(self.shape_of(i) if shape is None else shape), scale, zp, cq)

    # ---- operands of arguments ---------------------------------------------------------------------
    def i32(self, v: int) -> int:
        return self.b.add_scalar(T.INT32, int(v))

    def boolean(self, v: bool) -> int:
        return self.b.add_scalar(T.BOOL, bool(v))

    def float_scalar(self, v: float, like: int) -> int:
        """A FLOAT16 scalar for a float16 tensor ``like``, FLOAT32 otherwise."""
        half = self.tensor(like).type_name == "FLOAT16" and self.value(like) is None
        return self.b.add_scalar(T.FLOAT16 if half else T.FLOAT32, float(v))

    def i32_vector(self, values) -> int:
        values = np.asarray(values, dtype=np.int64).reshape(-1)
        return self.b.add_constant(T.TENSOR_INT32, [values.size], values.astype(np.int32))

    def constant(self, otype: T, value, scale: float = 0.0, zp: int = 0) -> int:
        value = np.asarray(value)
        return self.b.add_constant(otype, list(value.shape), value.reshape(-1), scale, zp)

    def op(self, op_type: OperationType, inputs: list[int], outputs: list[int]) -> None:
        """Add an NNAPI operation (computed at import instead when its inputs are all constants)."""
        if not self._infer(op_type, inputs, outputs):
            self.b.add_operation(op_type, inputs, outputs)

    def subgraph(self, index: int) -> int:
        """A SUBGRAPH operand holding TF Lite subgraph ``index`` (an IF branch, a WHILE condition
        or body), imported as a referenced NNAPI subgraph."""
        if not 0 < index < len(self.tfl.subgraphs):
            raise Unsupported(f"subgraph index {index} out of range")
        child = ModelBuilder()
        import_subgraph(self.tfl, self.tfl.subgraphs[index], child, self.converters, self.dynamic_dims)
        return self.b.add_subgraph(child)


def import_subgraph(model: TfliteModel, subgraph: Subgraph, builder: ModelBuilder, converters: dict,
                    dynamic_dims: bool = False) -> None:
    """Convert every operator of ``subgraph`` into ``builder`` (a model's main graph)."""
    em = Emitter(model, subgraph, builder, converters, dynamic_dims)
    problems = []
    for i in subgraph.inputs:
        t = subgraph.tensors[i]
        try:
            otype, scale, zp, cq = em.operand_type(t)
        except Unsupported as exc:
            problems.append(f"model input {i} ({t.name}): {exc}")
            continue
        em.operands[i] = builder.add_input(otype, em.shape_of(i), scale, zp, cq)
    for op in subgraph.operators:
        convert = converters.get(op.name)
        try:
            if convert is None:
                kind = "custom operator" if op.custom else "operator"
                raise Unsupported(f"no NNAPI equivalent of this {kind}")
            convert(em, op)
        except Unsupported as exc:
            problems.append(f"operator {op.index} ({op.name}): {exc}")
        except DriverError as exc:
            problems.append(f"operator {op.index} ({op.name}): {exc.message}")
    if problems:
        raise invalid(f"the TF Lite model has {len(problems)} operator(s) this driver cannot express:\n  "
                      + "\n  ".join(problems))
    outputs = []
    for i in subgraph.outputs:
        if i not in em.operands and em.value(i) is None:
            raise invalid(f"model output tensor {i} ({subgraph.tensors[i].name}) is not produced by any operator")
        operand = em.operand(i)
        if builder.operand(operand).lifetime != OperandLifeTime.TEMPORARY_VARIABLE or operand in outputs:
            # an output that is an input, a constant (computed at import) or another output: NNAPI
            # outputs are written by an operation, so an identity CAST copies it
            copy = em.like(i)
            builder.add_operation(OperationType.CAST, [operand], [copy])  # not folded back to a constant
            operand = copy
        outputs.append(operand)
    builder.set_outputs(outputs)


def specs(subgraph: Subgraph, indexes: list[int], dynamic_dims: bool = False) -> list[TensorSpec]:
    out = []
    for i in indexes:
        t = subgraph.tensors[i]
        shape = tuple(t.signature) if dynamic_dims and t.signature else tuple(t.shape)
        out.append(TensorSpec(t.name, shape, np.dtype(TENSOR_DTYPES.get(t.type, np.float32))))
    return out
