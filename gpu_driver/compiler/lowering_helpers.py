"""Helpers of the operation lowerings: C types, kernel defines, the shapes of parallel work (no pyopencl/cupy here)."""
from __future__ import annotations

import math

import numpy as np

from ..hal.abbreviations import F16, F32, I32, Q8A, Q8AS  # noqa: F401  (re-exported to the lowerings)
from ..sizes import ceil_div, element_count as numel  # noqa: F401  (re-exported to the lowerings)
from .ir import C_TYPES, Work  # noqa: F401  (Work re-exported to the lowerings)

# (qmin, qmax) of the quantized types our kernels handle
QRANGE = {Q8A: (0, 255), Q8AS: (-128, 127)}


def float_io(info, prefix: str = "") -> dict:
    """``{prefix}LOAD`` / ``{prefix}STORE`` defines: the prelude macros that read a stored element as
    float and write a float back — LOAD_HALF/STORE_HALF for TENSOR_FLOAT16 (half is storage only),
    LOAD_PLAIN/STORE_PLAIN otherwise."""
    half = info.type == F16
    return {f"{prefix}LOAD": "LOAD_HALF" if half else "LOAD_PLAIN",
            f"{prefix}STORE": "STORE_HALF" if half else "STORE_PLAIN"}


def ctype(info) -> str:
    return C_TYPES[info.type]


def bits_ctype(info) -> str:
    """The element type of a kernel that only moves data: float16 as its raw 16 bits (ushort), so
    NaN payloads, infinities and signed zeros pass unchanged; ``ctype`` otherwise."""
    return "ushort" if info.type == F16 else ctype(info)


def known(*infos) -> bool:
    """Every tensor's shape fully known (lowering specialises on shapes)."""
    for t in infos:
        if t.shape is None or (not t.known_shape and 0 in t.shape):
            return False
    return True


def params_ok(ctx) -> bool:
    """The node was decoded (shapes and scalar arguments known at preparation)."""
    return ctx.node.params is not None


def scalars_constant(ctx, indexes) -> bool:
    """Every listed scalar input exists and is a constant (kernels bake scalars in as literals)."""
    n = len(ctx.node.inputs)
    for i in indexes:
        if i >= n:
            continue
        info = ctx.inputs[i]
        if info.omitted:
            continue
        if not ctx.is_constant(i):
            return False
    return True


def trailing_scalars_constant(ctx, first: int) -> bool:
    return scalars_constant(ctx, range(first, len(ctx.node.inputs)))


def types_are(infos, allowed) -> bool:
    return all(t.type in allowed for t in infos)


def fdef(x: float) -> float:
    """A float literal for a ${NAME} (float32-exact; infinities become INFINITY)."""
    return float(np.float32(x))


def float_act(lo: float, hi: float, nan_to_low: bool = False, hard_swish: bool = False) -> dict:
    """HAS_ACT/ACT_FMIN/ACT_FMAX/ACT_NAN_LOW/ACT_HARD_SWISH defines of a fused activation on a float
    output: the clamp [lo, hi], then a fused HARD_SWISH (FUSED_ACTIVATION in activations.h;
    ``nan_to_low``, ``hard_swish`` as in ActivationParams)."""
    return {"HAS_ACT": int(not (math.isinf(lo) and math.isinf(hi)) or hard_swish), "ACT_FMIN": fdef(lo),
            "ACT_FMAX": fdef(hi), "ACT_NAN_LOW": int(nan_to_low), "ACT_HARD_SWISH": int(hard_swish)}


def pad_dims(shape, rank: int = 4) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    return (1,) * (rank - len(shape)) + shape


def row_strides(shape) -> tuple[int, ...]:
    strides = []
    s = 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


def axis_split(shape, axis: int) -> tuple[int, int, int]:
    """(outer, axis_size, inner) element counts of a row-major tensor around ``axis``."""
    axis = axis % len(shape)
    return numel(shape[:axis]), int(shape[axis]), numel(shape[axis + 1:])


def act_defines(params, out) -> dict:
    """Fused-activation defines from ActivationParams (float_min/max, act_min/max) for output ``out``."""
    d = float_act(params.float_min, params.float_max, params.nan_to_low, params.hard_swish)
    d["ACT_MIN"], d["ACT_MAX"] = (params.act_min, params.act_max) if out.is_quantized else (0, 0)
    return d


def broadcast_strides(shape, out_shape) -> tuple[int, ...]:
    """Element strides of ``shape`` read at each index of the rank-4 ``out_shape`` (0 = broadcast axis)."""
    shape = pad_dims(shape)
    strides = row_strides(shape)
    return tuple(0 if (d == 1 and o != 1) else s for d, s, o in zip(shape, strides, out_shape))


def broadcast_defines(a, b, out_shape) -> dict:
    """Literals of a broadcasting binary kernel: COUNT, D0..D3 (the output as rank 4), SA0..SA3 /
    SB0..SB3 (element strides of A and B per output axis, 0 on a broadcast axis) and BCAST (0 when
    A, B and the output have one shape: read at the flat index)."""
    dims = pad_dims(out_shape)
    d = {"COUNT": numel(dims), "BCAST": int(not tuple(a.shape) == tuple(b.shape) == tuple(out_shape))}
    for name, shape in (("D", None), ("SA", a.shape), ("SB", b.shape)):
        d.update({f"{name}{k}": v for k, v in enumerate(dims if shape is None else broadcast_strides(shape, dims))})
    return d
