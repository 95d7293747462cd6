"""AcceleratorDevice / AcceleratorPreparedModel: the HAL device on top of any backend (OpenCL, CUDA).

Backend-agnostic: everything runtime-specific is behind gpu_driver.backends.base.Backend.
Preparation (compiler.pipeline) does all expensive work; an execution copies the inputs in, replays
the launch list, copies the outputs out.  Models whose input shapes are unknown at preparation are
specialised at first execution for the concrete shapes and cached per shape signature.

Hooks for colleagues:
- model cache: :meth:`AcceleratorPreparedModel.cache_payload` and :meth:`AcceleratorDevice.load_prepared`;
- device-resident pools (memory domains): :meth:`AcceleratorPreparedModel.bind_input` /
  :meth:`AcceleratorPreparedModel.bind_output` are the only places request pools are touched.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from . import __version__, memory_domain
from .device import Device
from .errors import DriverError, failure
from .graph import Graph, Node, build_graph
from .hal.model import Model, Operation, Request, Subgraph
from .hal.types import (OPERAND_TYPE_INFO, Capabilities, DeviceType, ErrorStatus, ExecutionPreference,
                        OperandPerformance, OperandType, OperationType, OutputShape, PerformanceInfo, Priority)
from .hal.validation import validate_model
from .memory import Memory
from .prepared_model import ExecutionContext, PreparedModel

_CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)


def state_dir() -> Path:
    """Per-user state directory: $GPU_DRIVER_STATE_DIR or ~/.cache/gpu_driver."""
    env = os.environ.get("GPU_DRIVER_STATE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gpu_driver"


# ---- support --------------------------------------------------------------------------------------------

def _node_supported(graph: Graph, node: Node, dynamic: bool) -> bool:
    from .compiler import lowerings  # noqa: F401  (registers every lowering)
    from .compiler.lowering import LOWERINGS, LoweringContext

    if node.type in _CONTROL_FLOW:
        return False
    rule = LOWERINGS.get(node.type)
    if rule is None:
        return False
    if node.params is None and not dynamic:
        return False  # non-constant parameters (or a shape that never becomes known at preparation)
    try:
        return bool(rule.supports(LoweringContext(graph, node))) if rule.supports else node.params is not None
    except Exception:
        return False


def supported_nodes(model: Model) -> list[bool]:
    """One bool per main-subgraph operation: can the kernels run it exactly (fusion taken into account)?"""
    from .compiler.fusion import fusable_pairs

    graph = build_graph(model, model.main)
    sg = model.main
    dynamic = any(OPERAND_TYPE_INFO[sg.operands[i].type].is_tensor
                  and (not sg.operands[i].dimensions or 0 in sg.operands[i].dimensions) for i in sg.input_indexes)
    ok = [_node_supported(graph, n, dynamic) for n in graph.nodes]
    for producer, relu, fused in fusable_pairs(graph):
        # a fused activation runs inside the producer's kernel: both are supported if that kernel is
        if not ok[relu.index] or not ok[producer.index]:
            both = ok[producer.index] and _node_supported(graph, fused, dynamic)
            if both:
                ok[relu.index] = True
    return ok


# ---- capabilities ---------------------------------------------------------------------------------------

def _capability_workload():
    """A small fixed model (ADD/MUL chain on 1×64×64×16 float32) and its input."""
    from .builder import ModelBuilder

    rng = np.random.default_rng(1234)
    shape = [1, 64, 64, 16]
    b = ModelBuilder()
    x = b.add_input(OperandType.TENSOR_FLOAT32, shape)
    none = b.add_scalar(OperandType.INT32, 0)
    for layer in range(8):
        c = b.add_constant(OperandType.TENSOR_FLOAT32, shape, rng.standard_normal(shape).astype(np.float32))
        y = b.add_operand(OperandType.TENSOR_FLOAT32, shape)
        b.add_operation(OperationType.ADD if layer % 2 == 0 else OperationType.MUL, [x, c, none], [y])
        x = y
    b.set_outputs([x])
    return b.finish(), rng.standard_normal(shape).astype(np.float32)


def _best_time(prepared: PreparedModel, x: np.ndarray, repeats: int = 7) -> float:
    prepared.execute([x])
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        prepared.execute([x])
        best = min(best, time.perf_counter() - t0)
    return best


# ---- the device ----------------------------------------------------------------------------------------

class AcceleratorDevice(Device):
    """A device of an accelerator backend: "opencl:N", "cuda:N"."""

    def __init__(self, name: str, backend, rank: int = 100):
        super().__init__()
        self.name = name
        self.rank = rank
        self.backend = backend
        self._capabilities: Capabilities | None = None

    # ---- queries ---------------------------------------------------------------------------------
    def get_type(self) -> DeviceType:
        return self.backend.device_type

    def get_version_string(self) -> str:
        b = self.backend
        return f"gpu_driver-{__version__}-{b.runtime}-{b.device_name} ({b.runtime_version})"

    def supports_control_flow(self) -> bool:
        return False

    def get_supported_operations(self, model: Model) -> list[bool]:
        from .device import FEATURE_LEVEL

        validate_model(model, FEATURE_LEVEL)
        try:
            return supported_nodes(model)
        except DriverError:
            return [False] * len(model.main.operations)

    def _supports_operation(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        if subgraph is not model.main:
            return False
        return supported_nodes(model)[model.main.operations.index(op)]

    def get_capabilities(self) -> Capabilities:
        """Measured once per device + driver version (a small fixed workload here vs the reference
        device), cached in the state directory so the figures are stable across restarts."""
        with self._lock:
            if self._capabilities is None:
                ratio = self._measured_ratio()
                perf = PerformanceInfo(ratio, ratio)
                types = sorted(t for t in OperandType if t not in (OperandType.SUBGRAPH, OperandType.OEM,
                                                                    OperandType.TENSOR_OEM_BYTE))
                self._capabilities = Capabilities(perf, perf, [OperandPerformance(t, perf) for t in types],
                                                  PerformanceInfo(), PerformanceInfo())
            return self._capabilities

    def _measured_ratio(self) -> float:
        key = f"{self.name}|{self.get_version_string()}"
        path = state_dir() / "capabilities.json"
        try:
            cached = json.loads(path.read_text())
        except (OSError, ValueError):
            cached = {}
        if isinstance(cached.get(key), (int, float)) and cached[key] > 0:
            return float(cached[key])
        try:
            from .reference.device import ReferenceDevice

            model, x = _capability_workload()
            mine = _best_time(self.prepare_model(model), x)
            ref = _best_time(ReferenceDevice().prepare_model(model), x)
            ratio = max(mine / ref, 1e-3)
        except Exception:
            ratio = 1.0  # unmeasurable: claim parity rather than 0
        ratio = float(f"{ratio:.4g}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                cached = json.loads(path.read_text())
            except (OSError, ValueError):
                cached = {}
            cached[key] = ratio
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".capabilities.")
            with os.fdopen(fd, "w") as f:
                json.dump(cached, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            pass
        return ratio

    # ---- preparation -----------------------------------------------------------------------------
    def _prepare(self, model: Model, preference: ExecutionPreference, priority: Priority, deadline_ns,
                 model_cache: Sequence, data_cache: Sequence, token) -> PreparedModel:
        return AcceleratorPreparedModel(self, model)

    def load_prepared(self, binary: bytes, plan: dict, constants: list[np.ndarray], model: Model) -> "AcceleratorPreparedModel":
        """A prepared model from a cache payload (see AcceleratorPreparedModel.cache_payload), no compiling."""
        from .compiler.pipeline import CompiledModel

        return AcceleratorPreparedModel(self, model, compiled=CompiledModel(binary, plan, list(constants)))


@dataclass
class Specialization:
    """One compiled + instantiated version of the model (per input-shape signature)."""

    compiled: object
    exe: object
    lock: threading.Lock = field(default_factory=threading.Lock)


class AcceleratorPreparedModel(PreparedModel):
    def __init__(self, device: AcceleratorDevice, model: Model, compiled=None):
        super().__init__(device, model)
        from .compiler.pipeline import compile_model, instantiate

        self.backend = device.backend
        self._specs: dict[tuple, Specialization] = {}
        self._spec_lock = threading.Lock()
        self._static: Specialization | None = None
        t0 = time.perf_counter()
        try:
            if compiled is None:
                graph = build_graph(model, model.main)
                if graph.fully_specified and all(graph.tensors[i].known_shape for i in model.main.input_indexes):
                    compiled = compile_model(model, self.backend)
            if compiled is not None:
                exe = instantiate(self.backend, compiled.binary, compiled.plan, compiled.constants)
                self._static = Specialization(compiled, exe)
                self._specs[self._signature_of(compiled.plan["input_shapes"])] = self._static
        except DriverError:
            raise
        except Exception as exc:  # device or compiler trouble
            raise failure(f"preparation on {device.name} failed: {type(exc).__name__}: {exc}") from exc
        self.prepare_seconds = time.perf_counter() - t0

    @staticmethod
    def _signature_of(shapes) -> tuple:
        return tuple(None if s is None else tuple(int(d) for d in s) for s in shapes)

    # ---- introspection ---------------------------------------------------------------------------
    @property
    def memory_plan(self) -> dict:
        """Of the shape-static specialisation (or the latest one): peak bytes of temporaries, buffers."""
        spec = self._static or (next(reversed(self._specs.values())) if self._specs else None)
        if spec is None:
            return {"peak_bytes": 0, "num_buffers": 0, "naive_bytes": 0, "kernels": 0, "specialized": False}
        p = spec.compiled.plan
        return {"peak_bytes": p["arena_bytes"], "num_buffers": p["num_buffers"],
                "naive_bytes": p["naive_arena_bytes"], "const_bytes": p["const_bytes"],
                "kernels": len(p["kernels"]), "specialized": True}

    @property
    def transfer_counters(self) -> dict:
        return self.backend.counters.snapshot()

    @property
    def source(self) -> str:
        spec = self._static or (next(iter(self._specs.values())) if self._specs else None)
        return spec.compiled.source if spec else ""

    def cache_payload(self) -> tuple[bytes, dict, list[np.ndarray]]:
        """(binary, msgpack-able plan, constants) of the shape-static model, for the model/data cache."""
        if self._static is None:
            raise failure("model has dynamic shapes: nothing to cache before execution")
        c = self._static.compiled
        return c.binary, c.plan, list(c.constants)

    def known_output_shape(self, output_index: int):
        if self._static is not None:
            return tuple(self._static.compiled.plan["outputs"][output_index]["shape"])
        return super().known_output_shape(output_index)

    # ---- execution -------------------------------------------------------------------------------
    def _specialization(self, shapes: list) -> Specialization:
        sig = self._signature_of(shapes)
        spec = self._specs.get(sig)
        if spec is not None:
            return spec
        from .compiler.pipeline import compile_model, instantiate

        with self._spec_lock:
            spec = self._specs.get(sig)
            if spec is None:
                if any(s is None for s in sig):
                    raise failure("omitted model inputs are not supported by the accelerator backends")
                try:
                    compiled = compile_model(self.model, self.backend, [list(s) for s in sig])
                    spec = Specialization(compiled, instantiate(self.backend, compiled.binary, compiled.plan,
                                                                compiled.constants))
                except DriverError:
                    raise
                except Exception as exc:
                    raise failure(f"specialisation for input shapes {sig} failed: {exc}") from exc
                self._specs[sig] = spec
        return spec

    def _execute(self, request: Request, ctx: ExecutionContext) -> tuple[list[OutputShape], int | None]:
        spec = self._specialization(ctx.shapes.inputs)
        plan = spec.compiled.plan
        shapes = self.check_outputs(request, plan)
        exe = spec.exe
        with spec.lock:
            for i, arg in enumerate(request.inputs):
                if arg.has_no_value:
                    continue
                self.bind_input(i, arg, request.pools[arg.location.pool_index], exe.views[plan["inputs"][i]["key"]],
                                plan["inputs"][i]["nbytes"])
            device_ns = exe.run(timed=ctx.measure)
            for i, arg in enumerate(request.outputs):
                self.bind_output(i, arg, request.pools[arg.location.pool_index], exe.output_buffers[i],
                                 plan["outputs"][i]["nbytes"], plan["outputs"][i]["shape"])
        return shapes, device_ns

    def check_outputs(self, request: Request, plan: dict) -> list[OutputShape]:
        """Output shapes of this specialisation; OUTPUT_INSUFFICIENT_SIZE (before running) if any is too small."""
        shapes = []
        for arg, out in zip(request.outputs, plan["outputs"]):
            pool = request.pools[arg.location.pool_index]
            sufficient = not isinstance(pool, Memory) or arg.location.length >= out["nbytes"]
            shapes.append(OutputShape(list(out["shape"]), sufficient))
        if not all(s.is_sufficient for s in shapes):
            bad = [i for i, s in enumerate(shapes) if not s.is_sufficient]
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,
                              f"output buffer(s) {bad} too small for the computed shapes", shapes)
        return shapes

    # ---- pool binding (overridable: memory domains keep device-resident buffers) -----------------------
    def bind_input(self, index: int, arg, pool, buffer, nbytes: int) -> None:
        """Make model input ``index`` available in ``buffer`` (default: copy from the request pool)."""
        if nbytes == 0:
            return
        if memory_domain.bind_device_input(self, arg, pool, buffer, nbytes):  # device-resident pools
            return
        if isinstance(pool, Memory):
            data = np.frombuffer(pool.view(), dtype=np.uint8, count=nbytes, offset=arg.location.offset)
        else:
            value = np.asarray(self.device.read_buffer_token(pool))
            data = np.ascontiguousarray(value.astype(np.uint8) if value.dtype == np.bool_ else value)
        self.backend.upload(buffer, data)

    def bind_output(self, index: int, arg, pool, buffer, nbytes: int, shape) -> None:
        """Deliver model output ``index`` from ``buffer`` (default: copy into the request pool)."""
        if memory_domain.bind_device_output(self, arg, pool, buffer, nbytes, shape):  # device-resident pools
            return
        if isinstance(pool, Memory):
            if nbytes == 0:
                return
            view = pool.view()
            if not view.readonly:
                out = np.frombuffer(view, dtype=np.uint8, count=nbytes, offset=arg.location.offset)
                self.backend.download(buffer, out)
            else:
                out = np.empty(nbytes, dtype=np.uint8)
                self.backend.download(buffer, out)
                pool.write(arg.location.offset, out.tobytes())
            return
        info = OPERAND_TYPE_INFO[self._operand("out", index).type]
        dtype = np.uint8 if info.dtype == np.bool_ else info.dtype
        out = np.empty(tuple(shape), dtype=dtype)
        self.backend.download(buffer, out.reshape(-1).view(np.uint8))
        self.device.write_buffer_token(pool, out.astype(np.bool_) if info.dtype == np.bool_ else out)
