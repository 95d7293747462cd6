"""RNN, SVDF, LSTM (all option groups) on each accelerator device vs the reference; LSH_PROJECTION
with a runtime weight is supported."""
import itertools

import numpy as np
import pytest

from .harness import assert_close, check_op, run_model, run_reference
from .models import F32, OP, OT, Const, In, NoValue, Out, Scalar, f32, i32, single_op


def _t(rng, *shape, type=F32):
    return Const(type, rng.uniform(-0.5, 0.5, shape).astype(np.float16 if type == OT.TENSOR_FLOAT16 else np.float32))


@pytest.mark.parametrize("act", [0, 1, 3, 4, 6])
def test_rnn(accelerator, act):
    rng = np.random.default_rng(23)
    b, i, u = 3, 5, 7
    check_op(accelerator, OP.RNN,
             [In(F32, (b, i)), _t(rng, u, i), _t(rng, u, u), _t(rng, u), In(F32, (b, u)), i32(act)],
             [Out(F32), Out(F32)], rng)


@pytest.mark.parametrize("type", [F32, OT.TENSOR_FLOAT16])
@pytest.mark.parametrize("rank,memory,bias,act", [(1, 4, True, 0), (2, 3, False, 1), (2, 1, True, 6), (1, 2, True, 4)])
def test_svdf(accelerator, rank, memory, bias, act, type):
    rng = np.random.default_rng(24)
    b, i, u = 2, 5, 3
    f = u * rank
    tol = dict(atol=2e-3, rtol=2e-3) if type == OT.TENSOR_FLOAT16 else {}
    check_op(accelerator, OP.SVDF,
             [In(type, (b, i)), _t(rng, f, i, type=type), _t(rng, f, memory, type=type),
              _t(rng, u, type=type) if bias else NoValue(type), In(type, (b, memory * f)), i32(rank), i32(act)],
             [Out(type), Out(type)], rng, **tol)


F16 = OT.TENSOR_FLOAT16
# every option combination in float32; in float16 the plain cell and everything at once
LSTM_CASES = [(F32, *flags) for flags in itertools.product([False, True], repeat=4)] + \
    [(F16, False, False, False, False), (F16, False, True, True, True), (F16, True, True, False, True)]


@pytest.mark.parametrize("type,cifg,peephole,projection,layer_norm", LSTM_CASES)
def test_lstm(accelerator, type, cifg, peephole, projection, layer_norm):
    rng = np.random.default_rng(25)
    b, i, u = 2, 5, 6
    o = 4 if projection else u
    absent = NoValue(type)
    t = lambda *shape: _t(rng, *shape, type=type)  # noqa: E731
    clip = lambda v: Scalar(OT.FLOAT16, v) if type == F16 else f32(v)  # noqa: E731
    args = [In(type, (b, i)),
            absent if cifg else t(u, i), t(u, i), t(u, i), t(u, i),
            absent if cifg else t(u, o), t(u, o), t(u, o), t(u, o),
            t(u) if peephole and not cifg else absent, t(u) if peephole else absent,
            t(u) if peephole else absent,
            absent if cifg else t(u), t(u), t(u), t(u),
            t(o, u) if projection else absent, t(o) if projection else absent,
            In(type, (b, o)), In(type, (b, u)), i32(4 if not layer_norm else 6),
            clip(0.0 if projection else 0.8), clip(0.3 if projection else 0.0)]
    if layer_norm:
        args += [absent if cifg else t(u), t(u), t(u), t(u)]
    model, ins = single_op(OP.LSTM, args, [Out(type), Out(type), Out(type), Out(type)])
    assert all(accelerator.get_supported_operations(model))
    dtype = np.float16 if type == F16 else np.float32
    data = [rng.uniform(-1, 1, s.shape).astype(dtype) for s in ins]
    exp = run_reference(model, data)
    act = run_model(accelerator, model, data)
    tol = dict(atol=2e-3, rtol=2e-3) if type == F16 else {}
    for k in (1, 2, 3):   # output 0 is a scratch buffer with unspecified content
        assert_close(act[k], exp[k], what=f"{accelerator.name} LSTM output {k}", **tol)


def test_lsh_projection_dense_with_runtime_weight_is_supported(accelerator):
    # FarmHash runs on the device (tests/accelerator/ops/test_lsh.py checks the values)
    model, _ = single_op(OP.LSH_PROJECTION, [Const(F32, np.ones((2, 3))), In(F32, (4, 2)), In(F32, (4,)), i32(2)],
                         [Out(OT.TENSOR_INT32)])
    assert accelerator.get_supported_operations(model) == [True]
