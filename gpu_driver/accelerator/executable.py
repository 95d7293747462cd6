"""Executable: a CompiledModel instantiated on a backend device.

:func:`instantiate` loads the binary, allocates the planned buffers (one arena, one constant block,
one buffer per input / output / status word), uploads the constants and binds every launch's
arguments once; what an execution needs per model input and output is listed here too, so an
execution reads no plan.

Status word (plans whose kernels can fail): zeroed when instantiated; after each run
:meth:`Executable.check_status` reads it (one 4-byte download), re-zeroes it if it was set and raises
GENERAL_FAILURE with the message of the code a kernel stored.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.base import Allocator, DeviceBuffer, Launcher, Program
from ..compiler.artifact import CompiledModel, LaunchPlan
from ..errors import failure


@dataclass
class Executable:
    """Device buffers and bound launches of one compiled model."""

    plan: LaunchPlan
    allocator: Allocator
    launcher: Launcher
    program: Program | None = None
    launches: list = field(default_factory=list)
    views: dict[str, DeviceBuffer] = field(default_factory=dict)   # storage key -> buffer
    buffers: list[DeviceBuffer] = field(default_factory=list)      # the allocations
    inputs: list[tuple[DeviceBuffer, int]] = field(default_factory=list)               # per input: (buffer, nbytes)
    outputs: list[tuple[DeviceBuffer, int, list[int]]] = field(default_factory=list)   # (buffer, nbytes, shape)
    output_shapes: list[list[int]] = field(default_factory=list)
    status_buffer: DeviceBuffer | None = None
    launch_args: list[list[DeviceBuffer]] = field(default_factory=list)   # per launch, its bound buffers

    #: the launch lists of recent in-place bindings: the ids of the (model buffer, bound buffer) pairs ->
    #: (launches, the bound buffers); the list of no binding is the instantiated one
    bindings: OrderedDict = field(default_factory=OrderedDict)
    _uses: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    _in_place: dict[int, bool] = field(default_factory=dict)   # buffer id -> in_place_ok

    #: launch lists kept per binding (least recently used dropped first; each keeps its bound buffers
    #: alive): a state that ping-pongs between two memory-domain buffers alternates between two
    MAX_BINDINGS = 4

    def uses_of(self, buffer: DeviceBuffer) -> list[tuple[int, int]]:
        """(launch, argument position) of every launch argument of the plan bound to ``buffer``."""
        found = self._uses.get(id(buffer))
        if found is None:
            found = self._uses[id(buffer)] = [(li, ai) for li, args in enumerate(self.launch_args)
                                              for ai, a in enumerate(args) if a is buffer]
        return found

    def in_place_ok(self, buffer: DeviceBuffer) -> bool:
        """Whether a model input/output buffer can be replaced by another in the launch arguments: some
        launch uses it, and it holds one model input or output only (not an output aliasing an input,
        nor two outputs of the same value)."""
        ok = self._in_place.get(id(buffer))
        if ok is None:
            holders = sum(buffer is b for b, _ in self.inputs) + sum(buffer is b for b, _, _ in self.outputs)
            ok = self._in_place[id(buffer)] = holders == 1 and bool(self.uses_of(buffer))
        return ok

    def bind_in_place(self, pairs: list[tuple[DeviceBuffer, DeviceBuffer]]) -> None:
        """Before enqueueing: :attr:`launches` becomes the launch list with each model buffer ``old``
        replaced by ``new`` (a memory-domain buffer used in place: no copy), every other model buffer
        bound to itself.  Each binding's list is made once and kept (:attr:`MAX_BINDINGS`), so
        alternating between bindings sets no kernel argument; work already enqueued keeps its list.
        Callers hold the specialisation's lock."""
        key = tuple([id(b) for pair in pairs for b in pair])
        bindings = self.bindings
        entry = bindings.get(key)
        if entry is None:
            entry = bindings[key] = (self._bound_launches(pairs), pairs)
            if len(bindings) > self.MAX_BINDINGS + 1:  # never the instantiated list
                del bindings[next(k for k in bindings if k)]
        else:
            bindings.move_to_end(key)
        self.launches = entry[0]

    def _bound_launches(self, pairs: list[tuple[DeviceBuffer, DeviceBuffer]]) -> list:
        base = self.bindings[()][0]
        replaced = {id(old): new for old, new in pairs}
        launches = list(base)
        for li, args in enumerate(self.launch_args):
            if any(id(a) in replaced for a in args):
                k = self.plan.kernels[li]
                launches[li] = self.launcher.make_launch(self.program, k.name, [replaced.get(id(a), a) for a in args],
                                                         k.global_size, k.local_size)
        return launches

    def enqueue(self, timed: bool = False) -> Any:
        """Enqueue every launch without waiting; timing marks for the launcher's ``elapsed_ns``."""
        return self.launcher.enqueue(self.launches, timed)

    def enqueue_status_read(self) -> np.ndarray | None:
        """Enqueue the read of the status word (None when no kernel can fail); valid after finish."""
        if self.status_buffer is None:
            return None
        return self.allocator.download(self.status_buffer, np.zeros(1, dtype=np.int32), blocking=False)

    def check_status(self, word: np.ndarray | None = None) -> None:
        """After the run: GENERAL_FAILURE (naming the operation) if a kernel reported bad data.
        ``word`` is what :meth:`enqueue_status_read` returned (read now when not given)."""
        if self.status_buffer is None:
            return
        if word is None:
            word = self.allocator.download(self.status_buffer, np.zeros(1, dtype=np.int32))
        code = int(word[0])
        if code:
            self.allocator.upload(self.status_buffer, np.zeros(1, dtype=np.int32))
            message = self.plan.status.messages.get(code, f"kernel status code {code}")
            raise failure(f"execution failed: {message}")


