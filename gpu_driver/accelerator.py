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

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from . import __version__, memory_domain
from .device import Device
from .errors import DriverError, failure
from .graph import Graph, build_graph
from .hal.model import Model, Operation, Request, Subgraph
from .hal.types import (OPERAND_TYPE_INFO, Capabilities, DeviceType, ExecutionPreference,
                        OutputShape, Priority)
from .hal.validation import validate_model
from .memory import Memory
from .prepared_model import ExecutionContext, PreparedModel



# ---- support --------------------------------------------------------------------------------------------

#: sizes tried, in order, for the unknown input dimensions of a dynamic-shape model (see support_graph)
REPRESENTATIVE_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 224)


def support_graph(model: Model) -> Graph:
    """The graph support is decided on.

    Shape-static models: the declared graph.  Models whose inputs have unknown dimensions (a 0 entry)
    are executed through per-signature specialisations (AcceleratorPreparedModel._specialization),
    so support is decided on a *representative specialisation*: every unknown input dimension set to
    one size from REPRESENTATIVE_DIMS, the first for which shape inference decodes every operation
    (else the one that decodes most).  What ``supports`` checks there — types, ranks, constant
    arguments, quantisation — does not depend on the sizes chosen.  The few size-dependent
    conditions (e.g. a recurrent op's batch > 0) are re-checked for every concrete signature at its
    first execution; a signature that fails them fails that execution with GENERAL_FAILURE
    (pipeline.check_supported).  Inputs of unknown rank cannot be specialised: their consumers stay
    unsupported.
    """
    sg = model.main
    graph = build_graph(model, sg)
    declared = [sg.operands[i] for i in sg.input_indexes]
    dynamic = [OPERAND_TYPE_INFO[o.type].is_tensor and 0 in (o.dimensions or ()) for o in declared]
    if graph.fully_specified or not any(dynamic):
        return graph
    if any(OPERAND_TYPE_INFO[o.type].is_tensor and not o.dimensions for o in declared):
        return graph  # unknown rank
    best, best_count = graph, sum(n.params is not None for n in graph.nodes)
    for size in REPRESENTATIVE_DIMS:
        shapes = [tuple(d or size for d in o.dimensions) if OPERAND_TYPE_INFO[o.type].is_tensor else ()
                  for o in declared]
        try:
            g = build_graph(model, sg, shapes)
        except DriverError:
            continue  # e.g. a kernel larger than the chosen spatial size
        if g.fully_specified:
            return g
        count = sum(n.params is not None for n in g.nodes)
        if count > best_count:
            best, best_count = g, count
    return best


