"""BATCH_MATMUL (feature level 6): out[..., i, j] = Σ_k X'[..., i, k]·Y'[..., k, j].

- X and Y have the same rank (2–4) and batch dimensions; ``adj_x`` / ``adj_y`` transpose the last two
  dimensions of X / Y (no conjugation).  Every matrix dimension must be > 0.
- Float types accumulate in fp32 (float16 stored as half).  TENSOR_INT32 wraps like int32 C
  arithmetic.  TENSOR_QUANT8_ASYMM_SIGNED accumulates (x − z_x)(y − z_y) in int32 and requantizes
  with the one multiplier s_x·s_y/s_out (QuantizeMultiplier, any size), clamped to [−128, 127].
- The accelerator kernel (``matmul.cl``) computes one output element per work item, every type;
  quantized results equal the reference's integer arithmetic bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import quant
from ..compiler.lowering_helpers import ctype, float_io, known, numel, params_ok, scalars_constant, Work
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, require
from .registry import operation
from .signature import BOOL, F16, F32, I32, Q8AS, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class BatchMatmulParams(OpParams):
    batch: int = 0
    rows: int = 0        # output rows (M)
    cols: int = 0        # output columns (N)
    depth: int = 0       # contraction size (K)
    adj_x: bool = False
    adj_y: bool = False
    multiplier: int = 0  # quantized: s_x·s_y/s_out as (multiplier, shift)
    shift: int = 0


BATCH_MATMUL_SIGNATURE = OpSignature({F32: 6, F16: 6, I32: 6, Q8AS: 6},
                                     (Variant("batch_matmul", ("T", "T", BOOL, BOOL), ("T",)),),
                                     ranks={0: (2, 4), 1: (2, 4)}, out_ranks={0: (2, 4)})


def _matrices(info: TensorInfo, batch: int, adjoint: bool) -> np.ndarray:
    """[batch, rows, cols] of the operand, transposed when ``adjoint``."""
    a = info.array()
    a = a.reshape((batch,) + a.shape[-2:])
    return np.swapaxes(a, 1, 2) if adjoint else a


def reference_batch_matmul(p: BatchMatmulParams, inputs: list[TensorInfo],
                           outputs: list[TensorInfo]) -> list[np.ndarray]:
    x, y, out = inputs[0], inputs[1], outputs[0]
    a, b = _matrices(x, p.batch, p.adj_x), _matrices(y, p.batch, p.adj_y)
    if x.type == I32:  # int32 wrap-around
        r = (np.matmul(a.astype(np.int64), b.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    elif x.type == Q8AS:
        acc = np.matmul(a.astype(np.int64) - x.zero_point, b.astype(np.int64) - y.zero_point)
        acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)  # the int32 accumulator
        r = np.clip(quant.multiply_by_quantized_multiplier(acc, p.multiplier, p.shift) + out.zero_point, -128, 127)
    else:
        r = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return [np.asarray(r).astype(out.dtype).reshape(p.output_shapes[0])]


def supports_batch_matmul(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [2, 3]):
        return False
    x, y, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    return known(x, y, out) and x.type == y.type == out.type


def lower_batch_matmul(ctx: LoweringContext) -> None:
    p = ctx.params
    x, y, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    count = p.batch * p.rows * p.cols
    xr, xc = x.shape[-2:]
    yr, yc = y.shape[-2:]
    d = {"T": ctype(x), "COUNT": count, "M": p.rows, "N": p.cols, "K": p.depth,
         # element strides of X'[i][k] and Y'[k][j] inside one matrix
         "XI": 1 if p.adj_x else xc, "XK": xc if p.adj_x else 1, "XB": xr * xc,
         "YK": 1 if p.adj_y else yc, "YJ": yc if p.adj_y else 1, "YB": yr * yc,
         "KIND": 2 if x.type == Q8AS else 1 if x.type == I32 else 0,
         "ZX": x.zero_point, "ZY": y.zero_point, "ZO": out.zero_point, "MULT": p.multiplier, "SHIFT": p.shift}
    d.update(float_io(x))
    ctx.emit("matmul.cl", d, [ctx.input(0), ctx.input(1)], [ctx.output(0)], (count,), Work.ELEMENTS)


# ---- the operation ------------------------------------------------------------------------------------

def batch_matmul_multiply_adds(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> int:
    """Each output element sums over the shared axis (one of x's last two)."""
    return numel(outputs[0].shape) * max(inputs[0].shape[-2:])


@operation(OperationType.BATCH_MATMUL, signature=BATCH_MATMUL_SIGNATURE, reference=reference_batch_matmul,
           lower=lower_batch_matmul, supports=supports_batch_matmul, multiply_adds=batch_matmul_multiply_adds)
def batch_matmul(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> BatchMatmulParams:
    x, y = inputs[0], inputs[1]
    xs, ys = x.dims(), y.dims()
    adj_x, adj_y = bool(inputs[2].scalar()), bool(inputs[3].scalar())
    require(len(xs) == len(ys), "BATCH_MATMUL", f"input ranks differ: {len(xs)} and {len(ys)}")
    require(2 <= len(xs) <= 4, "BATCH_MATMUL", f"input rank {len(xs)} is not 2..4")
    require(xs[:-2] == ys[:-2], "BATCH_MATMUL", f"batch dimensions differ: {list(xs[:-2])} and {list(ys[:-2])}")
    require(0 not in xs[-2:] and 0 not in ys[-2:], "BATCH_MATMUL", "matrix dimensions must be > 0")
    rows, kx = (xs[-1], xs[-2]) if adj_x else (xs[-2], xs[-1])
    ky, cols = (ys[-1], ys[-2]) if adj_y else (ys[-2], ys[-1])
    require(kx == ky, "BATCH_MATMUL", f"contraction sizes differ: {kx} (X) and {ky} (Y)")
    params = BatchMatmulParams(output_shapes=[tuple(xs[:-2]) + (rows, cols)], batch=numel(xs[:-2]),
                               rows=rows, cols=cols, depth=kx, adj_x=adj_x, adj_y=adj_y)
    if x.type == Q8AS:
        out = outputs[0]
        # GetQuantizedConvolutionMultiplier: the scale product in float, the quotient in double
        real = float(np.float32(x.scale) * np.float32(y.scale)) / float(np.float32(out.scale))
        params.multiplier, params.shift = quant.quantize_multiplier(real)
    return params
