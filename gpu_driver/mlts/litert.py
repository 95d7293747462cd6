"""TF Lite on the CPU (LiteRT, ``ai-edge-litert``) as the peer of a benchmark: XNNPACK, or the
builtin kernels without default delegates (the second fp32 CPU library of the accuracy rule)."""
from __future__ import annotations

import numpy as np

from ..errors import invalid


class LiteRT:
    """One LiteRT interpreter of a model; ``run(inputs) -> outputs`` in the model's output order."""

    def __init__(self, model_bytes: bytes, threads: int = 2, xnnpack: bool = True):
        try:
            from ai_edge_litert.interpreter import Interpreter, OpResolverType
        except ImportError:
            raise invalid("--compare litert needs LiteRT: pip install 'gpu_driver[litert]'") from None
        resolver = OpResolverType.AUTO if xnnpack else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self.name = "litert-xnnpack" if xnnpack else "litert-builtin"
        self.interpreter = Interpreter(model_content=litert_compatible(model_bytes), num_threads=threads,
                                       experimental_op_resolver_type=resolver)
        self.interpreter.allocate_tensors()
        self._inputs = [d["index"] for d in self.interpreter.get_input_details()]
        self._outputs = [d["index"] for d in self.interpreter.get_output_details()]

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for index, x in zip(self._inputs, inputs):
            self.interpreter.set_tensor(index, x)
        self.interpreter.invoke()
        return [self.interpreter.get_tensor(index).copy() for index in self._outputs]


def litert_compatible(model_bytes: bytes) -> bytes:
    """The model as LiteRT's Python interpreter can load it: MediaPipe's custom
    ``Convolution2DTransposeBias`` (options: TfLiteTransposeConvParams {padding SAME=1/VALID=2,
    stride_w, stride_h}) becomes the builtin TRANSPOSE_CONV with its bias input and a constant output
    shape.  Other models are returned unchanged."""
    import struct

    from ..tflite.reader import Tensor, read_model
    from ..tflite.writer import write_model

    model = read_model(model_bytes)
    sg = model.subgraphs[0]
    custom = [op for op in sg.operators if op.custom and op.name == "Convolution2DTransposeBias"]
    if not custom or len(model.subgraphs) > 1:
        return model_bytes
    for op in custom:
        padding, stride_w, stride_h = struct.unpack("<3i", op.custom_options[:12])
        shape = np.asarray(sg.tensors[op.outputs[0]].shape, np.int32)
        sg.tensors.append(Tensor(len(sg.tensors), f"{sg.tensors[op.outputs[0]].name}/output_shape", (4,), (4,), 2,
                                 shape, None))
        op.name, op.custom = "TRANSPOSE_CONV", False
        op.inputs = [len(sg.tensors) - 1, op.inputs[1], op.inputs[0], op.inputs[2]]
        op.options = ("TransposeConvOptions", {"Padding": padding - 1, "StrideW": stride_w, "StrideH": stride_h})
    return write_model(model)

