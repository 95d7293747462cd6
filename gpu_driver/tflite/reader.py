"""Reading a ``.tflite`` flatbuffer into plain records (the ``tflite`` package parses the schema).

Every flatbuffer access happens here, so a truncated or corrupt file surfaces as one
DriverError(INVALID_ARGUMENT) naming what could not be read, never as a raw parser exception.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import invalid

try:  # the optional ``tflite`` extra
    import tflite as _schema
except ImportError:  # pragma: no cover - exercised only without the extra
    _schema = None

#: TF Lite TensorType code -> numpy dtype (types without an NNAPI counterpart map to None)
TENSOR_DTYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16,
                 9: np.int8, 10: np.float64}
TENSOR_TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 5: "STRING", 6: "BOOL",
                     7: "INT16", 8: "COMPLEX64", 9: "INT8", 10: "FLOAT64", 11: "COMPLEX128", 12: "UINT64",
                     13: "RESOURCE", 14: "VARIANT", 15: "UINT32", 16: "UINT16", 17: "INT4"}


@dataclass
class Quantization:
    scales: list[float]
    zero_points: list[int]
    dimension: int = 0


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    #: -1 marks a dimension unknown until execution (shape_signature)
    signature: tuple[int, ...]
    type: int
    data: np.ndarray | None           # constant contents, shaped; None for activations
    quantization: Quantization | None
    sparse: Any = None                # the SparsityParameters table of a sparse constant
    #: a variable tensor: state an operator keeps across invocations (LSTM/RNN/SVDF), zero at start
    variable: bool = False

    @property
    def type_name(self) -> str:
        return TENSOR_TYPE_NAMES.get(self.type, str(self.type))


@dataclass
class Operator:
    index: int
    name: str                          # builtin name ("CONV_2D") or the custom code
    custom: bool
    version: int
    inputs: list[int]                  # tensor indexes, -1 = omitted optional input
    outputs: list[int]
    options: Any = None                # the builtin options table (tflite.<Name>Options), or None
    custom_options: bytes = b""
    #: tensor indexes of the operator's intermediates: tensors whose quantization parameters describe
    #: values inside the operator (the gate and hidden-state scales of an integer LSTM)
    intermediates: list[int] = field(default_factory=list)


@dataclass
class Subgraph:
    index: int
    name: str
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]


@dataclass
class TfliteModel:
    version: int
    subgraphs: list[Subgraph] = field(default_factory=list)


def _builtin_names() -> dict[int, str]:
    ops = _schema.BuiltinOperator
    return {getattr(ops, n): n for n in dir(ops) if not n.startswith("_") and isinstance(getattr(ops, n), int)}


def _options_classes() -> dict[int, type]:
    opts = _schema.BuiltinOptions
    out = {}
    for n in dir(opts):
        code = getattr(opts, n)
        if not n.startswith("_") and isinstance(code, int) and hasattr(_schema, n):
            out[code] = getattr(_schema, n)
    return out


def read_bytes(source) -> bytes:
    """The file's bytes from a path, bytes-like object or binary file object."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as f:
                return f.read()
        except OSError as exc:
            raise invalid(f"cannot read TF Lite model {os.fspath(source)!r}: {exc.strerror}") from None
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise invalid("the TF Lite model file object must be opened in binary mode")
        return bytes(data)
    raise invalid(f"a TF Lite model is a path, bytes or a binary file object, not {type(source).__name__}")


def _buffer(model, data: bytes, index: int) -> bytes | None:
    if index <= 0 or index >= model.BuffersLength():
        return None
    buf = model.Buffers(index)
    offset, size = buf.Offset(), buf.Size()
    if offset > 1:  # stored after the flatbuffer (models over 2 GB)
        if offset + size > len(data):
            raise invalid(f"buffer {index} lies outside the file")
        return data[offset:offset + size]
    if buf.DataIsNone() or buf.DataLength() == 0:
        return None
    return buf.DataAsNumpy().tobytes()


def _text(raw: bytes | None) -> str:
    """A flatbuffer string field (names are optional: stripped models have none)."""
    return (raw or b"").decode("utf-8", errors="replace")