def supported_nodes(model: Model, features: frozenset = frozenset({"fp64"})) -> list[bool]:
    """One bool per main-subgraph operation: can the kernels run it exactly (fusion taken into account)
    on a device with ``features`` (Backend.features)?"""
    from .compiler.fusion import fusable_pairs
    from .compiler.lowering import node_supported

    graph = support_graph(model)
    ok = [node_supported(graph, n, features) for n in graph.nodes]
    for producer, relu, fused in fusable_pairs(graph):
        # a fused activation runs inside the producer's kernel: both are supported if that kernel is
        if not ok[relu.index] and ok[producer.index] and node_supported(graph, fused, features):
            ok[relu.index] = True
    return ok


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
        return self._support_list(model)

    def _support_list(self, model: Model) -> list[bool]:
        """Decided for the whole graph at once (fusion and shapes are graph-wide)."""
        try:
            return supported_nodes(model, self.backend.features)
        except DriverError:
            return [False] * len(model.main.operations)

    def _supports_operation(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        if subgraph is not model.main:
            return False
        return self._support_list(model)[model.main.operations.index(op)]

    def get_capabilities(self) -> Capabilities:
        """HAL ``getCapabilities_1_3``: per operand type, measured time relative to the reference device
        (gpu_driver.calibration), persisted per device and driver version so the figures are stable
        across restarts; ``gpu-driver calibrate`` re-measures them."""
        from . import calibration

        with self._lock:
            if self._capabilities is None:
                self._capabilities = calibration.capabilities(calibration.calibrate(self))
            return self._capabilities

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
    """A model prepared on an accelerator backend.

    Shape-static models are compiled here, once.  A model with unknown input dimensions is compiled
    per input-shape signature at the first execution that uses it (a *specialisation*: the whole
    launch list specialised for those shapes); specialisations are cached, at most
    MAX_SPECIALIZATIONS of them (least recently used evicted first).  Output shapes are those of the
    specialisation that ran.  A signature for which some operation is unsupported (a size-dependent
    condition of its lowering, see support_graph) fails its executions with GENERAL_FAILURE.
    """

    MAX_SPECIALIZATIONS = 16

    #: how long an execution polls for completion before blocking (see Backend.finish), per
    #: ExecutionPreference: LOW_POWER never busy-waits; otherwise up to 200 µs, which hides the
    #: wake-up of a blocked host thread for small models and is noise for large ones
    SPIN_NS = {ExecutionPreference.LOW_POWER: 0, ExecutionPreference.FAST_SINGLE_ANSWER: 200_000,
               ExecutionPreference.SUSTAINED_SPEED: 200_000}

    @property
    def spin_ns(self) -> int:
        return self.SPIN_NS.get(self.preference, 0)

    def __init__(self, device: AcceleratorDevice, model: Model, compiled=None):
        super().__init__(device, model)
        from .compiler.pipeline import compile_model, instantiate

        self.backend = device.backend
        # input-shape signature -> Specialization, least recently used first (bounded: MAX_SPECIALIZATIONS
        # besides the shape-static one, which is never evicted)
        self._specs: OrderedDict[tuple, Specialization] = OrderedDict()
        self._spec_lock = threading.Lock()
        self._compile_lock = threading.Lock()
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
        with self._spec_lock:
            spec = self._specs.get(sig)
            if spec is not None:
                self._specs.move_to_end(sig)
                return spec
        from .compiler.pipeline import compile_model, instantiate

        with self._compile_lock:  # one compilation at a time; executions of cached signatures go on
            with self._spec_lock:
                spec = self._specs.get(sig)
            if spec is None:
                if any(s is None for s in sig):
                    raise failure("omitted model inputs are not supported by the accelerator backends")
                try:
                    compiled = compile_model(self.model, self.backend, [list(s) for s in sig], check_support=True)
                    spec = Specialization(compiled, instantiate(self.backend, compiled.binary, compiled.plan,
                                                                compiled.constants))
                except DriverError as exc:
                    raise DriverError(exc.status, f"input shapes {[list(s) for s in sig]}: {exc.message}") from exc
                except Exception as exc:
                    raise failure(f"specialisation for input shapes {sig} failed: {exc}") from exc
            with self._spec_lock:
                self._specs[sig] = spec
                self._specs.move_to_end(sig)
                dynamic = [k for k, v in self._specs.items() if v is not self._static]
                for k in dynamic[:max(0, len(dynamic) - self.MAX_SPECIALIZATIONS)]:
                    del self._specs[k]
        return spec

    def _execute(self, request: Request, ctx: ExecutionContext) -> tuple[list[OutputShape], int | None]:
        spec = self._specialization(ctx.shapes.inputs)
        plan = spec.compiled.plan
        shapes = self.check_output_sizes(request, [out["shape"] for out in plan["outputs"]])  # before running
        exe = spec.exe
        # Copies and launches are only enqueued (in order); the host waits once at the end.  Each host
        # wait costs a wake-up of the device's workers (for PoCL on an idle VM ~50-100 µs), so one wait
        # instead of one per copy is most of the per-execution overhead of a small model.
        with spec.lock:
            staged = []  # host arrays read by enqueued uploads: alive until the wait
            for i, arg in enumerate(request.inputs):
                if arg.has_no_value:
                    continue
                staged.append(self.bind_input(i, arg, request.pools[arg.location.pool_index],
                                              exe.views[plan["inputs"][i]["key"]], plan["inputs"][i]["nbytes"],
                                              blocking=False))
            marks = exe.enqueue(timed=ctx.measure)
            word = exe.enqueue_status_read()
            if word is not None:
                self.backend.finish()
                exe.check_status(word)  # bad data seen by a kernel: GENERAL_FAILURE, no output delivered
            for i, arg in enumerate(request.outputs):
                self.bind_output(i, arg, request.pools[arg.location.pool_index], exe.output_buffers[i],
                                 plan["outputs"][i]["nbytes"], plan["outputs"][i]["shape"], blocking=False)
            self.backend.finish(self.spin_ns)
            device_ns = self.backend.elapsed_ns(marks) if ctx.measure else None
            del staged
        return shapes, device_ns

    # ---- pool binding (overridable: memory domains keep device-resident buffers) -----------------------
    def bind_input(self, index: int, arg, pool, buffer, nbytes: int, blocking: bool = True):
        """Make model input ``index`` available in ``buffer`` (default: copy from the request pool).

        With ``blocking=False`` the copy may only be enqueued: returns the host array it reads, which
        the caller keeps alive until the backend's ``finish``."""
        if nbytes == 0:
            return None
        if memory_domain.bind_device_input(self, arg, pool, buffer, nbytes):  # device-resident pools
            return None
        if isinstance(pool, Memory):
            data = np.frombuffer(pool.view(), dtype=np.uint8, count=nbytes, offset=arg.location.offset)
        else:
            value = np.asarray(self.device.read_buffer_token(pool))
            data = np.ascontiguousarray(value.astype(np.uint8) if value.dtype == np.bool_ else value)
        self.backend.upload(buffer, data, blocking=blocking)
        return data

    def bind_output(self, index: int, arg, pool, buffer, nbytes: int, shape, blocking: bool = True) -> None:
        """Deliver model output ``index`` from ``buffer`` (default: copy into the request pool).

        With ``blocking=False`` a copy straight into the pool may only be enqueued (complete after the
        backend's ``finish``)."""
        if memory_domain.bind_device_output(self, arg, pool, buffer, nbytes, shape):  # device-resident pools
            return
        if isinstance(pool, Memory):
            if nbytes == 0:
                return
            view = pool.view()
            if not view.readonly:
                out = np.frombuffer(view, dtype=np.uint8, count=nbytes, offset=arg.location.offset)
                self.backend.download(buffer, out, blocking=blocking)
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
