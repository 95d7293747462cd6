"""Test helpers: one-operation models on the reference device, and an independent scalar oracle.

The oracle (plain Python ints and loops, following operands.md §4/§5/§8) deliberately does not use
``gpu_driver.quant`` or any kernel code, so it can check them.
"""
from __future__ import annotations

import math

import numpy as np

import gpu_driver as gd
from gpu_driver import OperandType as OT
from gpu_driver.hal.model import SymmPerChannelQuantParams
from gpu_driver.hal.types import OPERAND_TYPE_INFO

F32 = OT.TENSOR_FLOAT32
F16 = OT.TENSOR_FLOAT16
I32 = OT.TENSOR_INT32
Q8A = OT.TENSOR_QUANT8_ASYMM
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
PC8 = OT.TENSOR_QUANT8_SYMM_PER_CHANNEL

QRANGE = {Q8A: (0, 255), Q8AS: (-128, 127), PC8: (-128, 127)}


class T:
    """A tensor argument: a model input (fed at execution) unless ``const``."""

    def __init__(self, type, value, scale=0.0, zp=0, const=False, channel_scales=None, channel_dim=0, shape=None):
        self.type = type
        self.value = np.asarray(value)
        self.shape = tuple(shape) if shape is not None else self.value.shape
        self.scale = scale
        self.zp = zp
        self.const = const
        self.cq = (SymmPerChannelQuantParams(list(channel_scales), channel_dim)
                   if channel_scales is not None else None)


def build(op, args, out_type, out_shape, out_scale=0.0, out_zp=0):
    """A one-operation model; ``args``: T tensors, int (INT32), bool (BOOL) scalars.  Returns
    (prepared model, feed list)."""
    b = gd.ModelBuilder()
    idx, feed = [], []
    for a in args:
        if isinstance(a, T):
            if a.const:
                idx.append(b.add_constant(a.type, a.shape, a.value.reshape(a.shape), a.scale, a.zp, a.cq))
            else:
                idx.append(b.add_input(a.type, a.shape, a.scale, a.zp, a.cq))
                feed.append(a.value.reshape(a.shape).astype(OPERAND_TYPE_INFO[a.type].dtype))
        elif isinstance(a, bool):
            idx.append(b.add_scalar(OT.BOOL, a))
        elif isinstance(a, int):
            idx.append(b.add_scalar(OT.INT32, a))
        else:
            raise TypeError(a)
    out = b.add_operand(out_type, out_shape, out_scale, out_zp)
    b.add_operation(op, idx, [out])
    b.set_outputs([out])
    return gd.get_device("reference").prepare_model(b.finish()), feed


def run(op, args, out_type, out_shape, out_scale=0.0, out_zp=0):
    prepared, feed = build(op, args, out_type, out_shape, out_scale, out_zp)
    return prepared.execute(feed)[0]


def assert_float(actual, expected, f16=False):
    expected = np.asarray(expected, dtype=np.float64)
    tol = 5 * 2.0 ** -10 if f16 else 1e-5
    rtol = 5 * 2.0 ** -10 if f16 else 5 * 2.0 ** -23
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64).reshape(expected.shape), expected,
                               atol=tol, rtol=rtol)


def assert_exact(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual).astype(np.int64).ravel(),
                                  np.asarray(expected).astype(np.int64).ravel())


# ---- independent scalar oracle ------------------------------------------------------------------------

