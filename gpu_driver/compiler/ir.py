"""The kernel-level IR between lowering and code generation.

Lowering turns each graph node (gpu_driver.graph.Node, with params decoded by its operation
definition) into one or more :class:`KernelInstance` s: a kernel template from ``opencl_kernels/ops/``
plus the literal values that specialise it.  Tensors are referred to by :class:`TensorId`; the memory
planner later gives every temporary an offset in an arena, and code generation emits one program per
model in which every instance is a uniquely named kernel function.

Kernel calling convention (both dialects, see opencl_kernels/prelude.h and cuda_kernels/prelude.cuh):
the kernel's parameters are the instance's ``inputs`` then ``outputs``, in order, each a pointer to
its element type (``GLOBAL const T*`` for inputs, ``GLOBAL T*`` for outputs) — nothing else.  Every
size, stride, quantisation constant and activation bound is a literal substituted into the template
(``${NAME}`` placeholders, string.Template syntax).  ``${KERNEL_NAME}`` is always provided.

Execution-time errors (the status word): a kernel that can detect bad data (an index out of range…)
takes ``ctx.status(reason)`` — a TensorId of kind "status" — as its LAST output, a ``GLOBAL int*``
to one int32 that is zero at the start of every execution.  On bad data the kernel stores the node's
code (``ctx.status_code``, a ${STATUS_CODE} literal) with a plain store (any non-zero value wins;
no atomics needed) and should still write defined output values (e.g. zeros).  After the run the
driver reads the word and fails the execution with GENERAL_FAILURE and the registered reason, so
the outputs are never reported.  Only models with such kernels pay the 4-byte read.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np

from ..hal.types import OperandType

# C element type per operand type, as spelled in the shared kernel dialect
C_TYPES: dict[OperandType, str] = {
    OperandType.TENSOR_FLOAT32: "float",
    OperandType.TENSOR_INT32: "int",
    OperandType.TENSOR_QUANT8_ASYMM: "uchar",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "char",
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: "char",
    OperandType.TENSOR_QUANT8_SYMM: "char",
    OperandType.TENSOR_BOOL8: "uchar",
    OperandType.TENSOR_FLOAT16: "half",  # stored as half, loaded with LOAD_HALF/STORE_HALF
    OperandType.TENSOR_QUANT16_SYMM: "short",
    OperandType.TENSOR_QUANT16_ASYMM: "ushort",
}


@dataclass(frozen=True)
class TensorId:
    """A tensor in device memory.

    kind: "operand" (an operand of the subgraph, by index), "const" (a lowering-made constant, e.g.
    repacked weights or a requantisation table, by index into LoweredModel.constants) or "scratch"
    (a lowering-made temporary, by index into LoweredModel.scratch) or "status" (the execution's
    status word, index 0; see the module docstring).
    """

    kind: str
    index: int


class Work(enum.Enum):
    """The shape of a kernel's parallel work, as its lowering states it.  Each backend's launch tuning
    maps it (with the global size) to a local size at compilation; every kernel bounds-checks, and
    except for GROUP_TILES (whose work groups share local memory) the local size only tunes speed."""

    ELEMENTS = "elements"              # 1-D, one work item per element
    ROWS = "rows"                      # 1-D, one work item per row it reduces (heavier items)
    REGISTER_TILES = "register_tiles"  # (channel blocks, pixel blocks, rows): one register tile per item
    CHANNEL_LANES = "channel_lanes"    # (channels, pixel blocks, rows): consecutive channels side by side
    GRID = "grid"                      # any other 1-3-D grid: the backend's default
    CHUNKS = "chunks"                  # few work items, each reducing a long range of its own
    GROUP_TILES = "group_tiles"        # (column groups, row groups) of exactly GROUP_TILE_ITEMS work
                                       # items each, cooperating through local memory


#: the local size of every Work.GROUP_TILES launch (the kernels are written for it)
GROUP_TILE_ITEMS = (16, 16, 1)


@dataclass
class ScratchTensor:
    dtype: np.dtype
    count: int  # elements


@dataclass
class KernelInstance:
    """One launch of one specialised kernel."""

    template: str                                   # file name under opencl_kernels/ops/, e.g. "conv.cl"
    defines: dict[str, Union[int, float, str]]      # ${NAME} substitutions (KERNEL_NAME is added by codegen)
    inputs: list[TensorId]
    outputs: list[TensorId]
    global_size: tuple[int, ...]                    # work items per dimension (1–3 dims)
    work: Work = Work.GRID                          # the shape of the work (the local size follows from it)
    node: int = -1                                  # graph node it came from (for profiling / debugging)
    name: str = ""                                  # unique kernel function name, filled by codegen


@dataclass
class DataDependentKernel:
    """The launch of an operation whose output sizes depend on the data (BOX_WITH_NMS_LIMIT…): one
    kernel whose parameters are the op inputs at ``input_positions``, scratch buffers of
    ``scratch_bytes``, the outputs at their largest (``max_output_bytes``) and a one-int32 counter.
    The kernel stores the number of rows it produced in the counter (negative: bad data, failing
    the execution with ``error``); ``shapes(count)`` gives the outputs' shapes."""

    template: str
    defines: dict[str, Union[int, float, str]]
    input_positions: list[int]
    scratch_bytes: list[int]
    max_output_bytes: list[int]
    shapes: Callable[[int], list[tuple[int, ...]]]
    error: str
    global_size: tuple[int, ...] = (1,)


@dataclass
class LoweredModel:
    """The kernel list of a subgraph plus the constants and scratch tensors lowering created."""

    kernels: list[KernelInstance] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    scratch: list[ScratchTensor] = field(default_factory=list)
    # operand index -> the operand whose storage it aliases (reshape-like ops lower to no kernel)
    aliases: dict[int, int] = field(default_factory=dict)
    # status code a kernel may store in the status word -> message naming the operation
    status_messages: dict[int, str] = field(default_factory=dict)


def c_literal(value) -> str:
    """A value as a C literal for template substitution (floats exact via %a-style hex floats avoided:
    use repr of a float32 with an 'f' suffix so both dialects parse it)."""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(np.float32(value))
        if np.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return repr(v) + "f" if "e" in repr(v) or "." in repr(v) else repr(v) + ".0f"
    return str(value)
