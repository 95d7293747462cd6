"""The GEMM path (1×1 CONV_2D, FULLY_CONNECTED with constant weights) on each accelerator device vs the
reference, with every candidate tile of the shape forced in turn (the register tiles of a CPU and the
work-group tiles of a GPU, both run on every device); and the tile tuner at preparation:
its choice is measured once, baked into the compiled model (a preparation from the compilation cache
does not tune again), and ``GPU_DRIVER_AUTOTUNE=0`` keeps the default."""
import tempfile

import numpy as np
import pytest

from gpu_driver.compiler import autotune
from gpu_driver.ops import gemm

from .harness import check_op, compare
from .models import F32, I32T, OP, Q8A, Const, In, Out, i32, single_op


def _conv1x1(rng, quant: bool, n: int, hw: tuple[int, int], ci: int, co: int, act: int):
    """A 1×1 stride-1 CONV_2D (explicit zero padding) as check_op arguments."""
    if quant:
        x, out = In(Q8A, (n, *hw, ci), 0.5, 127), Out(Q8A, 0.7, 100)
        w = Const(Q8A, rng.integers(0, 256, (co, 1, 1, ci)), 0.03, 120)
        b = Const(I32T, rng.integers(-800, 800, (co,)), 0.5 * 0.03)
    else:
        x, out = In(F32, (n, *hw, ci)), Out(F32)
        w, b = Const(F32, rng.uniform(-1, 1, (co, 1, 1, ci))), Const(F32, rng.uniform(-1, 1, (co,)))
    return [x, w, b, *[i32(0)] * 4, i32(1), i32(1), i32(act)], [out]


def _fc(rng, quant: bool, batch: int, size: int, units: int, act: int):
    if quant:
        x, out = In(Q8A, (batch, size), 0.5, 127), Out(Q8A, 0.9, 100)
        w = Const(Q8A, rng.integers(0, 256, (units, size)), 0.03, 120)
        b = Const(I32T, rng.integers(-800, 800, (units,)), 0.5 * 0.03)
    else:
        x, out = In(F32, (batch, size)), Out(F32)
        w, b = Const(F32, rng.uniform(-1, 1, (units, size))), Const(F32, rng.uniform(-1, 1, (units,)))
    return [x, w, b, i32(act)], [out]


# (m, k, n) of each product: rows not a multiple of 8 (7·7 = 49 pixels), columns no multiple of 16;
# 48 columns: a 32-column tile's second vector of the last block lies wholly past the output
SHAPES = {"conv": ((1, (7, 7), 24, 40), 49, 24, 40), "fc": ((3, 37, 21), 3, 37, 21),
          "conv48": ((1, (4, 4), 20, 48), 16, 20, 48)}


def _cases():
    for kind, (_, m, k, n) in SHAPES.items():
        for quant in (False, True):
            for lanes in (8, 16):  # the tile sets of AVX2- and AVX-512-sized register files
                # quant8 sums this short are exact in float: the float tiles apply
                for index in range(len(gemm.tiles(m, k, n, False, lanes))):
                    yield kind, quant, lanes, index


@pytest.mark.parametrize("kind,quant,lanes,index", list(_cases()))
def test_every_candidate_tile_matches_the_reference(accelerator, monkeypatch, kind, quant, lanes, index):
    counts = []

    def forced(key, count, flops, trial):
        counts.append(count)
        return index

    monkeypatch.setattr(autotune, "choose", forced)
    monkeypatch.setattr(accelerator.backend.tuning, "float_lanes", lanes)
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", False)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")   # compile: the lowering must run
    rng = np.random.default_rng(31)
    shape = SHAPES[kind][0]
    conv = kind.startswith("conv")
    args, outs = _conv1x1(rng, quant, *shape, act=3) if conv else _fc(rng, quant, *shape, act=1)
    check_op(accelerator, OP.CONV_2D if conv else OP.FULLY_CONNECTED, args, outs, rng,
             what=f"tile {gemm.tiles(*SHAPES[kind][1:], False, lanes)[index]}")
    assert counts == [len(gemm.tiles(*SHAPES[kind][1:], False, lanes))]


