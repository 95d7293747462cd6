"""Every kernel template compiles through NVRTC with the CUDA prelude: a hand-picked set of
specialisations (float32 and quant8 of every HAL 1.0 op, every LSTM option group, every conv path,
an upsampling TRANSPOSE_CONV_2D, LSH_PROJECTION's FarmHash kernel; lowered for a CPU and for the
CUDA backend, whose GEMM runs in work groups) for sm_80 and sm_90, and the
kernels the supported AOSP conformance cases lower to (every template on disk is among them): a
sample of the cases by default, every case in the slow tier.  Needs only NVRTC, no GPU."""
import itertools
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

from .ops.models import F32, I32T, OP, OT, Q8A, Const, In, NoValue, Out, Scalar, f32, i32, single_op  # noqa: E402

from gpu_driver.backends.cuda import CudaCompiler, CudaTuning, compile_source  # noqa: E402
from gpu_driver.compiler import autotune  # noqa: E402
from gpu_driver.compiler.codegen import assign_names, generate  # noqa: E402
from gpu_driver.compiler.pipeline import lower, prepare_graph  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _models():
    rng = np.random.default_rng(0)
    t = lambda *s: Const(F32, rng.uniform(-1, 1, s))  # noqa: E731
    for q in (False, True):
        T, o = (Q8A, Out(Q8A, 0.5, 10)) if q else (F32, Out(F32))
        x4 = In(T, (2, 5, 6, 4), 0.1 if q else 0.0, 7 if q else 0)
        for op in (OP.ADD, OP.MUL):
            yield single_op(op, [In(T, (2, 1, 3), 0.1 if q else 0, 1 if q else 0),
                                 In(T, (4, 3), 0.2 if q else 0, 2 if q else 0), i32(1)], [o])[0]
            yield single_op(op, [x4, x4, i32(0)], [o])[0]
            if not q:  # int32 arithmetic (HAL 1.3), once
                yield single_op(op, [In(I32T, (2, 1, 3)), In(I32T, (4, 3)), i32(0)], [Out(I32T)])[0]
        for op in (OP.RELU, OP.RELU1, OP.RELU6):
            yield single_op(op, [x4], [Out(T, *((0.1, 7) if q else ()))])[0]
        yield single_op(OP.LOGISTIC, [x4], [Out(Q8A, 1 / 256, 0) if q else Out(F32)])[0]
        yield single_op(OP.TANH, [x4], [Out(Q8A, 1 / 128, 128) if q else Out(F32)])[0]
        yield single_op(OP.SOFTMAX, [x4, f32(0.5), i32(1)], [Out(Q8A, 1 / 256, 0) if q else Out(F32)])[0]
        w = Const(Q8A, rng.integers(0, 256, (9, 3, 3, 4)), 0.02, 3) if q else t(9, 3, 3, 4)
        b = Const(I32T, rng.integers(-9, 9, (9,)), 0.002) if q else t(9)
        yield single_op(OP.CONV_2D, [x4, w, b, i32(1), i32(2), i32(2), i32(3)], [o])[0]
        w1 = Const(Q8A, rng.integers(0, 256, (40, 1, 1, 4)), 0.02, 3) if q else t(40, 1, 1, 4)
        b1 = Const(I32T, rng.integers(-9, 9, (40,)), 0.002) if q else t(40)
        yield single_op(OP.CONV_2D, [x4, w1, b1, i32(2), i32(1), i32(1), i32(0)], [o])[0]
        wd = Const(Q8A, rng.integers(0, 256, (1, 3, 3, 8)), 0.02, 3) if q else t(1, 3, 3, 8)
        bd = Const(I32T, rng.integers(-9, 9, (8,)), 0.002) if q else t(8)
        yield single_op(OP.DEPTHWISE_CONV_2D, [x4, wd, bd, i32(1), i32(1), i32(1), i32(2), i32(3)], [o])[0]
        for op in (OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D) + (() if q else (OP.L2_POOL_2D,)):
            yield single_op(op, [x4, i32(1), i32(2), i32(2), i32(3), i32(3), i32(1)], [Out(T, *((0.1, 7) if q else ()))])[0]
        wf = Const(Q8A, rng.integers(0, 256, (5, 4)), 0.02, 3) if q else t(5, 4)
        bf = Const(I32T, rng.integers(-9, 9, (5,)), 0.002) if q else t(5)
        yield single_op(OP.FULLY_CONNECTED, [x4, wf, bf, i32(0)], [o])[0]
        yield single_op(OP.CONCATENATION, [x4, In(T, (2, 5, 6, 4), 0.3 if q else 0, 1 if q else 0), i32(3)], [o])[0]
        yield single_op(OP.DEPTH_TO_SPACE, [x4, i32(2)], [Out(T, *((0.1, 7) if q else ()))])[0]
        yield single_op(OP.SPACE_TO_DEPTH, [In(T, (1, 4, 4, 2), *((0.1, 7) if q else ())), i32(2)],
                        [Out(T, *((0.1, 7) if q else ()))])[0]
        yield single_op(OP.RESIZE_BILINEAR, [x4, i32(9), i32(7), Scalar(OT.BOOL, False), Scalar(OT.BOOL, False),
                                             Scalar(OT.BOOL, True)], [Out(T, *((0.1, 7) if q else ()))])[0]
        yield single_op(OP.L2_NORMALIZATION, [x4], [Out(Q8A, 1 / 128, 128) if q else Out(F32)])[0]
        yield single_op(OP.HASHTABLE_LOOKUP, [In(I32T, (3,)), In(I32T, (5,)), In(T, (5, 2), *((0.1, 7) if q else ()))],
                        [Out(T, *((0.1, 7) if q else ())), Out(Q8A, 1.0, 0)])[0]
        yield single_op(OP.EMBEDDING_LOOKUP, [Const(I32T, [1, 0]), In(T, (5, 2), *((0.1, 7) if q else ()))],
                        [Out(T, *((0.1, 7) if q else ()))])[0]
    yield single_op(OP.FLOOR, [In(F32, (3, 4))], [Out(F32)])[0]
    # an upsampling TRANSPOSE_CONV_2D (stride = kernel, one output channel): conv_transpose_upsample.cl
    yield single_op(OP.TRANSPOSE_CONV_2D, [In(F32, (1, 3, 4, 5)), t(1, 2, 2, 5), t(1), i32(0), i32(0), i32(0), i32(0),
                                           i32(2), i32(2), i32(0), Scalar(OT.BOOL, False)], [Out(F32)])[0]
    yield single_op(OP.DEQUANTIZE, [In(Q8A, (3, 4), 0.1, 3)], [Out(F32)])[0]
    yield single_op(OP.LOCAL_RESPONSE_NORMALIZATION, [In(F32, (1, 2, 2, 6)), i32(2), f32(1), f32(0.5), f32(0.75)],
                    [Out(F32)])[0]
    yield single_op(OP.RNN, [In(F32, (2, 3)), t(4, 3), t(4, 4), t(4), In(F32, (2, 4)), i32(4)], [Out(F32), Out(F32)])[0]
    yield single_op(OP.SVDF, [In(F32, (2, 3)), t(4, 3), t(4, 3), t(2), In(F32, (2, 12)), i32(2), i32(1)],
                    [Out(F32), Out(F32)])[0]
    for cifg, peep, proj, ln in itertools.product([False, True], repeat=4):
        b, i, u = 2, 3, 4
        o = 3 if proj else u
        n = NoValue()
        args = [In(F32, (b, i)), n if cifg else t(u, i), t(u, i), t(u, i), t(u, i),
                n if cifg else t(u, o), t(u, o), t(u, o), t(u, o),
                t(u) if peep and not cifg else n, t(u) if peep else n, t(u) if peep else n,
                n if cifg else t(u), t(u), t(u), t(u), t(o, u) if proj else n, t(o) if proj else n,
                In(F32, (b, o)), In(F32, (b, u)), i32(4), f32(0.5), f32(0.5)]
        if ln:
            args += [n if cifg else t(u), t(u), t(u), t(u)]
        yield single_op(OP.LSTM, args, [Out(F32)] * 4)[0]
    yield from _lsh_models(rng)
    yield _residual_model(rng)
    yield _residual_model(rng, shortcut_channels=12)
    yield _quant8_chain_model(rng)
    yield from _prelu_models(rng)
    yield _depthwise_gemm_model(rng)
    # whole-image pools summed in row chunks (pooling_global.cl, both stages): MAX with RELU6, float16 MEAN
    yield single_op(OP.MAX_POOL_2D, [In(F32, (1, 64, 32, 16)), *(i32(v) for v in (0, 0, 0, 0, 1, 1, 32, 64, 3))],
                    [Out(F32)])[0]
    yield single_op(OP.MEAN, [In(OT.TENSOR_FLOAT16, (1, 64, 32, 16)), Const(I32T, [1, 2]), i32(0)],
                    [Out(OT.TENSOR_FLOAT16)])[0]


