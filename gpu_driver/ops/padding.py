"""Padding: PAD, PAD_V2, MIRROR_PAD.

The paddings input is an INT32 tensor [rank, 2] of (before, after) counts ≥ 0 per axis; output dim
= before + dim + after, quantization "=in".  None accepts zero-sized inputs.

- PAD (rank ≤ 4): pads with the logical zero: 0.0 for floats, the zero point for quantized types.
- PAD_V2 (rank ≤ 4): pads with input 2 — a FLOAT16 / FLOAT32 scalar for float tensors, an INT32 for
  quantized ones that is the raw stored value (truncated to the 8-bit type, not quantized).
- MIRROR_PAD (feature level 7, any rank ≥ 1): np.pad's "reflect" (mode 0: the edge is not repeated,
  each padding ≤ dim − 1) or "symmetric" (mode 1: the edge is repeated, each padding ≤ dim).
The accelerator runs all three with the gather kernel ``slicing.cl`` (raw element copies; the pad value
as its stored bits).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import known, numel, params_ok, row_strides, scalars_constant, Work
from ..hal.types import OperandType, OperationType
from .definition import OpParams, TensorInfo, require, require_nonempty
from .registry import operation
from .slicing import RAW_TYPES, gather_launch
from .signature import F16, F32, I32, Q8A, Q8AS, RANK_UP_TO_4, OpContext, OpSignature, Variant, f16, f32, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

#: MIRROR_PAD's mode argument → np.pad's mode
MIRROR_MODES = {0: "reflect", 1: "symmetric"}
#: ``slicing.cl``'s MAP literal of a constant fill and of a mirror
_MAP_FILL, _MAP_MIRROR = 2, 3


# ---- params ------------------------------------------------------------------------------------------

@dataclass
class PadParams(OpParams):
    """``np.pad(input, paddings, mode)``: ``mode`` "constant" (with ``fill``, the pad value as the element
    type stores it), "reflect" or "symmetric"."""

    paddings: tuple[tuple[int, int], ...] = ()
    mode: str = "constant"
    fill: float | int = 0


# ---- signatures --------------------------------------------------------------------------------------

def _check_pad(ctx: OpContext, t: OperandType) -> int:
    """Quant8 PAD with a non-zero zero point needs feature level 3 (before it the pad value was undefined)."""
    return 3 if t == Q8A and ctx.inp(0).zero_point != 0 else 1


def _check_pad_value(ctx: OpContext, t: OperandType) -> int:
    """PAD_V2's pad value: FLOAT16 for F16, FLOAT32 for F32, INT32 for the quantized types."""
    want = i32 if t in (Q8A, Q8AS) else f16 if t == F16 else f32
    if ctx.inp(2).type != want:
        ctx.fail(f"pad value (input 2) has type {OperandType(ctx.inp(2).type).name}, expected {want.name}")
    return 1


_PADDINGS = {1: (2, 2)}
PAD_SIGNATURE = OpSignature({F32: 2, Q8A: 2, F16: 3, Q8AS: 4}, (Variant("pad", ("T", I32), ("T",)),),
                            ranks={0: RANK_UP_TO_4, **_PADDINGS}, out_ranks={0: RANK_UP_TO_4}, same_quant=((0, 0),),
                            check=_check_pad)
PAD_V2_SIGNATURE = OpSignature({F32: 3, F16: 3, Q8A: 3, Q8AS: 4},
                               (Variant("pad_v2", ("T", I32, frozenset((f16, f32, i32))), ("T",)),),
                               ranks={0: RANK_UP_TO_4, **_PADDINGS}, out_ranks={0: RANK_UP_TO_4},
                               same_quant=((0, 0),), check=_check_pad_value)
MIRROR_PAD_SIGNATURE = OpSignature({F16: 7, F32: 7, Q8A: 7, Q8AS: 7, I32: 7},
                                   (Variant("mirror_pad", ("T", I32, i32), ("T",)),), ranks=_PADDINGS,
                                   same_quant=((0, 0),))


# ---- definition helpers ------------------------------------------------------------------------------

def _define_pad(name: str, inputs: list[TensorInfo], mode: str = "constant", fill: float | int = 0) -> PadParams:
    """Decode the paddings of input 0 (``reflect`` and ``symmetric`` bound them by the dims) and the output shape."""
    dims = inputs[0].dims()
    rank = len(dims)
    require(rank >= 1, name, "input must have rank ≥ 1")
    values = inputs[1].array()
    require(values.size == 2 * rank, name, f"paddings must be [{rank}, 2], got {list(values.shape)}")
    paddings = tuple((int(b), int(a)) for b, a in values.reshape(rank, 2))
    most = {"constant": None, "reflect": 1, "symmetric": 0}[mode]
    for axis, ((before, after), d) in enumerate(zip(paddings, dims)):
        require(before >= 0 and after >= 0, name, f"paddings of axis {axis} must be ≥ 0, got {(before, after)}")
        if most is not None and d:
            require(max(before, after) <= d - most, name,
                    f"{mode} paddings {(before, after)} of axis {axis} exceed its size {d} − {most}")
    require_nonempty(dims, name)
    shape = tuple(b + d + a for d, (b, a) in zip(dims, paddings))
    return PadParams(output_shapes=[shape], paddings=paddings, mode=mode, fill=fill)