def instantiate(backend, compiled: CompiledModel) -> Executable:
    """Load the binary on ``backend`` (a backends.base.BackendDevice; the lane the plan names),
    allocate the planned buffers, upload the constants, bind every launch's arguments."""
    backend = backend.lane(compiled.plan.lane)
    plan, allocator = compiled.plan, backend.allocator
    exe = Executable(plan, allocator, backend.launcher)
    arena = allocator.alloc(plan.arena_bytes) if plan.arena_bytes else None
    const = allocator.alloc(plan.const_bytes) if plan.const_bytes else None
    exe.buffers.extend(b for b in (arena, const) if b is not None)
    if const is not None:
        packed = np.zeros(plan.const_bytes, dtype=np.uint8)
        for key, arr in zip(plan.const_keys, compiled.constants):
            raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            off = plan.storage[key].offset
            packed[off:off + raw.size] = raw
        allocator.upload(const, packed)
    for key, slot in plan.storage.items():
        if slot.region == "arena":
            exe.views[key] = allocator.view(arena, slot.offset, slot.nbytes)
        elif slot.region == "const":
            exe.views[key] = allocator.view(const, slot.offset, slot.nbytes)
        else:
            buf = allocator.alloc(slot.nbytes)
            exe.buffers.append(buf)
            exe.views[key] = buf
    exe.inputs = [(exe.views[i.key], i.nbytes) for i in plan.inputs]
    exe.output_shapes = [list(o.shape) for o in plan.outputs]
    exe.outputs = [(exe.views[o.key], o.nbytes, shape) for o, shape in zip(plan.outputs, exe.output_shapes)]
    if plan.status is not None:
        exe.status_buffer = exe.views[plan.status.key]
        allocator.upload(exe.status_buffer, np.zeros(1, dtype=np.int32))
    if plan.kernels:
        exe.program = backend.launcher.load(compiled.binary, plan.kernel_names)
        exe.launch_args = [[exe.views[a] for a in k.args] for k in plan.kernels]
        exe.launches = [backend.launcher.make_launch(exe.program, k.name, args, k.global_size, k.local_size)
                        for k, args in zip(plan.kernels, exe.launch_args)]
    exe.bindings[()] = (exe.launches, ())
    return exe