def _prelu_models(rng):
    """A PRELU by a channel vector after a 1×1 CONV_2D with a residual ADD (gemm.cl PRELU) and after a
    3×3 CONV_2D of 20 channels (conv.cl PRELU, a vector block and a partial one): both join the
    convolution's epilogue."""
    import gpu_driver as gd
    for k, cout, residual in ((1, 16, True), (3, 20, False)):
        b = gd.ModelBuilder()
        x = b.add_input(OT.TENSOR_FLOAT32, [1, 3, 4, 8])
        c = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, cout])
        b.add_operation(OP.CONV_2D, [x, b.add_constant(OT.TENSOR_FLOAT32, [cout, k, k, 8],
                                                       rng.uniform(-1, 1, (cout, k, k, 8))),
                                     b.add_constant(OT.TENSOR_FLOAT32, [cout], rng.uniform(-1, 1, cout)),
                                     *(b.add_scalar(OT.INT32, v) for v in (1, 1, 1, 0))], [c])
        if residual:
            summed = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, cout])
            b.add_operation(OP.ADD, [c, b.add_input(OT.TENSOR_FLOAT32, [1, 3, 4, cout]), b.add_scalar(OT.INT32, 0)],
                            [summed])
            c = summed
        y = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, cout])
        b.add_operation(OP.PRELU, [c, b.add_constant(OT.TENSOR_FLOAT32, [1, 1, cout], rng.uniform(-1, 1, (1, 1, cout)))],
                        [y])
        b.set_outputs([y])
        model = b.finish()
        assert [getattr(n.params, "prelu", False) for n in prepare_graph(model).nodes] == [True]
        yield model