# the work-group tiles' shapes: a product of several groups both ways and slices of K with a partial last
GROUP_SHAPES = dict(SHAPES, conv_groups=((1, (10, 13), 70, 90), 130, 70, 90))


def _group_cases():
    for kind, (_, m, k, n) in GROUP_SHAPES.items():
        for quant in (False, True):
            for index in range(len(gemm.group_tiles(m, n, 1))):
                yield kind, quant, index


@pytest.mark.parametrize("kind,quant,index", list(_group_cases()))
def test_every_group_tile_matches_the_reference(accelerator, monkeypatch, kind, quant, index):
    """gemm.cl's work-group kernel (GROUP 1), the GPU's, forced on whatever device runs the tests."""
    counts = []

    def forced(key, count, flops, trial):
        counts.append(count)
        return index

    monkeypatch.setattr(autotune, "choose", forced)
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", True)
    monkeypatch.setattr(accelerator.backend.tuning, "compute_units", 1)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    rng = np.random.default_rng(37)
    shape, m, _, n = GROUP_SHAPES[kind]
    args, outs = _conv1x1(rng, quant, *shape, act=3) if kind != "fc" else _fc(rng, quant, *shape, act=1)
    check_op(accelerator, OP.CONV_2D if kind != "fc" else OP.FULLY_CONNECTED, args, outs, rng,
             what=f"group tile {gemm.group_tiles(m, n, 1)[index]}")
    assert counts == [len(gemm.group_tiles(m, n, 1))]


def test_group_tiles_cover_the_compute_units():
    T = gemm.Tile
    # 112²×64: the largest tile already gives 196 groups
    assert gemm.group_tiles(12544, 64, 132)[0] == T(64, 64, True)
    # 14²×384: the largest tile with at least 132 groups
    assert gemm.group_tiles(196, 384, 132)[0] == T(16, 32, True)
    assert gemm.group_tiles(784, 192, 100)[0] == T(32, 32, True)
    # 7²×1024: none reaches 132; the one of most groups
    assert gemm.group_tiles(49, 1024, 132) == [T(16, 32, True), T(64, 64, True), T(32, 64, True), T(32, 32, True)]
    # one row: taller tiles add only padding
    assert gemm.group_tiles(1, 1001, 132) == [T(16, 32, True), T(32, 64, True)]
    assert gemm.group_tiles(3, 21, 1) == [T(16, 32, True)]


@pytest.mark.parametrize("kind,group", [("gemm", False), ("gemm", True), ("conv", False)])
def test_quant8_sums_too_long_for_one_float_run(accelerator, monkeypatch, kind, group):
    """Quant8 sums too long for float (K·max|x − zx|·max|w − zw| ≥ 2^24): the GEMM adds exact float
    runs up in int (each run of float_chunk products; several runs, and a partial last one, here;
    in either kernel), the direct convolution takes int32 products; all exact.  The short sums above
    take one run."""
    monkeypatch.setattr(accelerator.backend.tuning, "group_gemm", group)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    rng = np.random.default_rng(41)
    x, out = In(Q8A, (2, 1100) if kind == "gemm" else (1, 5, 6, 130), 0.5, 127), Out(Q8A, 40.0, 100)
    if kind == "gemm":
        w = rng.integers(0, 256, (7, 1100))
        args = [x, Const(Q8A, w, 0.03, 120), Const(I32T, rng.integers(-800, 800, (7,)), 0.5 * 0.03), i32(1)]
        chunk = gemm.float_chunk(_requant(), "uchar", w.astype(np.int32) - 120)
        assert 1100 // 4 < chunk < 1100 and 1100 % chunk
    else:
        w = rng.integers(0, 256, (9, 3, 3, 130))
        args = [x, Const(Q8A, w, 0.03, 120), Const(I32T, rng.integers(-800, 800, (9,)), 0.5 * 0.03),
                *[i32(1)] * 4, i32(1), i32(1), i32(0)]
        assert gemm.mac_type(_requant(), "uchar", 9 * 130, w.astype(np.int32) - 120) == "int"
    check_op(accelerator, OP.FULLY_CONNECTED if kind == "gemm" else OP.CONV_2D, args, [out], rng, what=kind)


