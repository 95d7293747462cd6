"""The packed-weights GEMM lowering shared by 1×1 CONV_2D (stride 1, no padding) and
FULLY_CONNECTED with constant weights: ``out[M, N] = act(bias + (a[M, K] − zp_a) · Wᵀ)``.

The register tile (MB rows × NB columns per work item) is chosen per
shape by gpu_driver.compiler.autotune among :func:`tiles`, the first being the default; the weights
are repacked for the chosen NB at preparation (``[N/NB][K][NB]``, zero-padded; the filter zero
point folded in for quant8), and every size is a literal of ``opencl_kernels/ops/gemm.cl``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler import autotune
from ..compiler.ir import TensorId, Work
from ..compiler.lowering_helpers import ceil_div
from .fused_activation import Requantization

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass(frozen=True)
class Tile:
    """MB rows × NB columns of the output per work item."""

    mb: int
    nb: int


def _width(n: int, most: int) -> int:
    """Columns per work item: ``most``, or the largest of 8, 4 that fits a narrower output."""
    return most if n >= most else 8 if n >= 8 else 4 if n >= 4 else n


def tiles(m: int, k: int, n: int, quant: bool) -> list[Tile]:
    """The candidate tiles of an M×K·K×N product, the default first.  Float: 8 × 16 (two 8-wide
    vectors of weights by 8 rows, 16 accumulator registers); then 16 × 8 when N is no multiple of 16
    (no padded columns), else a taller 12 × 16; and 7 × 16 or 6 × 16 when that divides M and 8 does
    not (no partial row block: 7×7 and 14×14 maps).  Quant8 (int32 accumulators, which spill beyond
    4 × 8 on PoCL): 4 × 8 and 4 × 16.  Tiles are clipped to the matrix; duplicates dropped."""
    if quant:
        shapes = [(4, 8), (4, 16)]
    else:
        shapes = [(8, 16), (16, 8) if n % 16 else (12, 16)]
        if m % 8:
            shapes += [(d, 16) for d in (7, 6) if m % d == 0][:1]
    found: list[Tile] = []
    for mb, nb in shapes:
        tile = Tile(min(mb, m), _width(n, nb))
        if tile not in found:
            found.append(tile)
    return found


def quant_table(quant: Requantization, count: int, padded: int) -> np.ndarray:
    """Per-column multipliers then shifts (int32), each zero-padded to ``padded`` entries."""
    m = np.zeros(padded, np.int32)
    s = np.zeros(padded, np.int32)
    m[:count] = quant.output_multiplier[:count]
    s[:count] = quant.output_shift[:count]
    return np.concatenate([m, s])


def _pack(weights: np.ndarray, bias: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights [N, K] → [N/NB][K][NB] and bias → [N/NB·NB], zero-padded."""
    n, k = weights.shape
    padded_n = ceil_div(n, nb) * nb
    w = np.zeros((padded_n, k), dtype=weights.dtype)
    w[:n] = weights
    b = np.zeros(padded_n, dtype=bias.dtype)
    b[:n] = bias
    return np.ascontiguousarray(w.reshape(padded_n // nb, nb, k).transpose(0, 2, 1)), b


def lower_gemm(ctx: LoweringContext, a: TensorId, out: TensorId, m: int, weights: np.ndarray, bias: np.ndarray,
               quant: Requantization | None, io_type: str, act: dict) -> None:
    """Emit ``out[m, N] = act(bias + (a − zp) · weightsᵀ)`` for constant ``weights`` [N, K] (float32,
    or int32 with the filter zero point already subtracted) and ``bias`` [N]; ``io_type`` is the C
    type of ``a`` and ``out``, ``act`` the activation defines (lowering_helpers.act_defines)."""
    n, k = weights.shape
    base = {"T": io_type, "ACC_T": "int" if quant is not None else "float", "QUANT": int(quant is not None),
            "M": m, "K": k, "N": n, "ZX": quant.input_zero_point if quant else 0,
            "ZO": quant.output_zero_point if quant else 0, **act}

    def specialise(tile: Tile):
        w, b = _pack(weights, bias, tile.nb)
        nblocks, mblocks = w.shape[0], ceil_div(m, tile.mb)
        d = dict(base, MB=tile.mb, NB=tile.nb, NBLOCKS=nblocks, MBLOCKS=mblocks)
        consts = [w, b] + ([quant_table(quant, n, nblocks * tile.nb)] if quant is not None else [])
        return d, consts, (nblocks, mblocks, 1)

    candidates = tiles(m, k, n, quant is not None)
    itemsize = 1 if quant is not None else 4

    def trial(i: int) -> autotune.Trial:
        d, consts, grid = specialise(candidates[i])
        return autotune.Trial("gemm.cl", d, [np.zeros(m * k * itemsize, np.uint8), *consts], m * n * itemsize,
                              grid, Work.REGISTER_TILES)

    chosen = candidates[autotune.choose(("gemm.cl", *sorted(base.items())), len(candidates), 2 * m * n * k, trial)]
    d, consts, grid = specialise(chosen)
    ctx.emit("gemm.cl", d, [a, *(ctx.constant(c) for c in consts)], [out], grid, Work.REGISTER_TILES)