def _depthwise_gemm_model(rng):
    """3×3 DEPTHWISE_CONV_2D (RELU6) read by a 1×1 CONV_2D: lowered for a CPU, one gemm.cl computing
    the depthwise outputs of its rows itself (DW); for the GPU, the two kernels."""
    import gpu_driver as gd
    b = gd.ModelBuilder()
    x = b.add_input(OT.TENSOR_FLOAT32, [1, 4, 8, 16])
    d = b.add_operand(OT.TENSOR_FLOAT32, [1, 4, 8, 16])
    b.add_operation(OP.DEPTHWISE_CONV_2D, [x, b.add_constant(OT.TENSOR_FLOAT32, [1, 3, 3, 16], rng.uniform(-1, 1, (1, 3, 3, 16))),
                                           b.add_constant(OT.TENSOR_FLOAT32, [16], rng.uniform(-1, 1, 16)),
                                           *(b.add_scalar(OT.INT32, v) for v in (1, 1, 1, 1, 3))], [d])
    y = b.add_operand(OT.TENSOR_FLOAT32, [1, 4, 8, 24])
    b.add_operation(OP.CONV_2D, [d, b.add_constant(OT.TENSOR_FLOAT32, [24, 1, 1, 16], rng.uniform(-1, 1, (24, 1, 1, 16))),
                                 b.add_constant(OT.TENSOR_FLOAT32, [24], rng.uniform(-1, 1, 24)),
                                 *(b.add_scalar(OT.INT32, v) for v in (1, 1, 1, 0))], [y])
    b.set_outputs([y])
    model = b.finish()
    cpu = not autotune.target_tuning().group_gemm
    assert [n.params.depthwise is not None for n in prepare_graph(model).nodes if n.type == OP.CONV_2D] == [cpu]
    return model


def _residual_model(rng, shortcut_channels: int = 16):
    """1×1 CONV_2D then ADD of a model input, RELU6: the ADD joins the GEMM's epilogue (RESIDUAL); with
    fewer ``shortcut_channels``, the input zero-padded to 16 channels by a PAD that folds into it."""
    import gpu_driver as gd
    b = gd.ModelBuilder()
    x = b.add_input(OT.TENSOR_FLOAT32, [1, 3, 4, 8])
    r = b.add_input(OT.TENSOR_FLOAT32, [1, 3, 4, shortcut_channels])
    if shortcut_channels < 16:
        padded = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, 16])
        b.add_operation(OP.PAD, [r, b.add_constant(I32T, [4, 2], np.array([[0, 0]] * 3 + [[0, 16 - shortcut_channels]],
                                                                           np.int32))], [padded])
        r = padded
    c = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, 16])
    b.add_operation(OP.CONV_2D, [x, b.add_constant(OT.TENSOR_FLOAT32, [16, 1, 1, 8], rng.uniform(-1, 1, (16, 1, 1, 8))),
                                 b.add_constant(OT.TENSOR_FLOAT32, [16], rng.uniform(-1, 1, 16)),
                                 *(b.add_scalar(OT.INT32, v) for v in (1, 1, 1, 0))], [c])
    y = b.add_operand(OT.TENSOR_FLOAT32, [1, 3, 4, 16])
    b.add_operation(OP.ADD, [c, r, b.add_scalar(OT.INT32, 3)], [y])
    b.set_outputs([y])
    model = b.finish()
    assert any(getattr(n.params, "residual", False) for n in prepare_graph(model).nodes)
    return model


