"""Build and run one-operation models on the reference device (shared by the op-family tests)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pytest

import gpu_driver
from gpu_driver import DriverError, ModelBuilder, OperandType as T

I32S, F32S, F16S, BOOL = T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL


@dataclass
class In:
    """A model input (its value is passed to run_op's feeds, in order)."""

    type: T
    dims: Sequence[int]
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: Any = None


@dataclass
class Const:
    """A constant operand (scalar when dims is empty)."""

    type: T
    value: Any
    dims: Sequence[int] = ()
    scale: float = 0.0
    zero_point: int = 0


@dataclass
class Out:
    type: T
    dims: Sequence[int] = field(default_factory=list)
    scale: float = 0.0
    zero_point: int = 0


def i32(v) -> Const:
    return Const(I32S, v)


def f32(v) -> Const:
    return Const(F32S, v)


def boolean(v) -> Const:
    return Const(BOOL, v)


def build(op, ins: Sequence, outs: Sequence):
    b = ModelBuilder()
    idx = []
    for spec in ins:
        if isinstance(spec, In):
            idx.append(b.add_input(spec.type, spec.dims, spec.scale, spec.zero_point, spec.channel_quant))
        else:
            idx.append(b.add_constant(spec.type, spec.dims, spec.value, spec.scale, spec.zero_point))
    out_idx = [b.add_operand(o.type, o.dims, o.scale, o.zero_point) for o in outs]
    b.add_operation(op, idx, out_idx)
    b.set_outputs(out_idx)
    return b.finish()


def run_op(op, ins: Sequence, outs: Sequence, feeds: Sequence) -> list[np.ndarray]:
    """Run ``op`` with the given operand specs on the reference device; returns the outputs."""
    model = build(op, ins, outs)
    return gpu_driver.get_device("reference").prepare_model(model).execute(list(feeds))


def run1(op, ins, out: Out, *feeds) -> np.ndarray:
    return run_op(op, ins, [out], feeds)[0]


def expect_status(status, fn, *args, **kwargs) -> DriverError:
    with pytest.raises(DriverError) as info:
        fn(*args, **kwargs)
    assert info.value.status == status, str(info.value)
    return info.value


def random_shape_axis(rng: np.random.Generator, max_dim: int) -> tuple[tuple[int, ...], int]:
    """A random shape of rank 1–4 (dims 1…max_dim) and a random axis in [−rank, rank)."""
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, max_dim + 1, size=rank))
    return shape, int(rng.integers(-rank, rank))


def run_executor(op, ins: Sequence, outs: Sequence, feeds: Sequence) -> list[np.ndarray]:
    """Run through the reference executor directly (no request validation): lets tests feed
    zero-sized inputs, which a request cannot carry."""
    from gpu_driver.reference.executor import ReferenceExecutor

    return ReferenceExecutor(build(op, ins, outs)).run(list(feeds))
