"""The packed-weights GEMM lowering shared by 1×1 CONV_2D (stride 1, no padding) and
FULLY_CONNECTED with constant weights: ``out[M, N] = act(bias + (a[M, K] − zp_a) · Wᵀ)``.

``opencl_kernels/ops/gemm.cl`` computes it two ways.  On a CPU device: one register tile (MB rows ×
NB columns) per work item, weights repacked to ``[N/NB][K][NB]``.  On a GPU (the backend's
``LaunchTuning.group_gemm``; GROUP 1): one MB × NB block per work group of 16 × 16 work items,
staging slices of both operands through local memory, weights repacked to ``[K][N']``.  The
tile is chosen per shape by gpu_driver.compiler.autotune among :func:`tiles` or :func:`group_tiles`,
the first being the default; weights are zero-padded to whole tiles (the filter zero point folded in
for quant8), and every size is a literal of the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler import autotune
from ..compiler.ir import TensorId, Work
from ..compiler.lowering_helpers import ceil_div, float_act
from .fused_activation import Requantization
from .window import Window2DParams, tile_columns

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass(frozen=True)
class Tile:
    """MB rows × NB columns of the output per work item; with ``group``, per work group
    (gemm.cl's GROUP 1: ir.GROUP_TILE_ITEMS work items, each holding MB/16 × NB/16 of them)."""

    mb: int
    nb: int
    group: bool = False


@dataclass(frozen=True)
class DepthwiseInput:
    """A float depthwise convolution (multiplier 1, NHWC) whose output is the GEMM's ``a``: the GEMM
    reads its input image and computes each row block's depthwise outputs itself (gemm.cl DW).
    ``params``: its DepthwiseConv2DParams (ops/conv.py); ``weights`` [KH, KW, C], ``bias`` [C] float32."""

    params: Window2DParams
    weights: np.ndarray
    bias: np.ndarray

    def defines(self) -> dict:
        """gemm.cl's DW_* literals: the depthwise's shape, window and activation; VW channels per FLOATV."""
        p = self.params
        vw = next(v for v in (16, 8, 4) if p.out_c % v == 0)
        d = {"DW": 1, "DW_VW": vw, "DW_CB": p.out_c // vw, "DW_H": p.in_h, "DW_W": p.in_w, "DW_OH": p.out_h,
             "DW_OW": p.out_w, "DW_KH": p.kernel_h, "DW_KW": p.kernel_w, "DW_SH": p.stride_h, "DW_SW": p.stride_w,
             "DW_DH": p.dilation_h, "DW_DW": p.dilation_w, "DW_PT": p.pad_top, "DW_PL": p.pad_left}
        d.update({f"DW_{k}": v for k, v in float_act(p.float_min, p.float_max, p.nan_to_low, p.hard_swish).items()})
        return d

    @property
    def image_elements(self) -> int:
        p = self.params
        return p.batch * p.in_h * p.in_w * p.in_c


#: gemm.cl's DW_* literals of a GEMM reading its ``a`` from memory
NO_DEPTHWISE = {"DW": 0, **{f"DW_{k}": 0 for k in ("VW", "CB", "H", "W", "OH", "OW", "KH", "KW", "SH", "SW", "DH",
                                                     "DW", "PT", "PL", "RW", "HAS_ACT", "ACT_FMIN", "ACT_FMAX",
                                                     "ACT_NAN_LOW", "ACT_HARD_SWISH", "SPLITS", "SPLIT_BLOCKS")}}


#: the work-group tiles, largest first: each of the 16 × 16 work items holds 4 × 4, 2 × 4, 2 × 2 or
#: 1 × 2 outputs
GROUP_SHAPES = ((64, 64), (32, 64), (32, 32), (16, 32))
#: the widest FLOATV of a register tile (gemm.cl: a tile row of more columns is several of them)
VECTOR_LANES_MOST = 16
#: the depth (products per output) of each slice a work group stages in local memory
GROUP_DEPTH = 16


#: the most depthwise outputs (floats, 32 KiB) a fused tile keeps in private memory, what 8 rows of
#: conv.DEPTHWISE_GEMM_MOST_CHANNELS take: a taller row block is offered only within it
DEPTHWISE_PRIVATE_FLOATS = 8 * 1024


def depthwise_row_block(width: int) -> int | None:
    """The rows (pixels) of a GEMM tile computing a depthwise convolution of an output ``width`` pixels
    wide in front of itself (gemm.cl DW): the first of 8, 7, 6, 5, 4 dividing it (a block lies in one
    image row), a whole row narrower than 4; else None (no such tile)."""
    if width < 4:
        return width
    return next((d for d in (8, 7, 6, 5, 4) if width % d == 0), None)


def depthwise_splits(mblocks: int, nblocks: int, taps: int, n: int, fewest: int) -> int:
    """Into how many shares a fused depthwise GEMM of ``n`` columns (in ``nblocks`` blocks) behind a
    depthwise convolution of ``taps`` taps divides each row block's columns, a work item per share
    and row block, each computing the block's depthwise outputs again: enough for ``fewest`` work
    items where there are fewer row blocks (a 7×7 map has 7 for 2 or more cores), in shares of equal
    size but the last, where the depthwise products are at most 1/64 of the GEMM's (PoCL, AMD Zen 5:
    7²×1024→1024 0.92-0.95x the time, MobileNet v1 0.98-1.00x; with 160 and 320 columns, MobileNet
    v2's, no faster: a depthwise output costs several times a GEMM product)."""
    if 64 * taps > n:
        return 1
    wanted = min(nblocks, ceil_div(fewest, mblocks))
    return ceil_div(nblocks, ceil_div(nblocks, wanted))


def _width(n: int, most: int) -> int:
    """Columns per work item: ``most``; for a narrower output, ``most`` still where it spans several
    vectors and more than one is used (17-31 columns in a 32-column tile), else the largest of 8, 4
    that fits."""
    if n >= most or (most > VECTOR_LANES_MOST and n > VECTOR_LANES_MOST):
        return most
    return 8 if n >= 8 else 4 if n >= 4 else n


def tiles(m: int, k: int, n: int, chunked: bool, lanes: int = 16, row_width: int = 0) -> list[Tile]:
    """The candidate tiles of an M×K·K×N product, the default first, for a device with ``lanes``
    floats per vector register.  16 (AVX-512, 32 registers): 8 × 16 (a 16-wide weight vector by 8
    rows, 8 accumulator registers) and a taller 12 × 16; when 8 does not divide M but 7 or 6 does
    (7×7 and 14×14 maps), that many rows first (no partial row block: measured 3-9 % faster on
    those layers); with N > 16, those rows × 32 columns come first (two weight vectors, twice the
    accumulators: 0.83-0.91x the time on 14×14 and 7×7 layers of 64-672 input channels, as fast
    with 16-24; with 24 columns, the second vector half used, 0.89x the time of × 16 on
    56²×144→24); where 48 divides N and 32 does not (144, 240, ...), those rows × 48 before them
    (three weight vectors, no padded columns: 0.96x the time of × 32 on 56²×24→144, 0.93x on a fused
    depthwise 56²×144→144, MobileNet v2 0.98-0.99x).  8 (AVX2, 16 registers; a 16-wide tile row
    takes two): 6 × 16 (12 accumulators), then 7 × 16 when 7 divides M, 4 × 16 and 8 × 8 (measured
    15-40 % faster than 8 × 16 on MobileNet's 1×1 layers, AMD EPYC).  ``row_width``: the rows are pixels of an image of that
    width and each block must lie in one image row (a fused depthwise convolution, gemm.cl DW):
    :func:`depthwise_row_block` rows × 48 (as above), × 32 and × 16 for N > 16 (24 columns: × 32
    0.91-0.93x the time of × 16 on MobileNet v2's 56²×144→24 and 112²×96→24 stride 2); for
    N ≤ 16, 14, 16 or 12 rows (what divides the width) × 16 first, their 14-16 accumulators
    keeping the FMA units busy (112²×32→16: 14 rows 0.89x the time of 8).  ``chunked`` sums
    (quant8, int totals beside the float sums: twice the registers): 4 × 16 and 8 × 16, with 8 lanes
    4 × 8 and 2 × 16 before those.  Tiles are clipped to the matrix; duplicates dropped."""
    narrow = lanes < 16
    three_vectors = not narrow and n % 48 == 0 and n % 32 != 0
    if row_width:
        rows = depthwise_row_block(row_width)
        if n > 16:
            shapes = [(rows, 48)] * three_vectors + [(rows, 32), (rows, 16)]
        else:
            tall = [d for d in (14, 16, 12) if row_width % d == 0 and d * k <= DEPTHWISE_PRIVATE_FLOATS]
            shapes = ([(tall[0], 16)] if tall else []) + [(rows, 16)]
    elif chunked:
        shapes = ([(4, 8), (2, 16)] if narrow else []) + [(4, 16), (8, 16)]
    elif narrow:
        shapes = [(6, 16)] + ([(7, 16)] if m % 7 == 0 else []) + [(4, 16), (8, 8)]
    else:
        rows = next((d for d in (8, 7, 6) if m % d == 0), 8)
        shapes = ([(rows, 48)] * three_vectors + ([(rows, 32)] if n > 16 else []) + ([(rows, 16)] if rows != 8 else [])
                  + [(8, 16), (12, 16)])
    found: list[Tile] = []
    for mb, nb in shapes:
        tile = Tile(min(mb, m), _width(n, nb))
        if tile not in found:
            found.append(tile)
    return found


def group_tiles(m: int, n: int, compute_units: int) -> list[Tile]:
    """The work-group tiles of an M×N output for a device of ``compute_units``, the default first: the
    largest whose groups are at least as many as the compute units (a GPU's multiprocessors), else the
    one of most groups; then the others, largest first.  A tile needing as many groups as a smaller one
    is dropped (it computes more padding for the same parallelism)."""
    shapes = [Tile(mb, nb, True) for mb, nb in GROUP_SHAPES]

    def groups(t: Tile) -> int:
        return ceil_div(m, t.mb) * ceil_div(n, t.nb)

    shapes = [t for t in shapes if not any(groups(o) == groups(t) and o.mb * o.nb < t.mb * t.nb for o in shapes)]
    default = next((t for t in shapes if groups(t) >= compute_units), shapes[-1])
    return [default] + [t for t in shapes if t != default]


def float_chunk(quant: Requantization, io_type: str, weights: np.ndarray) -> int:
    """How many products of centred quant8 inputs (C type ``io_type``, zero point from ``quant``) by
    the centred integer ``weights`` float sums exactly: every partial sum an integer of magnitude
    below 2^24 (at least 258 for 8-bit operands)."""
    zp = quant.input_zero_point
    lo, hi = (-128, 127) if io_type == "char" else (0, 255)
    largest = max(hi - zp, zp - lo) * int(np.abs(weights).max(initial=0))
    return (2 ** 24 - 1) // largest if largest else 2 ** 24


def mac_type(quant: Requantization | None, io_type: str, terms: int, weights: np.ndarray) -> str:
    """The C type of the products and their sum for a sum of ``terms`` products: "float" for float
    models, and for quant8 too when :func:`float_chunk` covers them all (exact, and CPUs multiply
    floats faster than int32); else "int"."""
    if quant is None or terms <= float_chunk(quant, io_type, weights):
        return "float"
    return "int"


def quant_table(quant: Requantization, count: int, padded: int) -> np.ndarray:
    """Per-column multipliers then shifts (int32), each zero-padded to ``padded`` entries."""
    m = np.zeros(padded, np.int32)
    s = np.zeros(padded, np.int32)
    m[:count] = quant.output_multiplier[:count]
    s[:count] = quant.output_shift[:count]
    return np.concatenate([m, s])


def multiplier_defines(quant: Requantization | None) -> dict:
    """PER_CHANNEL, and the per-tensor requantisation MULT and SHIFT as literals (a kernel that knows
    the shift specialises MBQM on it: conv_requantize.cl measured 2.5x cheaper than with the table)."""
    per_channel = quant is not None and quant.per_channel
    return {"PER_CHANNEL": int(per_channel), "MULT": quant.output_multiplier[0] if quant else 0,
            "SHIFT": quant.output_shift[0] if quant else 0}


def centred_input(ctx: LoweringContext, a: TensorId, count: int, io_type: str, quant: Requantization | None,
                  mac: str) -> tuple[TensorId, str, int]:
    """(tensor, C type, zero point) the products read: for quant8 summed in float, the ``count``
    input elements centred once into a float scratch tensor; else ``a``.  Where ``a`` was written by
    a quantized convolution's requantisation, that launch also writes the centred copy (one launch
    and one pass over the data fewer); otherwise ``conv_centre.cl`` makes it."""
    if quant is None or mac != "float":
        return a, io_type, quant.input_zero_point if quant is not None else 0
    producer = _requantization_of(ctx, a, count)
    if producer is not None:
        if not producer.defines["CENTRED"]:
            producer.defines["CENTRED"] = 1
            producer.outputs.append(ctx.scratch(np.float32, count))
        return producer.outputs[1], "float", 0
    centred = ctx.scratch(np.float32, count)
    ctx.emit_elements("conv_centre.cl", {"T": io_type, "ZX": quant.input_zero_point}, [a], [centred], count)
    return centred, "float", 0


def _requantization_of(ctx: LoweringContext, a: TensorId, count: int):
    """The launch of this subgraph that requantized all ``count`` elements of ``a`` last (a
    ``conv_requantize.cl``, or a ``gemm.cl`` requantizing in its epilogue), if ``a``'s last writer
    is one: given a CENTRED output, it writes ``a`` centred on its zero point too."""
    for kernel in reversed(ctx.lowered.kernels):
        if a in kernel.outputs:
            d = kernel.defines
            whole = (d["COUNT"] == count if kernel.template == "conv_requantize.cl"
                     else kernel.template == "gemm.cl" and d["REQUANT"] and d["M"] * d["N"] == count)
            return kernel if whole and kernel.outputs[0] == a else None
    return None


def emit_with_requantization(ctx: LoweringContext, template: str, defines: dict, inputs: list[TensorId],
                             global_size: tuple[int, ...], work: Work, quant: Requantization | None,
                             rows: int, channels: int, act: dict, io_type: str) -> None:
    """Emit ``template`` writing the node's output 0 (C type ``io_type``); for quant8 (``quant``) it
    writes the int32 sums ([rows][channels], a scratch tensor) and ``conv_requantize.cl``
    requantizes them per channel into the output (there MBQM vectorises across work items); a
    consumer that centres that output gets the launch to write it centred too (:func:`centred_input`).
    Sets ``OUT_T``."""
    if quant is None:
        ctx.emit(template, dict(defines, OUT_T=io_type), inputs, [ctx.output(0)], global_size, work)
        return
    count = rows * channels
    sums = ctx.scratch(np.int32, count)
    ctx.emit(template, dict(defines, OUT_T="int"), inputs, [sums], global_size, work)
    ctx.emit_elements("conv_requantize.cl", {"T": io_type, "C": channels, "CP": channels, **multiplier_defines(quant),
                                             "ZO": quant.output_zero_point, "ACT_MIN": act["ACT_MIN"],
                                             "ACT_MAX": act["ACT_MAX"], "CENTRED": 0},
                      [sums, ctx.constant(quant_table(quant, channels, channels))], [ctx.output(0)], count)


def _pack(weights: np.ndarray, bias: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights [N, K] → [N/NB][K][NB] and bias → [N/NB·NB], zero-padded."""
    n, k = weights.shape
    padded_n = ceil_div(n, nb) * nb
    w = np.zeros((padded_n, k), dtype=weights.dtype)
    w[:n] = weights
    b = np.zeros(padded_n, dtype=bias.dtype)
    b[:n] = bias
    return np.ascontiguousarray(w.reshape(padded_n // nb, nb, k).transpose(0, 2, 1)), b


def _pack_columns(weights: np.ndarray, bias: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights [N, K] → [K][N'] and bias → [N'], N' = N rounded up to a multiple of ``nb``, zero-padded."""
    n, k = weights.shape
    padded_n = ceil_div(n, nb) * nb
    w = np.zeros((k, padded_n), dtype=weights.dtype)
    w[:, :n] = weights.T
    b = np.zeros(padded_n, dtype=bias.dtype)
    b[:n] = bias
    return w, b


def lower_gemm(ctx: LoweringContext, a: TensorId, m: int, weights: np.ndarray, bias: np.ndarray,
               quant: Requantization | None, io_type: str, act: dict,
               depthwise: DepthwiseInput | None = None) -> None:
    """Emit the node's output 0, ``[m, N] = act(bias + (a − zp) · weightsᵀ)``, for constant ``weights``
    [N, K] (float32, or int32 with the filter zero point already subtracted) and ``bias`` [N];
    ``io_type`` is the C type of ``a`` and the output, ``act`` the activation defines
    (lowering_helpers.act_defines).  Quant8 inputs are centred once into floats, and the products
    summed in float in runs short enough to be exact (:func:`float_chunk`), the runs added up in int;
    a register tile requantizes them in its epilogue (quant8 MobileNet v2 0.96x its time with
    conv_requantize.cl after it, v1 the same), a work group's go through conv_requantize.cl.
    With ``residual`` set in the node's params (a fused ADD, float only), the node's last input, a
    float [m, N] tensor, is added to the result before the activation; a residual of fewer channels
    (a folded zero channel PAD, compiler/fusion.py) adds zeros past its own.  With ``input_scale``
    (a fused MUL), the node's input before the residual, a float vector [K], scales column k of
    ``a`` (each weight row k is multiplied by it in the kernel).  With ``prelu`` (a fused PRELU), the
    node's last input, a float vector [N], multiplies each output below 0 after the activation.
    With ``depthwise`` (float, register tiles only), ``a`` is that depthwise convolution's input
    image: a work item computes its MB rows of the depthwise output, every channel, into private
    memory, then every column block of the GEMM from them (one launch, the depthwise output never
    stored); its filter and bias are the node's last two inputs."""
    n, k = weights.shape
    chunk = min(k, float_chunk(quant, io_type, weights)) if quant is not None else k
    weights = weights.astype(np.float32)
    a, _, _ = centred_input(ctx, a, m * k, io_type, quant, "float")
    # the fused inputs after the operation's own: input scale, residual, PReLU alpha (those present)
    residual, prelu = int(ctx.params.residual), int(ctx.params.prelu)
    at_alpha = len(ctx.node.inputs) - 1 - (2 if depthwise is not None else 0)
    at_residual = at_alpha - prelu
    at_scale = at_residual - residual
    base = {"ACC_T": "int" if quant is not None else "float", "QUANT": int(quant is not None), "M": m, "K": k,
            "N": n, "KC": chunk, "CHUNKED": int(chunk < k), "RESIDUAL": residual, "BK": GROUP_DEPTH,
            "SCALE": int(ctx.params.input_scale), "PRELU": prelu,
            "RES_C": ctx.inputs[at_residual].shape[-1] if residual else n, "REQUANT": 0, "CENTRED": 0, "CP": n,
            "ZO": quant.output_zero_point if quant is not None else 0, **multiplier_defines(quant), **act,
            **(depthwise.defines() if depthwise is not None else NO_DEPTHWISE)}
    fused = [(at_scale, k, 1.0)] * base["SCALE"] + [(at_residual, m * base["RES_C"], 0.0)] * residual \
        + [(at_alpha, n, 1.0)] * prelu   # (input, elements, the value the autotuner's trials fill it with)
    extra = [ctx.input(i) for i, _, _ in fused]

    def specialise(tile: Tile):
        """(defines, packed constants, global size, work) of ``tile``."""
        mblocks = ceil_div(m, tile.mb)
        if tile.group:
            w, b = _pack_columns(weights, bias, tile.nb)
            nblocks = w.shape[1] // tile.nb
            d = dict(base, GROUP=1, MB=tile.mb, NB=tile.nb, NV=1, NBLOCKS=nblocks, MBLOCKS=mblocks)
            return d, [w, b], (nblocks * 16, mblocks * 16, 1), Work.GROUP_TILES
        # gemm.cl's FLOATV: a tile narrower than 4 columns runs on 4 lanes; a wider one is NV vectors
        lanes = min(max(tile.nb, 4), VECTOR_LANES_MOST)
        nv = max(tile.nb // lanes, 1)
        w, b = _pack(weights, bias, lanes * nv)
        nblocks = w.shape[0]
        d = dict(base, GROUP=0, MB=tile.mb, NB=lanes, NV=nv, NBLOCKS=nblocks, MBLOCKS=mblocks)
        if depthwise is not None:   # a work item per row block (and share of its column blocks)
            p = depthwise.params
            splits = depthwise_splits(mblocks, nblocks, p.kernel_h * p.kernel_w, n, target.fewest_groups)
            d.update(DW_RW=tile_columns(p, tile.mb), DW_SPLITS=splits,
                     DW_SPLIT_BLOCKS=ceil_div(nblocks, splits))
            return d, [depthwise.weights, depthwise.bias, w, b], (1, mblocks * splits, 1), Work.REGISTER_TILES
        return d, [w, b], (nblocks, mblocks, 1), Work.REGISTER_TILES

    target = autotune.target_tuning()
    if depthwise is not None and (target.group_gemm or quant is not None):
        raise ValueError("a depthwise convolution fuses only into a float GEMM of register tiles")
    if target.group_gemm:
        candidates = group_tiles(m, n, target.compute_units)
    else:
        candidates = tiles(m, k, n, chunk < k, target.float_lanes,
                           depthwise.params.out_w if depthwise is not None else 0)

    def trial(i: int) -> autotune.Trial:
        d, consts, grid, work = specialise(candidates[i])
        d["OUT_T"] = "int" if quant is not None else io_type
        image = depthwise.image_elements if depthwise is not None else m * k
        return autotune.Trial("gemm.cl", d, [np.zeros(image, np.float32), *consts,
                                             *(np.full(size, fill, np.float32) for _, size, fill in fused)],
                              m * n * 4, grid, work)

    key = ("gemm.cl", candidates[0].group, *sorted(base.items()))
    flops = 2 * m * k * (n + (depthwise.params.kernel_h * depthwise.params.kernel_w if depthwise is not None else 0))
    chosen = candidates[autotune.choose(key, len(candidates), flops, trial)]
    d, consts, grid, work = specialise(chosen)
    if quant is not None and not chosen.group:  # a register tile requantizes in its epilogue
        d.update({"REQUANT": 1, "OUT_T": io_type})
        ctx.emit("gemm.cl", d, [a, *(ctx.constant(c) for c in consts), ctx.constant(quant_table(quant, n, n))],
                 [ctx.output(0)], grid, work)
        return
    emit_with_requantization(ctx, "gemm.cl", d, [a, *(ctx.constant(c) for c in consts), *extra], grid,
                             work, quant, m, n, act, io_type)
