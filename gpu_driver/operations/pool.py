"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (HAL 1.0 ops, with the FL3 layout flag).

Explicit: input, pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, filter_w, filter_h,
fuse, [layout].  Implicit: input, padding code, stride_w, stride_h, filter_w, filter_h, fuse, [layout].
Dilation is always 1; quantized outputs must have the input's scale / zero point.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..hal.types import OperationType
from .base import TensorInfo, operation, require, same_quant_as_input
from .conv import Window2DParams, activation_fields, nhwc_dims, window_fields
from .padding import decode_window_args, resolve_window

_NAMES = {OperationType.AVERAGE_POOL_2D: "AVERAGE_POOL_2D", OperationType.MAX_POOL_2D: "MAX_POOL_2D",
          OperationType.L2_POOL_2D: "L2_POOL_2D"}


@dataclass
class Pool2DParams(Window2DParams):
    """A 2-D pool; ``out_c == in_c``, dilation 1.  Only in-bounds cells of a window take part:

    - AVERAGE: mean over the in-bounds cells (count = in-bounds cells of that window);
      quantized: integer sum of stored values s over n cells, (s + n//2)//n rounded half away.
    - MAX: max over the in-bounds cells.
    - L2: sqrt(Σx² / count) (float only).

    ``kind`` is "average", "max" or "l2".  Quantized clamp bounds (act_min/act_max) are in the
    (shared) input/output quantization.
    """

    kind: str = "average"


def _pool(op: OperationType, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    name = _NAMES[op]
    inp = inputs[0]
    explicit = len(inputs) >= 10
    args = decode_window_args(inputs, 1, 2, explicit, name)
    filter_w, filter_h = args.extras
    n, h, w, c = nhwc_dims(inp, args.nchw, name)
    win = resolve_window(args, h, w, filter_h, filter_w, name, pad_limit_uses_dilation=False)
    out = outputs[0]
    if inp.is_quantized and out.type == inp.type:
        same_quant_as_input(inp, out, name)
    require(not (op == OperationType.L2_POOL_2D and inp.is_quantized), name, "quantized types are not supported")
    kind = {OperationType.AVERAGE_POOL_2D: "average", OperationType.MAX_POOL_2D: "max",
            OperationType.L2_POOL_2D: "l2"}[op]
    return Pool2DParams(**window_fields(args, win, n, h, w, c, c, filter_h, filter_w),
                        **activation_fields(inputs[args.activation_index], out, name), kind=kind)


@operation(OperationType.AVERAGE_POOL_2D)
def average_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.AVERAGE_POOL_2D, inputs, outputs)


@operation(OperationType.MAX_POOL_2D)
def max_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.MAX_POOL_2D, inputs, outputs)


@operation(OperationType.L2_POOL_2D)
def l2_pool_2d(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> Pool2DParams:
    return _pool(OperationType.L2_POOL_2D, inputs, outputs)
