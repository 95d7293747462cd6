"""Execution-time errors reported by kernels through the status word (compiler/ir.py): an out-of-range
EMBEDDING_LOOKUP index fails the execution with GENERAL_FAILURE naming the operation, outputs are not
delivered, and the next valid execution of the same prepared model succeeds."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.codegen import generate
from gpu_driver.backends.opencl import OpenCLTuning
from gpu_driver.cache.format import decode_plan, encode_plan
from gpu_driver.compiler.pipeline import build_plan, lower, prepare_graph
from gpu_driver.hal.types import ErrorStatus

from .helpers import opencl_device, reference_outputs
from .ops.harness import F32_ATOL, F32_RTOL


def _lookup_relu_model(num_lookups=3, rows=6):
    """EMBEDDING_LOOKUP(runtime lookups, values) → RELU (so a kernel runs after the failing one)."""
    b = gd.ModelBuilder()
    look = b.add_input(T.TENSOR_INT32, [num_lookups])
    values = b.add_input(T.TENSOR_FLOAT32, [rows, 4])
    g = b.add_operand(T.TENSOR_FLOAT32, [num_lookups, 4])
    b.add_operation(O.EMBEDDING_LOOKUP, [look, values], [g])
    y = b.add_operand(T.TENSOR_FLOAT32, [num_lookups, 4])
    b.add_operation(O.RELU, [g], [y])
    b.set_outputs([y])
    return b.finish()


@pytest.mark.parametrize("bad", [6, -1, 1 << 30])
def test_out_of_range_index_fails_then_valid_execution_succeeds(bad):
    dev = opencl_device()
    model = _lookup_relu_model()
    pm = dev.prepare_model(model)
    values = np.random.default_rng(4).normal(size=(6, 4)).astype(np.float32)
    good = np.array([5, 0, 3], np.int32)
    with pytest.raises(gd.DriverError) as ref_err:  # the reference (the oracle) fails it too
        reference_outputs(model, [np.array([1, bad, 2], np.int32), values])
    assert ref_err.value.status == ErrorStatus.GENERAL_FAILURE
    before = dev.backend.allocator.counters.snapshot()
    with pytest.raises(gd.DriverError) as err:
        pm.execute([np.array([1, bad, 2], np.int32), values])
    assert err.value.status == ErrorStatus.GENERAL_FAILURE
    assert "EMBEDDING_LOOKUP" in err.value.message and "operation 0" in err.value.message
    assert not err.value.output_shapes
    after = dev.backend.allocator.counters.snapshot()
    assert after["d2h_count"] - before["d2h_count"] == 1  # only the status word was read: no output
    for _ in range(2):  # the word was reset: valid executions succeed again
        (out,) = pm.execute([good, values])
        np.testing.assert_allclose(out, reference_outputs(model, [good, values])[0], atol=F32_ATOL, rtol=F32_RTOL)


def test_status_word_only_for_models_whose_kernels_can_fail():
    model = _lookup_relu_model()
    graph = prepare_graph(model)
    plan, _ = build_plan(graph, lower(graph), OpenCLTuning())
    assert plan.status.key == "st" and plan.storage["st"].region == "status"
    assert "EMBEDDING_LOOKUP" in plan.status.messages[1]
    assert plan.kernels[0].args[-1] == "st"
    assert decode_plan(encode_plan(plan)) == plan  # the messages survive the cache encoding
    # constant in-range lookups need no check
    b = gd.ModelBuilder()
    look = b.add_constant(T.TENSOR_INT32, [2], np.array([1, 0], np.int32))
    values = b.add_input(T.TENSOR_FLOAT32, [3, 2])
    y = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.EMBEDDING_LOOKUP, [look, values], [y])
    b.set_outputs([y])
    graph = prepare_graph(b.finish())
    plan, _ = build_plan(graph, lower(graph), OpenCLTuning())
    assert plan.status is None and "st" not in plan.storage


def test_status_kernel_compiles_with_nvrtc():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")  # noqa: F841
    from gpu_driver.backends.cuda import CudaCompiler, compile_source
    try:
        compile_source("extern \"C\" __global__ void k() {}", "sm_80")
    except Exception:
        pytest.skip("NVRTC library not loadable")
    graph = prepare_graph(_lookup_relu_model())
    src = generate(lower(graph).kernels, CudaCompiler().prelude)
    for arch in ("sm_80", "sm_90"):
        assert compile_source(src, arch)[:4] == b"\x7fELF"