def _requant():
    from gpu_driver.ops.fused_activation import Requantization
    return Requantization(input_zero_point=127)


def test_tiles_default_first_and_valid():
    # 16 floats per register (AVX-512): two weight vectors per row first where there are 32 columns
    assert gemm.tiles(3136, 128, 128, False) == [gemm.Tile(8, 32), gemm.Tile(8, 16), gemm.Tile(12, 16)]
    assert gemm.tiles(49, 1024, 1024, False) == [gemm.Tile(7, 32), gemm.Tile(7, 16), gemm.Tile(8, 16),
                                                 gemm.Tile(12, 16)]
    assert gemm.tiles(1, 1024, 1001, False) == [gemm.Tile(1, 32), gemm.Tile(1, 16)]
    # 24 columns: a 32-column tile (its second vector half used) first
    assert gemm.tiles(3136, 144, 24, False) == [gemm.Tile(8, 32), gemm.Tile(8, 16), gemm.Tile(12, 16)]
    # a fused depthwise convolution's rows: one image row's pixels; 16 columns or fewer, taller blocks first
    assert gemm.tiles(3136, 96, 24, False, row_width=56) == [gemm.Tile(8, 32), gemm.Tile(8, 16)]
    assert gemm.tiles(12544, 32, 16, False, row_width=112) == [gemm.Tile(14, 16), gemm.Tile(8, 16)]
    assert gemm.tiles(960, 32, 16, False, row_width=48) == [gemm.Tile(16, 16), gemm.Tile(8, 16)]
    assert gemm.tiles(100, 32, 8, False, row_width=10) == [gemm.Tile(5, 8)]
    # three weight vectors where 48 divides the columns and 32 does not
    assert gemm.tiles(3136, 24, 144, False) == [gemm.Tile(8, 48), gemm.Tile(8, 32), gemm.Tile(8, 16),
                                                gemm.Tile(12, 16)]
    assert gemm.tiles(3136, 144, 144, False, row_width=56) == [gemm.Tile(8, 48), gemm.Tile(8, 32), gemm.Tile(8, 16)]
    assert gemm.tiles(3136, 24, 96, False)[0] == gemm.Tile(8, 32)
    assert gemm.tiles(1, 1024, 1001, True) == [gemm.Tile(1, 16)]
    assert gemm.tiles(49, 1024, 1024, True) == [gemm.Tile(4, 16), gemm.Tile(8, 16)]
    assert gemm.tiles(2, 5, 3, False) == [gemm.Tile(2, 3)]
    # a fused depthwise GEMM on a map of few row blocks shares each block's columns among work items,
    # where the depthwise products are at most 1/64 of the GEMM's
    assert gemm.depthwise_splits(7, 32, 9, 1024, 16) == 3        # 11, 11, 10 column blocks
    assert gemm.depthwise_splits(7, 19, 9, 600, 16) == 3         # 7, 7, 5
    assert gemm.depthwise_splits(7, 10, 9, 320, 16) == 1         # 320 < 64 × 9
    assert gemm.depthwise_splits(28, 16, 9, 1024, 16) == 1       # enough row blocks
    assert gemm.depthwise_splits(1, 2, 9, 1024, 16) == 2         # no more shares than column blocks
    # 8 floats per register (AVX2): 12 accumulators by default
    T = gemm.Tile
    assert gemm.tiles(3136, 128, 128, False, 8) == [T(6, 16), T(7, 16), T(4, 16), T(8, 8)]
    assert gemm.tiles(3136, 144, 24, False, 8) == [T(6, 16), T(7, 16), T(4, 16), T(8, 8)]
    assert gemm.tiles(3136, 24, 144, False, 8) == [T(6, 16), T(7, 16), T(4, 16), T(8, 8)]
    assert gemm.tiles(100, 64, 64, False, 8) == [T(6, 16), T(4, 16), T(8, 8)]
    assert gemm.tiles(49, 1024, 1024, True, 8) == [T(4, 8), T(2, 16), T(4, 16), T(8, 16)]


