"""The sequence forms of the recurrent cells on the reference device, hand-worked with one unit and
one input feature: time-major and batch-major layouts, both directions, merged outputs, final states,
and the three linkings of the auxiliary input; invalid instances are INVALID_ARGUMENT."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_driver
from gpu_driver import ErrorStatus, ModelBuilder, OperandType as T, OperationType as O

F32, I32, BOOL = T.TENSOR_FLOAT32, T.INT32, T.BOOL
X = [1.0, 0.0, -1.0]          # three steps, batch 1, one feature


def _run(model, feeds):
    return gpu_driver.get_device("reference").prepare_model(model).execute(feeds)


def _const(b, v):
    v = np.asarray(v, np.float32)
    return b.add_constant(F32, list(v.shape), v.reshape(-1))


def _rnn_cell(b, w, r, bias):
    """Weights [[w]], recurrent weights [[r]], bias [bias], initial state [[0]]."""
    return [_const(b, [[w]]), _const(b, [[r]]), _const(b, [bias]), _const(b, [[0.0]])]


# ---- UNIDIRECTIONAL_SEQUENCE_RNN: h_t = x_t·2 + h_{t−1}·0.5 + 1, no activation -----------------------
#   h1 = 2 + 0 + 1 = 3;  h2 = 0 + 1.5 + 1 = 2.5;  h3 = −2 + 1.25 + 1 = 0.25

@pytest.mark.parametrize("time_major", [1, 0])
def test_unidirectional_rnn_hand_worked(time_major):
    b = ModelBuilder()
    shape = [3, 1, 1] if time_major else [1, 3, 1]
    x = b.add_input(F32, shape)
    ins = [x] + _rnn_cell(b, 2.0, 0.5, 1.0) + [b.add_scalar(I32, 0), b.add_scalar(I32, time_major)]
    out, state = b.add_operand(F32, shape), b.add_operand(F32, [1, 1])
    b.add_operation(O.UNIDIRECTIONAL_SEQUENCE_RNN, ins, [out, state]).set_outputs([out, state])
    y, h = _run(b.finish(), [np.asarray(X, np.float32).reshape(shape)])
    np.testing.assert_allclose(y.reshape(-1), [3.0, 2.5, 0.25])
    np.testing.assert_allclose(h, [[0.25]])


# ---- BIDIRECTIONAL_SEQUENCE_RNN: forward as above; backward h_t = x_t + h_{t+1} (+ aux) -------------------

def _bidirectional_rnn(merge: bool, aux=None, aux_weights=(None, None), outputs=None):
    b = ModelBuilder()
    x = b.add_input(F32, [3, 1, 1])
    ins = [x] + _rnn_cell(b, 2.0, 0.5, 1.0) + _rnn_cell(b, 1.0, 1.0, 0.0)
    ins.append(_const(b, np.asarray(aux, np.float32).reshape(3, 1, 1)) if aux is not None
               else b.add_no_value(F32, [3, 1, 1]))
    ins += [_const(b, [[w]]) if w is not None else b.add_no_value(F32, [1, 1]) for w in aux_weights]
    ins += [b.add_scalar(I32, 0), b.add_scalar(BOOL, True), b.add_scalar(BOOL, merge)]
    n = outputs or (1 if merge else 2)
    outs = [b.add_operand(F32, []) for _ in range(n)]
    b.add_operation(O.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs).set_outputs(outs)
    return b.finish()


def test_bidirectional_rnn_merged():
    # backward over t = 2, 1, 0: −1, −1 + 0 = −1, 1 − 1 = 0 → outputs at t: [0, −1, −1]
    (y,) = _run(_bidirectional_rnn(merge=True), [np.asarray(X, np.float32).reshape(3, 1, 1)])
    np.testing.assert_allclose(y.reshape(3, 2), [[3.0, 0.0], [2.5, -1.0], [0.25, -1.0]])


def test_bidirectional_rnn_separate_outputs_and_final_states():
    fw, bw, fw_h, bw_h = _run(_bidirectional_rnn(merge=False, outputs=4), [np.asarray(X, np.float32).reshape(3, 1, 1)])
    np.testing.assert_allclose(fw.reshape(-1), [3.0, 2.5, 0.25])
    np.testing.assert_allclose(bw.reshape(-1), [0.0, -1.0, -1.0])
    np.testing.assert_allclose([fw_h.item(), bw_h.item()], [0.25, 0.0])   # bw ends at t = 0


def test_bidirectional_rnn_parallel_linking_feeds_the_aux_input_backward():
    # aux [2, 2, 2] without aux weights: the backward cell reads it: t2: 2, t1: 4, t0: 6
    fw, bw = _run(_bidirectional_rnn(merge=False, aux=[2.0, 2.0, 2.0]), [np.asarray(X, np.float32).reshape(3, 1, 1)])
    np.testing.assert_allclose(fw.reshape(-1), [3.0, 2.5, 0.25])
    np.testing.assert_allclose(bw.reshape(-1), [6.0, 4.0, 2.0])


def test_bidirectional_rnn_cross_linking_adds_the_weighted_aux_input():
    # aux [1, 1, 1], forward aux weight 1: h1 = 3 + 1 = 4; h2 = 0 + 2 + 1 + 1 = 4; h3 = −2 + 2 + 1 + 1 = 2
    fw, bw = _run(_bidirectional_rnn(merge=False, aux=[1.0, 1.0, 1.0], aux_weights=(1.0, 0.0)),
                  [np.asarray(X, np.float32).reshape(3, 1, 1)])
    np.testing.assert_allclose(fw.reshape(-1), [4.0, 4.0, 2.0])
    np.testing.assert_allclose(bw.reshape(-1), [0.0, -1.0, -1.0])


@pytest.mark.parametrize("build", [
    lambda: _bidirectional_rnn(merge=False, aux_weights=(1.0, 1.0)),      # aux weights without aux input
    lambda: _bidirectional_rnn(merge=True, outputs=2),                    # merged outputs are one tensor
], ids=["aux_weights_without_aux_input", "merged_with_two_outputs"])
def test_bidirectional_rnn_invalid(build):
    with pytest.raises(gpu_driver.DriverError) as err:
        _run(build(), [np.asarray(X, np.float32).reshape(3, 1, 1)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


# ---- UNIDIRECTIONAL_SEQUENCE_LSTM: one CIFG unit whose only non-zero weight is input→cell = 1 -------------
#   f = σ(0) = ½, i = 1 − f = ½, o = ½, c_t = ½·c_{t−1} + ½·tanh(x_t), h_t = ½·tanh(c_t)

def test_unidirectional_lstm_hand_worked():
    b = ModelBuilder()
    x = b.add_input(F32, [2, 1, 1])
    zero11, one11, zero1 = [[0.0]], [[1.0]], [0.0]
    cell = [None, zero11, one11, zero11,            # input weights to i (CIFG: none), f, c, o
            None, zero11, zero11, zero11,           # recurrent weights
            None, None, None,                       # no peephole
            None, zero1, zero1, zero1,              # biases (CIFG: no input gate bias)
            None, None]                             # no projection
    ins = [x] + [_const(b, v) if v is not None else b.add_no_value(F32, [1]) for v in cell]
    ins += [_const(b, [[0.0]]), _const(b, [[0.0]]),                      # h0, c0
            b.add_scalar(I32, 4), b.add_scalar(T.FLOAT32, 0.0), b.add_scalar(T.FLOAT32, 0.0),
            b.add_scalar(BOOL, True)] + [b.add_no_value(F32, [1]) for _ in range(4)]
    outs = [b.add_operand(F32, [2, 1, 1]), b.add_operand(F32, [1, 1]), b.add_operand(F32, [1, 1])]
    b.add_operation(O.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, outs).set_outputs(outs)
    y, h, c = _run(b.finish(), [np.array([1.0, 1.0], np.float32).reshape(2, 1, 1)])
    c1 = 0.5 * math.tanh(1.0)
    c2 = 0.5 * c1 + 0.5 * math.tanh(1.0)
    np.testing.assert_allclose(y.reshape(-1), [0.5 * math.tanh(c1), 0.5 * math.tanh(c2)], rtol=1e-6)
    np.testing.assert_allclose([h.item(), c.item()], [0.5 * math.tanh(c2), c2], rtol=1e-6)