def _tensor(model, data: bytes, t, index: int) -> Tensor:
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if not t.ShapeIsNone() else ()
    signature = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if not t.ShapeSignatureIsNone() else shape
    raw = _buffer(model, data, t.Buffer())
    ttype = t.Type()
    dtype = TENSOR_DTYPES.get(ttype)
    sparse = t.Sparsity()
    value = None
    if raw is not None and dtype is not None:
        flat = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)
        if sparse is None:
            count = int(np.prod(shape)) if shape else 1
            if flat.size != count:
                raise invalid(f"tensor {index} ({_text(t.Name())}): {flat.size} values for shape "
                              f"{list(shape)}")
            value = flat.reshape(shape)
        else:
            value = flat  # the sparse tensor's stored values, densified by the importer
    q = t.Quantization()
    quant = None
    if q is not None and not q.ScaleIsNone() and q.ScaleLength() > 0:
        zps = [int(z) for z in q.ZeroPointAsNumpy()] if not q.ZeroPointIsNone() else [0] * q.ScaleLength()
        quant = Quantization([float(s) for s in q.ScaleAsNumpy()], zps, int(q.QuantizedDimension()))
    return Tensor(index, _text(t.Name()), shape, signature, ttype, value, quant, sparse,
                  bool(t.IsVariable()))


def _operator(model, op, index: int, builtin: dict, options: dict, tensor_count: int) -> Operator:
    code = model.OperatorCodes(op.OpcodeIndex())
    number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    custom = number == _schema.BuiltinOperator.CUSTOM
    name = _text(code.CustomCode()) if custom else builtin.get(number, str(number))
    opts = None
    table = op.BuiltinOptions()
    cls = options.get(op.BuiltinOptionsType())
    if table is not None and cls is not None:
        opts = cls()
        opts.Init(table.Bytes, table.Pos)
    custom_options = op.CustomOptionsAsNumpy().tobytes() if not op.CustomOptionsIsNone() else b""
    ins = [int(i) for i in op.InputsAsNumpy()] if not op.InputsIsNone() else []
    outs = [int(i) for i in op.OutputsAsNumpy()] if not op.OutputsIsNone() else []
    inter = [int(i) for i in op.IntermediatesAsNumpy()] if not op.IntermediatesIsNone() else []
    bad = [i for i in inter if not 0 <= i < tensor_count]
    if bad:
        raise invalid(f"operator {index} ({name}): intermediate tensor {bad[0]} out of range "
                      f"(the subgraph has {tensor_count} tensors)")
    return Operator(index, name, custom, int(code.Version()), ins, outs, opts, custom_options, inter)


def read_model(source) -> TfliteModel:
    """Parse a TF Lite flatbuffer (path, bytes or binary file object)."""
    if _schema is None:
        raise invalid("reading .tflite files needs the 'tflite' package: pip install 'gpu_driver[tflite]'")
    data = read_bytes(source)
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise invalid("not a TF Lite model (the file identifier 'TFL3' is missing)")
    try:
        model = _schema.Model.GetRootAsModel(data, 0)
        builtin, options = _builtin_names(), _options_classes()
        result = TfliteModel(int(model.Version()))
        for s in range(model.SubgraphsLength()):
            sg = model.Subgraphs(s)
            tensors = [_tensor(model, data, sg.Tensors(i), i) for i in range(sg.TensorsLength())]
            ops = [_operator(model, sg.Operators(i), i, builtin, options, len(tensors))
                   for i in range(sg.OperatorsLength())]
            name = _text(sg.Name())
            result.subgraphs.append(Subgraph(s, name, tensors, ops, [int(i) for i in sg.InputsAsNumpy()],
                                             [int(i) for i in sg.OutputsAsNumpy()]))
    except Exception as exc:  # noqa: BLE001 - any parser failure means a corrupt or truncated file
        if getattr(exc, "status", None) is not None:
            raise
        raise invalid(f"corrupt or truncated TF Lite model: {type(exc).__name__}: {exc}") from None
    if not result.subgraphs:
        raise invalid("the TF Lite model has no subgraph")
    return result
