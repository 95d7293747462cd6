"""RELU/RELU1/RELU6/LOGISTIC/TANH/ELU/HARD_SWISH/FLOOR/SOFTMAX/LOG_SOFTMAX/DEQUANTIZE on each accelerator
device vs the reference, for every operand type the operations allow.

Several operations share one model (one program to compile).  Quantized results are exact; float32
within the CTS tolerance; float16 within one half ulp step.
"""
import numpy as np
import pytest

import gpu_driver
from gpu_driver.hal.model import SymmPerChannelQuantParams

from .harness import compare
from .models import F32, OP, OT, Q8A, In, Out, Scalar, f32, i32, random_data

F16, Q8AS = OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED
Q8S, PC8 = OT.TENSOR_QUANT8_SYMM, OT.TENSOR_QUANT8_SYMM_PER_CHANNEL
F16_RTOL = 2.0 ** -10


def multi_op(entries):
    """A model of independent operations: ``entries`` = [(op, args, outs)], args In / Scalar specs (an In
    may carry ``channel_quant`` as a fourth tuple item: (In, SymmPerChannelQuantParams)).
    Returns (model, the In specs in input order)."""
    m = gpu_driver.ModelBuilder()
    ins, outputs = [], []
    for op, args, outs in entries:
        idx = []
        for a in args:
            cq = None
            if isinstance(a, tuple):
                a, cq = a
            if isinstance(a, In):
                idx.append(m.add_input(a.type, a.shape, a.scale, a.zp, cq))
                ins.append(a)
            elif isinstance(a, Scalar):
                idx.append(m.add_scalar(a.type, a.value))
            else:
                raise TypeError(a)
        oidx = [m.add_operand(o.type, o.shape, o.scale, o.zp) for o in outs]
        m.add_operation(op, idx, oidx)
        outputs.extend(oidx)
    m.set_outputs(outputs)
    return m.finish(), ins


def check_ops(device, entries, rng, data=None, **tol):
    """Build ``entries`` as one model, assert ``device`` supports every operation, compare with the reference."""
    model, ins = multi_op(entries)
    assert all(device.get_supported_operations(model)), f"not supported by {device.name}"
    inputs = data(ins) if data is not None else [random_data(s, rng, -8.0, 8.0) for s in ins]
    return compare(device, model, inputs, **tol)


def f16(v):
    return Scalar(OT.FLOAT16, float(v))


def _float_entries(t, shape):
    alpha = f16 if t == F16 else f32
    return [(op, [In(t, shape)], [Out(t)]) for op in (OP.RELU, OP.RELU1, OP.RELU6, OP.LOGISTIC, OP.TANH,
                                                       OP.HARD_SWISH, OP.FLOOR)] + [
        (OP.ELU, [In(t, shape), alpha(0.7)], [Out(t)]),
        (OP.SOFTMAX, [In(t, shape), alpha(0.5)], [Out(t)]),
        (OP.SOFTMAX, [In(t, shape), alpha(1.0), i32(1)], [Out(t)]),
        (OP.LOG_SOFTMAX, [In(t, shape), alpha(1.3), i32(-1)], [Out(t)]),
        (OP.LOG_SOFTMAX, [In(t, shape), alpha(0.4), i32(0)], [Out(t)]),
        (OP.ELU, [In(t, (2, 1, 3, 2, 2)), alpha(1.0)], [Out(t)]),          # rank 5
        (OP.HARD_SWISH, [In(t, (2, 1, 3, 2, 2))], [Out(t)]),
        (OP.LOG_SOFTMAX, [In(t, (2, 1, 3, 2, 2)), alpha(1.0), i32(2)], [Out(t)]),
    ]


def test_float32(accelerator):
    check_ops(accelerator, _float_entries(F32, (2, 3, 5, 7)), np.random.default_rng(3))


def test_float16(accelerator):
    check_ops(accelerator, _float_entries(F16, (2, 3, 5, 7)), np.random.default_rng(4), rtol=F16_RTOL, atol=1e-3)


