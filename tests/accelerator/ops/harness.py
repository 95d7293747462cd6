"""Shared helpers of the per-operation accelerator tests.

``run_opencl(model, inputs)`` executes a model on the OpenCL device: through
``gpu_driver.get_device("opencl")`` when that device exists, else (while the pipeline is being built)
by lowering the graph with the registered lowerings and running the emitted kernels directly with
PyOpenCL (real kernels, the same prelude and templates; no mocks).
``run_reference`` runs the same model on the reference device (the oracle).
"""
from __future__ import annotations

import os
import string
from pathlib import Path

import numpy as np
import pytest

import gpu_driver
from gpu_driver.graph import build_graph
from gpu_driver.hal.types import OPERAND_TYPE_INFO
from gpu_driver.compiler.ir import LoweredModel, c_literal
from gpu_driver.compiler.lowering import LOWERINGS, LoweringContext

ROOT = Path(__file__).resolve().parents[3]
KERNELS = ROOT / "opencl_kernels"

F32_ATOL = 1e-5
F32_RTOL = 5 * 2.0 ** -23


def _import_lowerings():
    import importlib
    for fam in ("elementwise", "activation", "conv", "pool", "fully_connected", "concatenation", "shape_ops",
                "resize", "normalization", "lookup", "recurrent"):
        try:
            importlib.import_module(f"gpu_driver.compiler.lowerings.{fam}")
        except ModuleNotFoundError as exc:
            if exc.name != f"gpu_driver.compiler.lowerings.{fam}":
                raise


_import_lowerings()


def opencl_available() -> bool:
    try:
        import pyopencl as cl
        return any(p.get_devices() for p in cl.get_platforms())
    except Exception:
        return False


def _device():
    if os.environ.get("GD_TEST_DIRECT"):
        return None
    try:
        return gpu_driver.get_device("opencl")
    except Exception:
        return None


def run_reference(model, inputs):
    prepared = gpu_driver.get_device("reference").prepare_model(model)
    return [np.asarray(o) for o in prepared.execute(inputs)]


def run_opencl(model, inputs):
    dev = _device()
    if dev is not None:
        prepared = dev.prepare_model(model)
        return [np.asarray(o) for o in prepared.execute(inputs)]
    return _run_direct(model, inputs)


def supported(model):
    """Per-operation support of the OpenCL lowerings (the supports() predicates)."""
    dev = _device()
    if dev is not None:
        return dev.get_supported_operations(model)
    graph = build_graph(model, model.main)
    res = []
    for node in graph.nodes:
        rule = LOWERINGS.get(node.type)
        ctx = LoweringContext(graph, node)
        res.append(rule is not None and node.params is not None and (rule.supports is None or rule.supports(ctx)))
    return res


# ---- direct execution (no pipeline) ----------------------------------------------------------------

_CL = {}


def _cl():
    if not _CL:
        import pyopencl as cl
        dev = [d for p in cl.get_platforms() for d in p.get_devices()][0]
        _CL["ctx"] = cl.Context([dev])
        _CL["queue"] = cl.CommandQueue(_CL["ctx"])
    return _CL["ctx"], _CL["queue"]


def lower_model(model, input_shapes=None):
    graph = build_graph(model, model.main, input_shapes)
    lowered = LoweredModel()
    for node in graph.nodes:
        rule = LOWERINGS[node.type]
        ctx = LoweringContext(graph, node, lowered)
        assert rule.supports is None or rule.supports(ctx), f"{node.type.name} not supported"
        rule.lower(ctx)
    return graph, lowered


def dialect_prelude(dialect: str = "opencl") -> str:
    """The prelude codegen puts in front of every program of ``dialect``."""
    try:
        from gpu_driver.compiler.codegen import prelude
        return prelude(dialect)
    except ImportError:
        path = KERNELS / "prelude.h" if dialect == "opencl" else ROOT / "cuda_kernels" / "prelude.cuh"
        return path.read_text()


def kernel_source(k, name: str, prelude: bool = False) -> str:
    text = (KERNELS / "ops" / k.template).read_text()
    defs = {n: c_literal(v) for n, v in k.defines.items()}
    defs["KERNEL_NAME"] = name
    src = string.Template(text).substitute(defs)
    if prelude:
        src = dialect_prelude() + "\n" + src
    return src


