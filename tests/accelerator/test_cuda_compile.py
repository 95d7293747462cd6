"""NVRTC compiles the CUDA prelude and the generated program of sample models for sm_80 and sm_90
(no GPU needed), and CUDA execution tests run when a GPU is present."""
import numpy as np
import pytest

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

from gpu_driver.backends.cuda import CudaCompiler, compile_source  # noqa: E402
from gpu_driver.compiler.codegen import generate  # noqa: E402
from gpu_driver.compiler.pipeline import lower, prepare_graph  # noqa: E402

from .helpers import chain_model  # noqa: E402

ARCHS = ["sm_80", "sm_90"]


def _nvrtc_works():
    try:
        compile_source("extern \"C\" __global__ void k() {}", "sm_80")
        return True
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _nvrtc_works(), reason="NVRTC library not loadable")


@pytest.mark.parametrize("arch", ARCHS)
def test_prelude_compiles(arch):
    src = CudaCompiler(arch).prelude + """
KERNEL void probe(GLOBAL const int* RESTRICT a, GLOBAL const half* h, GLOBAL int* RESTRICT o, GLOBAL half* ho) {
    const int i = GLOBAL_ID(0);
    if (i >= 16) return;
    o[i] = MBQM(a[i], 1518500250, -3) + MBQM_LT1(a[i], 1073741824, -1) + MBQM_GT1(a[i], 1073741824, 1)
         + clamp(a[i], -5, 5) + RDBPOT(a[i], 2) + SRDHM(a[i], a[i]);
    STORE_HALF(ho, i, clamp(LOAD_HALF(h, i), -1.0f, 1.0f) + FAST_EXP(0.0f) + tanh(0.5f) + (float)(int64)i);
    LOCAL float tile[32];
    tile[LOCAL_ID(0)] = (float)GROUP_ID(0);
    BARRIER;
}
"""
    cubin = CudaCompiler(arch).compile(src)
    assert len(cubin) > 100


def _sample_models():
    models = {"chain": chain_model(4, shape=(1, 8, 8, 4))}
    try:
        from gpu_driver.zoo import mobilenet_v1, mobilenet_v2
        models["mobilenet_v1"] = mobilenet_v1(0.25, 32).model
        models["mobilenet_v2"] = mobilenet_v2(0.25, 32).model
    except ImportError:
        pass
    return models


@pytest.mark.parametrize("arch", [ARCHS[0], pytest.param(ARCHS[1], marks=pytest.mark.slow)])
def test_generated_program_compiles(arch):
    for name, model in _sample_models().items():
        graph = prepare_graph(model)
        lowered = lower(graph)
        src = generate(lowered.kernels, CudaCompiler(arch).prelude)
        cubin = compile_source(src, arch, name=f"{name}.cu")
        assert len(cubin) > 100, name


def _cuda_device():
    import gpu_driver as gd
    try:
        return gd.get_device("cuda")
    except gd.DriverError:
        pytest.skip("no CUDA GPU")


@pytest.mark.cuda
def test_cuda_chain_matches_reference():
    from .helpers import reference_outputs
    dev = _cuda_device()
    model = chain_model(10, shape=(1, 16, 16, 8))
    pm = dev.prepare_model(model)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 16, 16, 8)).astype(np.float32)
    np.testing.assert_allclose(pm.execute([x])[0], reference_outputs(model, [x])[0], rtol=1e-5, atol=1e-5)
    assert pm.memory_plan["peak_bytes"] <= 2 * x.nbytes


@pytest.mark.cuda
def test_cuda_mobilenet_matches_reference():
    from .helpers import reference_outputs
    dev = _cuda_device()
    from gpu_driver.zoo import mobilenet_v2
    bm = mobilenet_v2(0.25, 32)
    pm = dev.prepare_model(bm.model)
    x = bm.random_input()
    np.testing.assert_allclose(pm.execute([x])[0], reference_outputs(bm.model, [x])[0], rtol=1e-4, atol=1e-5)
