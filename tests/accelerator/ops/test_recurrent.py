"""RNN, SVDF, LSTM (all option groups) on each accelerator device vs the reference; LSH_PROJECTION
with a runtime weight is supported."""
import itertools

import numpy as np
import pytest

from .harness import assert_close, check_op, run_model, run_reference
from .models import F32, OP, OT, Const, In, NoValue, Out, f32, i32, single_op


def _t(rng, *shape):
    return Const(F32, rng.uniform(-0.5, 0.5, shape))


@pytest.mark.parametrize("act", [0, 1, 3, 4, 6])
def test_rnn(accelerator, act):
    rng = np.random.default_rng(23)
    b, i, u = 3, 5, 7
    check_op(accelerator, OP.RNN,
             [In(F32, (b, i)), _t(rng, u, i), _t(rng, u, u), _t(rng, u), In(F32, (b, u)), i32(act)],
             [Out(F32), Out(F32)], rng)


@pytest.mark.parametrize("rank,memory,bias,act", [(1, 4, True, 0), (2, 3, False, 1), (2, 1, True, 6), (1, 2, True, 4)])
def test_svdf(accelerator, rank, memory, bias, act):
    rng = np.random.default_rng(24)
    b, i, u = 2, 5, 3
    f = u * rank
    check_op(accelerator, OP.SVDF,
             [In(F32, (b, i)), _t(rng, f, i), _t(rng, f, memory), _t(rng, u) if bias else NoValue(),
              In(F32, (b, memory * f)), i32(rank), i32(act)], [Out(F32), Out(F32)], rng)


@pytest.mark.parametrize("cifg,peephole,projection,layer_norm",
                         list(itertools.product([False, True], repeat=4)))
def test_lstm(accelerator, cifg, peephole, projection, layer_norm):
    rng = np.random.default_rng(25)
    b, i, u = 2, 5, 6
    o = 4 if projection else u
    absent = NoValue()
    args = [In(F32, (b, i)),
            absent if cifg else _t(rng, u, i), _t(rng, u, i), _t(rng, u, i), _t(rng, u, i),
            absent if cifg else _t(rng, u, o), _t(rng, u, o), _t(rng, u, o), _t(rng, u, o),
            _t(rng, u) if peephole and not cifg else absent, _t(rng, u) if peephole else absent,
            _t(rng, u) if peephole else absent,
            absent if cifg else _t(rng, u), _t(rng, u), _t(rng, u), _t(rng, u),
            _t(rng, o, u) if projection else absent, _t(rng, o) if projection else absent,
            In(F32, (b, o)), In(F32, (b, u)), i32(4 if not layer_norm else 6),
            f32(0.0 if projection else 0.8), f32(0.3 if projection else 0.0)]
    if layer_norm:
        args += [absent if cifg else _t(rng, u), _t(rng, u), _t(rng, u), _t(rng, u)]
    model, ins = single_op(OP.LSTM, args, [Out(F32), Out(F32), Out(F32), Out(F32)])
    assert all(accelerator.get_supported_operations(model))
    data = [rng.uniform(-1, 1, s.shape).astype(np.float32) for s in ins]
    exp = run_reference(model, data)
    act = run_model(accelerator, model, data)
    for k in (1, 2, 3):   # output 0 is a scratch buffer with unspecified content
        assert_close(act[k], exp[k], what=f"{accelerator.name} LSTM output {k}")


def test_lsh_projection_dense_with_runtime_weight_is_supported(accelerator):
    # FarmHash runs on the device (tests/accelerator/ops/test_lsh.py checks the values)
    model, _ = single_op(OP.LSH_PROJECTION, [Const(F32, np.ones((2, 3))), In(F32, (4, 2)), In(F32, (4,)), i32(2)],
                         [Out(OT.TENSOR_INT32)])
    assert accelerator.get_supported_operations(model) == [True]