def _model(rng):
    args, outs = _conv1x1(rng, False, 1, (6, 5), 16, 24, act=0)
    return single_op(OP.CONV_2D, args, outs)


def _grid(prepared):
    """The global size of the model's one launch (column blocks, row blocks, 1)."""
    (launch,) = prepared.cache_payload().plan.kernels
    return launch.global_size


def _candidates(accelerator):
    """The candidate tiles of _model's 30×16·16×24 product on the device: a GPU's group tiles, else
    the register tiles of its vector width."""
    tuning = accelerator.backend.tuning
    if tuning.group_gemm:
        return gemm.group_tiles(30, 24, tuning.compute_units)
    return gemm.tiles(30, 16, 24, False, tuning.float_lanes)


def _grid_of(tile):
    if tile.group:
        return (-(-24 // tile.nb) * 16, -(-30 // tile.mb) * 16, 1)
    return (-(-24 // tile.nb), -(-30 // tile.mb), 1)


def test_choice_measured_once_and_reused_from_the_cache(accelerator, monkeypatch):
    monkeypatch.setattr(autotune, "MIN_FLOPS", 0)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    autotune.forget()
    model, ins = _model(np.random.default_rng(5))
    x = np.random.default_rng(6).uniform(-1, 1, ins[0].shape).astype(np.float32)
    files = [[tempfile.TemporaryFile("w+b")], [tempfile.TemporaryFile("w+b")]]
    token = b"t" * 32
    before = autotune.STATS.measured
    first = accelerator.prepare_model(model, model_cache=files[0], data_cache=files[1], token=token)
    assert autotune.STATS.measured == before + 1
    (choice,) = [v for k, v in autotune.STATS.choices.items() if k[2][0] == "gemm.cl"]
    # the same shape again in this process: the remembered choice, no new measurement
    accelerator.prepare_model(model)
    assert autotune.STATS.measured == before + 1
    autotune.forget()
    warm = accelerator.prepare_model_from_cache(files[0], files[1], token)
    assert autotune.STATS.measured == before + 1            # nothing tuned: the choice is in the binary
    assert _grid(warm) == _grid_of(_candidates(accelerator)[choice])
    expected, = first.execute([x])
    actual, = warm.execute([x])
    assert actual.tobytes() == expected.tobytes()
    compare(accelerator, model, [x], what="tuned 1x1")
    for f in files[0] + files[1]:
        f.close()


def test_private_cache_hit_does_not_tune(accelerator, monkeypatch, tmp_path):
    monkeypatch.setattr(autotune, "MIN_FLOPS", 0)
    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_DRIVER_PRIVATE_CACHE", raising=False)
    model, _ = _model(np.random.default_rng(8))
    autotune.forget()
    before = autotune.STATS.measured
    first = accelerator.prepare_model(model)
    assert autotune.STATS.measured == before + 1
    autotune.forget()
    again = accelerator.prepare_model(model)
    assert autotune.STATS.measured == before + 1
    assert _grid(again) == _grid(first)


def test_switch_off_keeps_the_default(accelerator, monkeypatch):
    monkeypatch.setattr(autotune, "MIN_FLOPS", 0)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    monkeypatch.setenv(autotune.ENV_SWITCH, "0")
    autotune.forget()
    model, _ = _model(np.random.default_rng(7))
    before = autotune.STATS.measured
    prepared = accelerator.prepare_model(model)
    assert autotune.STATS.measured == before
    assert _grid(prepared) == _grid_of(_candidates(accelerator)[0])
