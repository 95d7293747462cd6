"""Writing ``.tflite`` files (the ``tflite`` package's flatbuffer builders): small models for tests,
and models re-written from what :mod:`gpu_driver.tflite.reader` read (:func:`write_model`).

    w = TfliteWriter()
    x = w.tensor("x", [1, 4], "FLOAT32")                       # an activation
    c = w.tensor("c", [4], "FLOAT32", data=np.ones(4))          # a constant
    y = w.tensor("y", [1, 4], "FLOAT32")
    w.operator("ADD", [x, c], [y], options=("AddOptions", {"FusedActivationFunction": 1}))
    data = w.finish(inputs=[x], outputs=[y])                    # bytes of a TFL3 model

LiteRT runs these files too, which makes it the independent oracle of the importer tests.
Option fields that are vectors are given as numpy arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

TYPE_CODES = {"FLOAT32": 0, "FLOAT16": 1, "INT32": 2, "UINT8": 3, "INT64": 4, "BOOL": 6, "INT16": 7, "INT8": 9}
DTYPES = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32, "UINT8": np.uint8, "INT64": np.int64,
          "BOOL": np.bool_, "INT16": np.int16, "INT8": np.int8}


@dataclass
class _Tensor:
    name: str
    shape: list[int]
    type: str
    data: np.ndarray | None
    scales: list[float] | None
    zero_points: list[int] | None
    dim: int
    variable: bool = False


#: operators whose first version TF Lite runtimes register is above 1
FIRST_VERSIONS = {"BROADCAST_TO": 2}


@dataclass
class _Operator:
    code: int
    inputs: list[int]
    outputs: list[int]
    options: tuple | None
    custom: bytes | None
    intermediates: list[int] = field(default_factory=list)


@dataclass
class TfliteWriter:
    """The model's main subgraph (subgraph 0); :meth:`subgraph` adds further ones (IF/WHILE bodies)."""

    tensors: list[_Tensor] = field(default_factory=list)
    operators: list[_Operator] = field(default_factory=list)
    codes: list[tuple[int, str | None]] = field(default_factory=list)
    extra: list = field(default_factory=list)   # [(writer, inputs, outputs)] of subgraphs 1, 2, …
    io: tuple = ((), ())

    def subgraph(self) -> "TfliteWriter":
        """A new subgraph sharing this model's operator codes; its index is its position + 1."""
        sub = TfliteWriter(codes=self.codes)
        self.extra.append(sub)
        return sub

    def set_io(self, inputs, outputs) -> None:
        self.io = (list(inputs), list(outputs))

    def tensor(self, name, shape, type, data=None, scale=None, zero_point=None, dim=0, variable=False) -> int:
        scales = None if scale is None else list(np.atleast_1d(scale))
        zps = None if scale is None else list(np.atleast_1d(zero_point if zero_point is not None else 0))
        if data is not None:
            data = np.asarray(data).astype(DTYPES[type]).reshape(shape)
        self.tensors.append(_Tensor(name, list(shape), type, data, scales, zps, dim, variable))
        return len(self.tensors) - 1

    def operator(self, name, inputs, outputs, options=None, custom: bytes | None = None, intermediates=()) -> None:
        """A builtin operator by name ("CONV_2D"), or a custom one (``custom`` = its options bytes);
        ``intermediates``: tensor indexes of its intermediates (an integer LSTM's five)."""
        code = (32, name) if custom is not None else (getattr(tflite.BuiltinOperator, name), None)
        if code not in self.codes:
            self.codes.append(code)
        self.operators.append(_Operator(self.codes.index(code), list(inputs), list(outputs), options, custom,
                                        list(intermediates)))

    def _subgraph(self, b, buffers, inputs, outputs) -> int:
        buffer_of = {}
        for k, t in enumerate(self.tensors):
            if t.data is not None:
                raw = np.frombuffer(np.ascontiguousarray(t.data).astype(t.data.dtype.newbyteorder("<")).tobytes(),
                                    np.uint8)
                vec = b.CreateNumpyVector(raw)
                tflite.BufferStart(b)
                tflite.BufferAddData(b, vec)
                buffer_of[k] = len(buffers)
                buffers.append(tflite.BufferEnd(b))
        tensor_offsets = []
        for k, t in enumerate(self.tensors):
            name = b.CreateString(t.name) if t.name is not None else None  # stripped models have none
            shape = b.CreateNumpyVector(np.asarray(t.shape, np.int32))
            quant = None
            if t.scales is not None:
                sc = b.CreateNumpyVector(np.asarray(t.scales, np.float32))
                zp = b.CreateNumpyVector(np.asarray(t.zero_points, np.int64))
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, sc)
                tflite.QuantizationParametersAddZeroPoint(b, zp)
                tflite.QuantizationParametersAddQuantizedDimension(b, t.dim)
                quant = tflite.QuantizationParametersEnd(b)
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, TYPE_CODES[t.type])
            tflite.TensorAddBuffer(b, buffer_of.get(k, 0))
            if name is not None:
                tflite.TensorAddName(b, name)
            if t.variable:
                tflite.TensorAddIsVariable(b, True)
            if quant is not None:
                tflite.TensorAddQuantization(b, quant)
            tensor_offsets.append(tflite.TensorEnd(b))
        op_offsets = []
        for op in self.operators:
            opts = None
            if op.options is not None:
                kind, fields = op.options
                vectors = {f: b.CreateNumpyVector(np.asarray(v)) for f, v in fields.items() if isinstance(v, np.ndarray)}
                getattr(tflite, f"{kind}Start")(b)
                for fname, value in fields.items():
                    getattr(tflite, f"{kind}Add{fname}")(b, vectors.get(fname, value))
                opts = getattr(tflite, f"{kind}End")(b)
            custom = b.CreateNumpyVector(np.frombuffer(op.custom, np.uint8)) if op.custom is not None else None
            ins = b.CreateNumpyVector(np.asarray(op.inputs, np.int32))
            outs = b.CreateNumpyVector(np.asarray(op.outputs, np.int32))
            inter = b.CreateNumpyVector(np.asarray(op.intermediates, np.int32)) if op.intermediates else None
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, op.code)
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if inter is not None:
                tflite.OperatorAddIntermediates(b, inter)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options[0]))
                tflite.OperatorAddBuiltinOptions(b, opts)
            if custom is not None:
                tflite.OperatorAddCustomOptions(b, custom)
            op_offsets.append(tflite.OperatorEnd(b))
        tvec = _vector(b, tflite.SubGraphStartTensorsVector, tensor_offsets)
        ovec = _vector(b, tflite.SubGraphStartOperatorsVector, op_offsets)
        ivec = b.CreateNumpyVector(np.asarray(inputs, np.int32))
        outvec = b.CreateNumpyVector(np.asarray(outputs, np.int32))
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tvec)
        tflite.SubGraphAddOperators(b, ovec)
        tflite.SubGraphAddInputs(b, ivec)
        tflite.SubGraphAddOutputs(b, outvec)
        return tflite.SubGraphEnd(b)

    def finish(self, inputs, outputs) -> bytes:
        b = flatbuffers.Builder(4096)
        tflite.BufferStart(b)
        buffers = [tflite.BufferEnd(b)]  # buffer 0 is the empty sentinel
        subgraphs = [self._subgraph(b, buffers, inputs, outputs)]
        for sub in self.extra:
            subgraphs.append(sub._subgraph(b, buffers, *sub.io))
        code_offsets = []
        builtin_names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if k.isupper()}
        for code, custom_name in self.codes:
            cname = b.CreateString(custom_name) if custom_name else None
            version = FIRST_VERSIONS.get(builtin_names.get(code), 1) if not custom_name else 1
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddVersion(b, version)
            if cname is not None:
                tflite.OperatorCodeAddCustomCode(b, cname)
            code_offsets.append(tflite.OperatorCodeEnd(b))
        cvec = _vector(b, tflite.ModelStartOperatorCodesVector, code_offsets)
        svec = _vector(b, tflite.ModelStartSubgraphsVector, subgraphs)
        bvec = _vector(b, tflite.ModelStartBuffersVector, buffers)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, cvec)
        tflite.ModelAddSubgraphs(b, svec)
        tflite.ModelAddBuffers(b, bvec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _vector(b, start, items):
    start(b, len(items))
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()


def options_fields(options) -> tuple[str, dict] | None:
    """A read options table (``tflite.<Kind>Options``) as the writer's (kind, fields)."""
    if options is None:
        return None
    kind = type(options).__name__
    prefix = f"{kind}Add"
    fields = {}
    for name in dir(tflite):
        if name.startswith(prefix):
            field_name = name[len(prefix):]
            as_numpy = getattr(options, f"{field_name}AsNumpy", None)
            if as_numpy is not None:
                if not getattr(options, f"{field_name}IsNone")():
                    fields[field_name] = np.asarray(as_numpy())
            elif hasattr(options, field_name):
                fields[field_name] = getattr(options, field_name)()
    return kind, fields


def write_model(model) -> bytes:
    """A :class:`gpu_driver.tflite.reader.TfliteModel` (one subgraph, dense constants) as bytes."""
    sg = model.subgraphs[0]
    w = TfliteWriter()
    for t in sg.tensors:
        q = t.quantization
        w.tensors.append(_Tensor(t.name, list(t.shape), t.type_name, t.data, q.scales if q else None,
                                 q.zero_points if q else None, q.dimension if q else 0, t.variable))
    for op in sg.operators:
        if op.custom:
            w.operator(op.name, op.inputs, op.outputs, custom=op.custom_options, intermediates=op.intermediates)
        else:
            # options: a read table, or already the writer's (kind, fields)
            options = op.options if isinstance(op.options, tuple) else options_fields(op.options)
            w.operator(op.name, op.inputs, op.outputs, options=options, intermediates=op.intermediates)
    return w.finish(sg.inputs, sg.outputs)