def _run_direct(model, inputs):
    import pyopencl as cl
    ctx, queue = _cl()
    graph, lowered = lower_model(model, [np.shape(x) for x in inputs])
    sg = model.main
    host: dict = {}
    for idx, x in zip(sg.input_indexes, inputs):
        host[("operand", idx)] = np.ascontiguousarray(x, dtype=OPERAND_TYPE_INFO[sg.operands[idx].type].dtype)
    for i, t in enumerate(graph.tensors):
        if ("operand", i) in host or not OPERAND_TYPE_INFO[t.type].is_tensor:
            continue
        if t.value is not None:
            v = np.asarray(t.value)
            host[("operand", i)] = np.ascontiguousarray(v.astype(np.uint8) if v.dtype == np.bool_ else v)
        elif t.shape is not None and not t.omitted:
            host[("operand", i)] = np.zeros(t.shape, dtype=t.dtype)
    for i, c in enumerate(lowered.constants):
        host[("const", i)] = c
    for i, s in enumerate(lowered.scratch):
        host[("scratch", i)] = np.zeros(max(s.count, 1), dtype=s.dtype)
    host[("status", 0)] = np.zeros(1, dtype=np.int32)  # the status word (compiler/ir.py)

    def resolve(key):
        if key[0] == "operand":
            idx = key[1]
            while idx in lowered.aliases:
                idx = lowered.aliases[idx]
            return ("operand", idx)
        return key

    bufs = {}
    for key, arr in host.items():
        if key[0] == "operand" and key[1] in lowered.aliases:
            continue
        bufs[key] = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=arr if arr.nbytes else np.zeros(1, np.uint8))
    src = dialect_prelude() + "\n" + "\n".join(
        kernel_source(k, f"k{n}") for n, k in enumerate(lowered.kernels))
    prog = cl.Program(ctx, src).build() if lowered.kernels else None
    for n, k in enumerate(lowered.kernels):
        fn = getattr(prog, f"k{n}")
        args = [bufs[resolve((t.kind, t.index))] for t in [*k.inputs, *k.outputs]]
        gs = k.global_size
        if k.local_size is not None:
            gs = tuple(-(-g // l) * l for g, l in zip(gs, k.local_size))
        fn(queue, gs, k.local_size, *args)
    outs = []
    for idx in sg.output_indexes:
        key = resolve(("operand", idx))
        arr = host[key]
        cl.enqueue_copy(queue, arr, bufs[key])
        shape = graph.tensors[idx].shape
        outs.append(arr.reshape(-1)[:int(np.prod(shape))].reshape(shape).copy())
    queue.finish()
    return outs


# ---- comparison -------------------------------------------------------------------------------------

def assert_close(actual, expected, quant_tol: int = 0, atol=F32_ATOL, rtol=F32_RTOL, what=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, err_msg=what)
    else:
        diff = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
        assert diff.max(initial=0) <= quant_tol, f"{what}: max diff {diff.max()} > {quant_tol}"


def compare(model, inputs, quant_tol: int = 0, atol=F32_ATOL, rtol=F32_RTOL, what=""):
    exp = run_reference(model, inputs)
    act = run_opencl(model, inputs)
    assert len(act) == len(exp)
    for i, (a, e) in enumerate(zip(act, exp)):
        assert_close(a, e, quant_tol, atol, rtol, what=f"{what} output {i}")
    return act, exp


requires_opencl = pytest.mark.skipif(not opencl_available(), reason="no OpenCL device")


# ---- model construction ----------------------------------------------------------------------------

from dataclasses import dataclass  # noqa: E402

from gpu_driver.hal.types import OperandType as OT, OperationType as OP  # noqa: E402,F401

F32 = OT.TENSOR_FLOAT32
Q8A = OT.TENSOR_QUANT8_ASYMM
I32T = OT.TENSOR_INT32


@dataclass
class In:
    """A model input tensor."""
    type: OT
    shape: tuple
    scale: float = 0.0
    zp: int = 0


@dataclass
class Const:
    type: OT
    value: object
    scale: float = 0.0
    zp: int = 0


@dataclass
class Scalar:
    type: OT
    value: object


@dataclass
class NoValue:
    type: OT = F32


@dataclass
class Out:
    type: OT
    scale: float = 0.0
    zp: int = 0
    shape: tuple = ()


def i32(v):
    return Scalar(OT.INT32, int(v))


def f32(v):
    return Scalar(OT.FLOAT32, float(v))


def single_op(op, args, outs):
    """A one-operation model; returns (model, list of In specs in input order)."""
    m = gpu_driver.ModelBuilder()
    idx, ins = [], []
    for a in args:
        if isinstance(a, In):
            idx.append(m.add_input(a.type, a.shape, a.scale, a.zp))
            ins.append(a)
        elif isinstance(a, Const):
            v = np.asarray(a.value)
            idx.append(m.add_constant(a.type, v.shape, v, a.scale, a.zp))
        elif isinstance(a, Scalar):
            idx.append(m.add_scalar(a.type, a.value))
        elif isinstance(a, NoValue):
            idx.append(m.add_no_value(a.type))
        else:
            raise TypeError(a)
    oidx = [m.add_operand(o.type, o.shape, o.scale, o.zp) for o in outs]
    m.add_operation(op, idx, oidx)
    m.set_outputs(oidx)
    return m.finish(), ins


def random_data(spec, rng, lo=-2.0, hi=2.0):
    if spec.type == Q8A:
        return rng.integers(0, 256, spec.shape).astype(np.uint8)
    if spec.type == I32T:
        return rng.integers(-100, 100, spec.shape).astype(np.int32)
    return rng.uniform(lo, hi, spec.shape).astype(np.float32)


def check_op(op, args, outs, rng=None, quant_tol=0, atol=F32_ATOL, rtol=F32_RTOL, data=None, what=""):
    """Build a one-op model, run it on OpenCL and the reference, compare."""
    rng = rng or np.random.default_rng(1)
    model, ins = single_op(op, args, outs)
    assert all(supported(model)), f"{op.name} {what}: not supported by the OpenCL lowerings"
    inputs = data if data is not None else [random_data(s, rng) for s in ins]
    return compare(model, inputs, quant_tol, atol, rtol, what=f"{op.name} {what}")