def round_away(x: float) -> int:
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def q_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, operands.md §8.4."""
    if real == 0.0:
        return 0, 0
    q, e = math.frexp(real)
    qf = round_away(q * 2 ** 31)
    if qf == 2 ** 31:
        qf //= 2
        e += 1
    if e < -31:
        return 0, 0
    return qf, e


def _srdhm(a: int, b: int) -> int:
    if a == b == -2 ** 31:
        return 2 ** 31 - 1
    p = a * b
    s = p + (2 ** 30 if p >= 0 else 1 - 2 ** 30)
    return abs(s) // 2 ** 31 * (1 if s >= 0 else -1)  # truncating division


def _rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


def mbqm(x: int, m: int, shift: int) -> int:
    x = x * 2 ** max(shift, 0)
    return _rdbpot(_srdhm(x, m), max(-shift, 0))


def f32(x: float) -> float:
    return float(np.float32(x))


def requant(acc: int, s_in: float, s_w: float, s_out: float, zp_out: int) -> int:
    m, e = q_multiplier(f32(np.float32(s_in) * np.float32(s_w)) / f32(s_out))
    return zp_out + mbqm(acc, m, e)


def act_float(v: float, act: int) -> float:
    lo, hi = {0: (-math.inf, math.inf), 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}[act]
    return min(max(v, lo), hi)


def act_quant(v: int, act: int, scale: float, zp: int, qmin: int, qmax: int) -> int:
    def qa(x):
        return zp + round_away(x / f32(scale))
    lo, hi = {0: (qmin, qmax), 1: (max(qmin, qa(0.0)), qmax), 2: (max(qmin, qa(-1.0)), min(qmax, qa(1.0))),
              3: (max(qmin, qa(0.0)), min(qmax, qa(6.0)))}[act]
    return min(max(v, lo), hi)


def same_pad(size: int, stride: int, k: int, d: int = 1) -> tuple[int, int]:
    """SAME padding (operands.md §5) written out for the oracle."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (k - 1) * d + 1 - size)
    return total // 2, total - total // 2


def naive_conv(x, w, b, pads, strides, dil=(1, 1), act=0, depthwise=False, mult=1, quant=None):
    """Loops over NHWC ``x``; conv filter [O,KH,KW,C] or depthwise [1,KH,KW,C·M].

    pads = (left, right, top, bottom); strides / dil = (w, h).  ``quant``: dict with s_in, zp_in,
    s_w (float or per-channel list), zp_w, s_out, zp_out, qmin, qmax — integer arithmetic then.
    """
    n_, h_, w_, c_ = x.shape
    _, kh, kw, _ = w.shape
    oc = w.shape[3] if depthwise else w.shape[0]
    pl, pr, pt, pb = pads
    sw, sh = strides
    dw, dh = dil
    oh = (h_ + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w_ + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((n_, oh, ow, oc), dtype=np.float64 if quant is None else np.int64)
    xl, wl, bl = x.tolist(), w.tolist(), b.tolist()
    zi = quant["zp_in"] if quant else 0
    zw = quant["zp_w"] if quant else 0
    for n in range(n_):
        for y in range(oh):
            for xx in range(ow):
                for o in range(oc):
                    acc = bl[o]
                    for i in range(kh):
                        for j in range(kw):
                            iy, ix = y * sh - pt + i * dh, xx * sw - pl + j * dw
                            if not (0 <= iy < h_ and 0 <= ix < w_):
                                continue
                            if depthwise:
                                acc += (xl[n][iy][ix][o // mult] - zi) * (wl[0][i][j][o] - zw)
                            else:
                                for c in range(c_):
                                    acc += (xl[n][iy][ix][c] - zi) * (wl[o][i][j][c] - zw)
                    if quant is None:
                        out[n, y, xx, o] = act_float(acc, act)
                    else:
                        s_w = quant["s_w"][o] if isinstance(quant["s_w"], (list, tuple)) else quant["s_w"]
                        r = requant(acc, quant["s_in"], s_w, quant["s_out"], quant["zp_out"])
                        r = min(max(r, quant["qmin"]), quant["qmax"])
                        out[n, y, xx, o] = act_quant(r, act, quant["s_out"], quant["zp_out"], quant["qmin"],
                                                     quant["qmax"])
    return out


def run_direct(op, args, out_type, out_scale=0.0, out_zp=0):
    """Run definition + kernel directly on TensorInfos (for cases a Request cannot carry, such as a
    zero-sized input, which in a real model comes from an earlier operation)."""
    from gpu_driver.ops.catalog import lookup
    from gpu_driver.ops.definition import TensorInfo

    infos = []
    for a in args:
        if isinstance(a, T):
            dtype = OPERAND_TYPE_INFO[a.type].dtype
            infos.append(TensorInfo(a.type, a.shape, a.scale, a.zp, a.cq, a.value.reshape(a.shape).astype(dtype)))
        elif isinstance(a, bool):
            infos.append(TensorInfo(OT.BOOL, (), value=a))
        else:
            infos.append(TensorInfo(OT.INT32, (), value=a))
    outs = [TensorInfo(out_type, None, out_scale, out_zp, known_shape=False)]
    entry = lookup(op)
    return entry.reference(entry.define(infos, outs), infos, outs)[0]