@pytest.mark.parametrize("t", [Q8A, Q8AS])
def test_quant8(accelerator, t):
    zp0 = 0 if t == Q8A else -128
    shape = (2, 4, 32)
    entries = []
    for scale, zp in [(0.05, 100), (0.1, 0), (0.02, 255)]:
        x = In(t, shape, scale, zp + zp0)
        entries += [(op, [x], [Out(t, scale, zp + zp0)]) for op in (OP.RELU, OP.RELU1, OP.RELU6)]
        entries += [(OP.LOGISTIC, [x], [Out(t, 1 / 256, zp0)]), (OP.TANH, [x], [Out(t, 1 / 128, 128 + zp0)]),
                    (OP.SOFTMAX, [x, f32(1.0)], [Out(t, 1 / 256, zp0)]),
                    (OP.SOFTMAX, [x, f32(0.3), i32(1)], [Out(t, 1 / 256, zp0)]),
                    (OP.DEQUANTIZE, [x], [Out(F32)])]
    for (s_in, z_in), (s_out, z_out) in [((0.078125, 128), (0.078125, 128)), ((0.078125, 128), (0.03125, 0)),
                                         ((0.02, 50), (0.05, 10)), ((0.5, 120), (0.25, 135))]:
        entries.append((OP.HARD_SWISH, [In(t, (3, 2, 2, 2, 4), s_in, z_in + zp0)], [Out(t, s_out, z_out + zp0)]))
    # a long softmax row of near-equal values: the sum of exponentials needs a right shift beyond 31
    entries.append((OP.SOFTMAX, [In(t, (2, 700), 0.01, zp0 + 10), f32(1.0)], [Out(t, 1 / 256, zp0)]))

    def data(ins):
        rng = np.random.default_rng(5)
        arrays = [random_data(s, rng) for s in ins]
        arrays[-1] = (np.full((2, 700), 200 + zp0) - rng.integers(0, 3, (2, 700))).astype(arrays[-1].dtype)
        return arrays

    check_ops(accelerator, entries, None, data=data)


def test_dequantize_types(accelerator):
    shape = (2, 3, 4, 5)
    pc1 = SymmPerChannelQuantParams(scales=[0.5, 0.25, 2.0], channel_dim=1)
    pc3 = SymmPerChannelQuantParams(scales=[0.1, 0.2, 0.3, 0.4, 0.5], channel_dim=3)
    entries = [(OP.DEQUANTIZE, [In(Q8A, shape, 0.37, 11)], [Out(F32)]),
               (OP.DEQUANTIZE, [In(Q8AS, shape, 0.37, -11)], [Out(F32)]),
               (OP.DEQUANTIZE, [In(Q8S, shape, 0.2, 0)], [Out(F32)]),
               (OP.DEQUANTIZE, [(In(PC8, shape), pc1)], [Out(F32)]),
               (OP.DEQUANTIZE, [(In(PC8, shape), pc3)], [Out(F32)])]
    check_ops(accelerator, entries, np.random.default_rng(6))
    half = [(op, args, [Out(F16)]) for op, args, _ in entries]
    check_ops(accelerator, half, np.random.default_rng(7), rtol=F16_RTOL, atol=1e-3)


@pytest.mark.parametrize("t", [F32, F16, Q8A, Q8AS])
def test_softmax_rows_in_work_groups(accelerator, monkeypatch, t):
    """Rows fewer than the device's min_work_items and at least SOFTMAX_GROUP_AXIS long (a classifier's
    1001 scores on a GPU) take one work group each, forced here on every device: rows longer than the
    group (1001), shorter (100), along an inner axis; quant8 exact, float within rounding."""
    from gpu_driver.ops.activation import SOFTMAX_GROUP_AXIS

    monkeypatch.setattr(accelerator.backend.tuning, "min_work_items", 256)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    quant = t in (Q8A, Q8AS)
    zp0 = -128 if t == Q8AS else 0

    def x(shape):
        return In(t, shape, 0.05, zp0 + 120) if quant else In(t, shape)

    def out():
        return Out(t, 1 / 256, zp0) if quant else Out(t)

    beta = f16 if t == F16 else f32
    entries = [(OP.SOFTMAX, [x((1, 1001)), beta(1.0)], [out()]),
               (OP.SOFTMAX, [x((3, 100)), beta(0.7)], [out()]),
               (OP.SOFTMAX, [x((2, 300, 3)), beta(1.0), i32(1)], [out()])]
    if not quant:
        entries.append((OP.LOG_SOFTMAX, [x((2, 1001)), beta(1.3), i32(-1)], [out()]))
    assert min(a[0].shape[-1] for _, a, _ in entries[:2]) >= SOFTMAX_GROUP_AXIS
    tol = dict(rtol=F16_RTOL, atol=1e-3) if t == F16 else {}
    check_ops(accelerator, entries, np.random.default_rng(9), **tol)