def _quant8_chain_model(rng):
    """quant8 1×1 CONV_2D then 3×3 CONV_2D: the GEMM requantizes in its epilogue and writes its output
    centred for the second convolution (gemm.cl REQUANT, CENTRED)."""
    import gpu_driver as gd
    b = gd.ModelBuilder()
    x = b.add_input(Q8A, [1, 5, 6, 8], scale=0.1, zero_point=7)
    h = b.add_operand(Q8A, [1, 5, 6, 16], scale=0.2, zero_point=3)
    y = b.add_operand(Q8A, [1, 5, 6, 4], scale=0.3, zero_point=9)
    for src, dst, cin, cout, k, scale in ((x, h, 8, 16, 1, 0.1), (h, y, 16, 4, 3, 0.2)):
        w = b.add_constant(Q8A, [cout, k, k, cin], rng.integers(0, 256, (cout, k, k, cin)).astype(np.uint8),
                           scale=0.05, zero_point=120)
        bias = b.add_constant(I32T, [cout], rng.integers(-100, 100, cout).astype(np.int32), scale=scale * 0.05)
        b.add_operation(OP.CONV_2D, [src, w, bias, *(b.add_scalar(OT.INT32, v) for v in (1, 1, 1, 3))], [dst])
    b.set_outputs([y])
    return b.finish()


def _lsh_models(rng):
    """LSH_PROJECTION (lsh.cl): both stages, F32/F16 hash, weighted DENSE, every FarmHash length branch."""
    F16 = OT.TENSOR_FLOAT16
    for lsh_type, htype, item in ((2, F32, In(F32, (3, 2))), (2, F16, In(Q8A, (2, 13), 1.0, 0)),
                                  (3, F32, In(I32T, (2, 5))), (1, F32, In(Q8A, (4, 50), 1.0, 0)),
                                  (3, F16, In(F16, (2, 150)))):
        weight = In(htype, (item.shape[0],)) if lsh_type == 2 else NoValue(htype)
        yield single_op(OP.LSH_PROJECTION, [Const(htype, rng.normal(size=(3, 7)).astype(np.float32)), item,
                                            weight, i32(lsh_type)], [Out(I32T)])[0]


def _conv_register_tile_kernels() -> list:
    """conv.cl's vector tiles as a CPU of one-register 16-lane vectors lowers them, each candidate
    forced in turn (8 and 4 pixels; one and two 16-channel vectors per pixel): a 3-channel first layer
    of 32 channels (ROW_CACHE) and a 3×3 layer of 20 channels with a PReLU (a partial vector)."""
    rng = np.random.default_rng(5)
    first = single_op(OP.CONV_2D, [In(F32, (1, 9, 18, 3)), Const(F32, rng.uniform(-1, 1, (32, 3, 3, 3))),
                                   Const(F32, rng.uniform(-1, 1, 32)), i32(1), i32(2), i32(2), i32(3)], [Out(F32)])[0]
    tuning = CudaTuning(132)
    tuning.group_gemm, tuning.one_register_vectors = False, True
    kernels, choose = [], autotune.choose
    try:
        for candidate in range(4):
            autotune.choose = lambda key, count, flops, trial: min(candidate, count - 1)  # noqa: B023
            with autotune.lowering_for(tuning):
                kernels += [k for model in (first, *_prelu_models(rng)) for k in lower(prepare_graph(model)).kernels
                            if k.template == "conv.cl"]
    finally:
        autotune.choose = choose
    assert {k.defines["CV"] for k in kernels} == {1, 2}
    return kernels


def _sources():
    """One CUDA program (prelude + every distinct kernel instance) of all models, lowered as for a CPU
    and as for this GPU backend (its work-group GEMM), and their templates."""
    kernels = [k for model in _models() for k in lower(prepare_graph(model)).kernels]
    with autotune.lowering_for(CudaTuning(132)):
        kernels += [k for model in _models() for k in lower(prepare_graph(model)).kernels]
    kernels += _conv_register_tile_kernels()
    names = assign_names(kernels)
    fixed = {name: (8, 4, 1) for name in names[::2]}  # every other kernel declares its local size
    return generate(kernels, CudaCompiler().prelude, fixed), {k.template for k in kernels}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_compiles_to_cubin(arch):
    src, _ = _sources()
    cubin = compile_source(src, arch, name="hal10_ops.cu")  # DriverError with the NVRTC log on failure
    assert cubin[:4] == b"\x7fELF"