# ---- reference kernel --------------------------------------------------------------------------------

def reference_pad(params: PadParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    x = inputs[0].array()
    if params.mode == "constant":
        return [np.pad(x, params.paddings, mode="constant", constant_values=np.asarray(params.fill, x.dtype))]
    return [np.pad(x, params.paddings, mode=params.mode)]


# ---- lowering ----------------------------------------------------------------------------------------

def _pad_axes(dims, paddings, mirror: bool) -> list[tuple[int, ...]]:
    """(out dim, in dim, in stride, −before) per axis of the ``slicing.cl`` gather (step 1); an unpadded
    axis merges into the axis before it (under a mirror only an unpadded one)."""
    axes: list[tuple[int, ...]] = []
    for d, stride, (before, after) in zip(dims, row_strides(dims), paddings):
        if axes and before == after == 0 and not (mirror and axes[-1][0] != axes[-1][1]):
            out, size, _, offset = axes[-1]
            axes[-1] = (out * d, size * d, stride, offset * d)
        else:
            axes.append((before + d + after, d, stride, -before))
    return axes


def supports_pad(ctx: LoweringContext) -> bool:
    x, out = ctx.inputs[0], ctx.outputs[0]
    return (params_ok(ctx) and scalars_constant(ctx, range(1, len(ctx.node.inputs))) and known(x, out)
            and out.type == x.type and x.dtype.itemsize in RAW_TYPES and numel(out.shape) < 2 ** 31)


def emit_pad(ctx: LoweringContext, src, dst, shape, dtype, paddings, mode: str = "constant", fill=0) -> None:
    """Emit the ``slicing.cl`` gather writing tensor ``dst``: tensor ``src`` (``shape``, elements of
    ``dtype``) padded by ``paddings`` ((before, after) per axis) with ``fill`` or mirrored."""
    dtype = np.dtype(dtype)
    axes = _pad_axes(shape, paddings, mode != "constant")
    raw = np.asarray([fill], dtype).view(f"u{dtype.itemsize}")[0]
    d = {name: "{" + ", ".join(str(v) for v in values) + "}"
         for name, values in zip(("OUT_DIMS", "IN_DIMS", "IN_STRIDES", "BEGIN"), zip(*axes))}
    launch, items = gather_launch([a[0] for a in axes])
    d.update(launch, STEP="{" + ", ".join("1" * len(axes)) + "}", T=RAW_TYPES[dtype.itemsize], RANK=len(axes),
             MAP=_MAP_FILL if mode == "constant" else _MAP_MIRROR, FILL=f"{int(raw)}u", REFLECT=int(mode == "reflect"))
    ctx.emit("slicing.cl", d, [src], [dst], (items,), Work.ROWS)


def lower_pad(ctx: LoweringContext) -> None:
    p, x = ctx.params, ctx.inputs[0]
    if numel(p.output_shapes[0]) == 0:
        return
    emit_pad(ctx, ctx.input(0), ctx.output(0), x.shape, x.dtype, p.paddings, p.mode, p.fill)


# ---- the operations ----------------------------------------------------------------------------------

@operation(OperationType.PAD, signature=PAD_SIGNATURE, reference=reference_pad, lower=lower_pad,
           supports=supports_pad, value_inputs=(1,))
def pad(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> PadParams:
    x = inputs[0]
    return _define_pad("PAD", inputs, fill=x.zero_point if x.is_quantized else 0.0)


@operation(OperationType.PAD_V2, signature=PAD_V2_SIGNATURE, reference=reference_pad, lower=lower_pad,
           supports=supports_pad, value_inputs=(1,))
def pad_v2(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> PadParams:
    x, value = inputs[0], inputs[2].scalar()
    fill = np.asarray(value, np.int64).astype(x.dtype).item() if x.is_quantized else float(value)
    return _define_pad("PAD_V2", inputs, fill=fill)


@operation(OperationType.MIRROR_PAD, signature=MIRROR_PAD_SIGNATURE, reference=reference_pad, lower=lower_pad,
           supports=supports_pad, value_inputs=(1,))
def mirror_pad(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> PadParams:
    mode = inputs[2].scalar()
    require(mode in MIRROR_MODES, "MIRROR_PAD", f"mode {mode} is not 0 (REFLECT) or 1 (SYMMETRIC)")
    return _define_pad("MIRROR_PAD", inputs, mode=MIRROR_MODES[mode])
