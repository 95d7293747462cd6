"""Operand specs and one-operation model construction for the accelerator tests."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import gpu_driver
from gpu_driver.hal.types import OperandType as OT, OperationType as OP  # noqa: F401

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
    """Random values of the spec's type: the full range of 8-bit types, [-100, 100) for int32,
    booleans, and [lo, hi) for float types (float16 rounded)."""
    if spec.type == Q8A:
        return rng.integers(0, 256, spec.shape).astype(np.uint8)
    if spec.type in (OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_QUANT8_SYMM, OT.TENSOR_QUANT8_SYMM_PER_CHANNEL):
        return rng.integers(-128, 128, spec.shape).astype(np.int8)
    if spec.type == I32T:
        return rng.integers(-100, 100, spec.shape).astype(np.int32)
    if spec.type == OT.TENSOR_BOOL8:
        return rng.integers(0, 2, spec.shape).astype(np.bool_)
    if spec.type == OT.TENSOR_QUANT16_SYMM:
        return rng.integers(-32768, 32768, spec.shape).astype(np.int16)
    if spec.type == OT.TENSOR_QUANT16_ASYMM:
        return rng.integers(0, 65536, spec.shape).astype(np.uint16)
    dtype = np.float16 if spec.type == OT.TENSOR_FLOAT16 else np.float32
    return rng.uniform(lo, hi, spec.shape).astype(dtype)
