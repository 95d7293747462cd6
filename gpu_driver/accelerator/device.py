"""AcceleratorDevice: the HAL device on top of any backend (OpenCL, CUDA).

Backend-agnostic: everything runtime-specific is behind the parts of a
gpu_driver.backends.base.BackendDevice, whose allocator is also the device's (driver-managed buffers
live in its device memory).  Operation support is decided on the whole graph
(gpu_driver.compiler.support); preparation is AcceleratorPreparedModel's, or, for a model with IF,
WHILE or data-dependent output sizes, ControlFlowPreparedModel's, after WHILE loops with a trip
count known at preparation are unrolled (accelerator.loop_unrolling).
"""
from __future__ import annotations

import logging
from typing import Sequence

from .. import calibration
from ..compiler.artifact import CompiledModel
from ..compiler.support import supported_nodes
from ..errors import DriverError
from ..hal.model import Model
from ..hal.types import Capabilities, DeviceType, ExecutionPreference, Priority
from ..runtime.device import Device
from ..runtime.prepared_model import PreparedModel
from ..version import __version__
from .completion_watcher import CompletionWatcher
from .control_flow import ControlFlowPreparedModel, control_flow_support, has_control_flow
from .inline_queue import InlineQueue
from .loop_unrolling import unroll_static_loops
from .prepared_model import AcceleratorPreparedModel

log = logging.getLogger(__name__)


class AcceleratorDevice(Device):
    """A device of an accelerator backend: "opencl:N", "cuda:N"."""

    caches_compilations = True

    def __init__(self, name: str, backend, rank: int = 100):
        super().__init__(allocator=backend.allocator)  # driver-managed buffers live in backend device memory
        self.name = name
        self.rank = rank
        self.backend = backend
        self._capabilities: Capabilities | None = None
        #: finishes fenced executions as the device completes them
        self.completions = CompletionWatcher(backend.launcher, name)
        self._inline_queues: dict[int, InlineQueue] = {}

    def inline_queue(self, lane) -> InlineQueue:
        """The in-order queue of fenced work on ``lane``, a backend lane that runs in its caller."""
        with self._lock:
            queue = self._inline_queues.get(id(lane))
            if queue is None:
                queue = self._inline_queues[id(lane)] = InlineQueue(lane, self.name)
            return queue

    # ---- queries ---------------------------------------------------------------------------------
    def get_type(self) -> DeviceType:
        """HAL ``getType``: the backend device's kind."""
        return self.backend.device_type

    def get_version_string(self) -> str:
        """HAL ``getVersionString``: driver version, runtime, device and runtime versions."""
        b = self.backend
        return f"gpu_driver-{__version__}-{b.runtime}-{b.device_name} ({b.runtime_version})"

    def _support_list(self, model: Model) -> list[bool]:
        """Decided for the whole graph at once (fusion and shapes are graph-wide); with IF / WHILE, per
        segment of ordinary operations and per referenced subgraph (accelerator.control_flow)."""
        try:
            if has_control_flow(model):
                return control_flow_support(model, self.backend.features)
            return supported_nodes(model, self.backend.features)
        except DriverError:
            return [False] * len(model.main.operations)

    def get_capabilities(self) -> Capabilities:
        """HAL ``getCapabilities_1_3``: per operand type, measured time relative to the reference device
        (gpu_driver.calibration), persisted per device and driver version so the figures are stable
        across restarts; ``gpu-driver calibrate`` re-measures them."""
        with self._lock:
            if self._capabilities is None:
                self._capabilities = calibration.capabilities(calibration.calibrate(self))
            return self._capabilities

    # ---- preparation -----------------------------------------------------------------------------
    def _prepare(self, model: Model, preference: ExecutionPreference, priority: Priority, deadline_ns,
                 model_cache: Sequence, data_cache: Sequence, token) -> PreparedModel:
        unrolled = unroll_static_loops(model)
        if unrolled is not model:
            try:
                return self._prepare_flat_or_stepped(unrolled)
            except DriverError as exc:  # the loops still run, interpreted
                log.info("%s: the model with its WHILE loops unrolled failed to prepare (%s); "
                         "interpreting them", self.name, exc)
        return self._prepare_flat_or_stepped(model)

    def _prepare_flat_or_stepped(self, model: Model) -> PreparedModel:
        if has_control_flow(model):
            return ControlFlowPreparedModel(self, model)
        return AcceleratorPreparedModel(self, model)

    def load_prepared(self, compiled: CompiledModel, model: Model) -> AcceleratorPreparedModel:
        """Compilation cache (``prepareModelFromCache_1_3``): the compiled model instantiated, no compiling."""
        return AcceleratorPreparedModel(self, unroll_static_loops(model), compiled=compiled)
