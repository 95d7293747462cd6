"""The compiled artifact: what preparation produces and the compilation cache stores.

A :class:`CompiledModel` is the device binary, the :class:`LaunchPlan` (which kernel runs on which
buffers, how device memory is laid out, where the model's inputs and outputs live) and the constants
to upload.  The compiler produces it without touching a device; gpu_driver.accelerator.executable
instantiates it on a backend device; gpu_driver.cache.format encodes it.

Storage keys: ``o<N>`` operand N (after alias resolution), ``c<N>`` lowering-made constant N,
``s<N>`` scratch tensor N, ``st`` the status word.  Regions (:data:`REGIONS`): "arena" (planned
temporaries and scratch, with reuse), "const" (packed constants), "input" / "output" (one device
buffer each), "status" (one int32, only when some kernel can fail: see ``LoweringContext.status``).

Status word: a kernel that detects bad data at execution (e.g. an out-of-range lookup index) stores
its non-zero code there; :attr:`StatusWord.messages` maps each code to a message naming the operation.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: the storage regions of a launch plan
REGIONS = ("arena", "const", "input", "output", "status")


@dataclass(frozen=True)
class KernelLaunch:
    """One launch: kernel ``name`` of the program on the storage ``args`` (inputs then outputs)."""

    name: str
    args: tuple[str, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None   # resolved by the backend's launch tuning; None: the runtime picks
    node: int                            # graph node it came from (profiling, debugging)
    template: str                        # kernel template it was generated from


@dataclass(frozen=True)
class StorageSlot:
    """Where one storage key lives: its region, size and byte offset inside the arena or the constants."""

    region: str
    nbytes: int
    offset: int = 0


@dataclass(frozen=True)
class IOBinding:
    """A model input or output: its storage key, byte size and shape."""

    key: str
    nbytes: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class StatusWord:
    """The status word's storage key and the message of each code a kernel may store there."""

    key: str
    messages: dict[int, str]


@dataclass
class LaunchPlan:
    """The launch list and the memory plan of one compiled model."""

    kernels: list[KernelLaunch]            # in execution order
    storage: dict[str, StorageSlot]
    const_keys: list[str]                  # storage key of each constant, in the order of the constants
    const_bytes: int                       # size of the packed constant block
    arena_bytes: int                       # size of the arena (temporaries with reuse)
    naive_arena_bytes: int                 # what the temporaries would take without reuse
    inputs: list[IOBinding]
    outputs: list[IOBinding]
    status: StatusWord | None = None       # only when some kernel can fail
    lane: str = ""                         # the backend lane the binary is for (BackendDevice.lane)

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return [i.shape for i in self.inputs]

    @property
    def kernel_names(self) -> list[str]:
        """The program's distinct kernels, in the order of their first launch."""
        return list(dict.fromkeys(k.name for k in self.kernels))

    @property
    def num_buffers(self) -> int:
        """Device allocations: the arena, the constant block, one per input / output / status slot."""
        own = sum(1 for s in self.storage.values() if s.region in ("input", "output", "status"))
        return (1 if self.arena_bytes else 0) + (1 if self.const_bytes else 0) + own


@dataclass
class CompiledModel:
    """A device binary, its launch plan (None for a device that runs without one) and the constants."""

    binary: bytes
    plan: LaunchPlan | None
    constants: list[np.ndarray] = field(default_factory=list)
    source: str = ""                       # the program source (introspection; not cached)