# ---- every kernel the AOSP conformance cases lower to --------------------------------------------------

#: distinct specialisations compiled per template (spread over the cases), to bound NVRTC time
PER_TEMPLATE = 24


def _data_dependent_kernels(model):
    """The launches of the model's operations with data-dependent output sizes (run as steps of their
    own by accelerator.control_flow, not through the compiler), for its declared operands."""
    from gpu_driver.compiler.ir import KernelInstance
    from gpu_driver.graph import operand_info
    from gpu_driver.ops.catalog import lookup

    for op in model.main.operations:
        entry = lookup(op.type)
        if entry is None or entry.data_dependent is None:
            continue
        ins = [operand_info(model, model.main, i) for i in op.inputs]
        outs = [operand_info(model, model.main, o) for o in op.outputs]
        if any(t.shape is None or 0 in t.shape for t in ins[:3]):
            continue
        launch = entry.data_dependent(ins, outs)
        if launch is not None:
            yield KernelInstance(launch.template, dict(launch.defines), [], [], launch.global_size)


def _sampled(cases: list[dict], every: int) -> list[dict]:
    """Every ``every``-th case, and the first case of each spec file (so that every operation and
    variant the specs test is among them)."""
    seen: set[str] = set()
    chosen = []
    for i, case in enumerate(cases):
        if i % every == 0 or case["spec"] not in seen:
            chosen.append(case)
        seen.add(case["spec"])
    return chosen


def _conformance_kernels(every: int = 1):
    """Distinct kernel instances of the conformance cases the accelerator supports (of every
    ``every``-th case and each spec's first, see :func:`_sampled`), lowered as an execution with the
    case's inputs would be (value inputs specialised), at most PER_TEMPLATE per template."""
    from gpu_driver.compiler.support import supported_nodes, value_input_positions
    from gpu_driver.errors import DriverError
    from tests.conformance.aosp_cases import build_model, inputs_of, load, versions

    by_template: dict[str, dict] = {}
    for version in versions():
        for case in _sampled(load(version), every):
            try:
                model = build_model(case)
                for k in _data_dependent_kernels(model):
                    key = tuple(sorted((n, str(v)) for n, v in k.defines.items()))
                    by_template.setdefault(k.template, {}).setdefault(key, k)
                if not all(supported_nodes(model)):
                    continue
                inputs = inputs_of(case)
                if any(x is None for x in inputs):
                    continue
                values = {p: inputs[p] for p in value_input_positions(model)}
                graph = prepare_graph(model, [np.shape(x) for x in inputs], check_support=True, input_values=values)
                kernels = lower(graph).kernels
            except (DriverError, KeyError):
                continue
            for k in kernels:
                key = tuple(sorted((n, str(v)) for n, v in k.defines.items()))
                by_template.setdefault(k.template, {}).setdefault(key, k)
    chosen = []
    for instances in by_template.values():
        items = list(instances.values())
        step = max(1, len(items) // PER_TEMPLATE)
        chosen.extend(items[::step][:PER_TEMPLATE])
    return chosen


#: the default selection lowers every SAMPLE_EVERY-th case and each spec's first (lowering every case
#: is most of the slow test's time: a few large cases)
SAMPLE_EVERY = 8


@pytest.mark.parametrize("every", [SAMPLE_EVERY, pytest.param(1, marks=pytest.mark.slow)],
                         ids=["sample", "every_case"])
def test_conformance_kernels_compile_with_nvrtc(every, monkeypatch):
    monkeypatch.setenv("GPU_DRIVER_EXPERIMENTAL", "1")  # the experimental cases (DENSIFY) too
    kernels = _conformance_kernels(every)
    templates = {k.template for k in kernels} | _sources()[1]
    on_disk = {p.name for p in (ROOT / "opencl_kernels" / "ops").glob("*.cl")}
    assert on_disk <= templates, f"templates no supported case or model emits: {sorted(on_disk - templates)}"
    src = generate(kernels, CudaCompiler().prelude)
    cubin = compile_source(src, "sm_80", name="conformance_kernels.cu")
    assert cubin[:4] == b"\x7fELF"
