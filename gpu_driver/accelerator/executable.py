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

    #: the instantiated launch list; its arguments are rebound in place for a binding seen once
    base_launches: list = field(default_factory=list)
    #: model buffer id -> (model buffer, the buffer the base list's arguments are bound to now, its uses_of)
    bound_in_place: dict[int, tuple[DeviceBuffer, DeviceBuffer, list]] = field(default_factory=dict)
    #: launch lists of bindings that alternate: the ids of the (model buffer, bound buffer) pairs ->
    #: (launches, the pairs, kept alive so that the ids stay theirs)
    alternates: OrderedDict = field(default_factory=OrderedDict)
    _recent: tuple = ((), ())   # the keys of the two bindings before this one
    _uses: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    _in_place: dict[int, bool] = field(default_factory=dict)   # buffer id -> in_place_ok

    #: alternating bindings kept with a launch list of their own (least recently used dropped first)
    MAX_ALTERNATES = 4

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
        """Before enqueueing: :attr:`launches` becomes a launch list with each model buffer ``old``
        bound to ``new`` (a memory-domain buffer used in place: no copy), every other model buffer to
        itself.  A binding that alternates with another (a state ping-ponging between two buffers: the
        binding of two executions ago again) gets a launch list of its own, made once, so switching
        sets no kernel argument; any other binding rebinds the arguments of the instantiated list that
        changed (work already enqueued keeps its arguments).  Callers hold the specialisation's lock."""
        key = tuple([id(b) for pair in pairs for b in pair])
        alternates = self.alternates
        entry = alternates.get(key)
        if entry is not None:
            alternates.move_to_end(key)
        elif key and key == self._recent[0]:
            entry = alternates[key] = (self._bound_launches(pairs), pairs)
            if len(alternates) > self.MAX_ALTERNATES:
                alternates.popitem(last=False)
        self._recent = (self._recent[1], key)
        if entry is not None:
            self.launches = entry[0]
            return
        self.launches = self.base_launches
        bound = self.bound_in_place
        if len(pairs) == len(bound):  # the usual case: the same model buffers as last time
            rebind = self.launcher.rebind
            for old, new in pairs:
                now = bound.get(id(old))
                if now is None:
                    break
                if now[1] is not new:
                    for li, ai in now[2]:
                        rebind(self.base_launches[li], ai, new)
                    bound[id(old)] = (old, new, now[2])
            else:
                return
        wanted = {id(old): (old, new) for old, new in pairs}
        for key, (old, _now, _uses) in list(bound.items()):
            if key not in wanted:
                self._bind(old, old)
                del bound[key]
        for key, (old, new) in wanted.items():
            if bound.get(key, (old, old))[1] is not new:
                self._bind(old, new)
                bound[key] = (old, new, self.uses_of(old))

    def _bind(self, old: DeviceBuffer, new: DeviceBuffer) -> None:
        for li, ai in self.uses_of(old):
            self.launcher.rebind(self.base_launches[li], ai, new)

    def _bound_launches(self, pairs: list[tuple[DeviceBuffer, DeviceBuffer]]) -> list:
        """A new launch list with the model buffers of ``pairs`` replaced (launches using none shared)."""
        replaced = {id(old): new for old, new in pairs}
        launches = list(self.base_launches)
        for li, args in enumerate(self.launch_args):
            if any(id(a) in replaced for a in args):
                launches[li] = self.make_launch(li, [replaced.get(id(a), a) for a in args])
        return launches

    def make_launch(self, index: int, args: list[DeviceBuffer]) -> Any:
        """A launch of the plan's kernel ``index`` bound to ``args``."""
        k = self.plan.kernels[index]
        return self.launcher.make_launch(self.program, k.name, args, k.global_size, k.local_size)

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
        exe.launches = [exe.make_launch(li, args) for li, args in enumerate(exe.launch_args)]
    exe.base_launches = exe.launches
    return exe
