"""IF and WHILE on each accelerator device: a WHILE loop whose body holds an LSTM step (checked
against an LSTM written out in numpy here), interpreted with the state staying in device memory
between iterations (only each condition's boolean comes back) and unrolled when its trip count is
constant, IF choosing a branch, and the loop timeout."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.accelerator.control_flow import ControlFlowPreparedModel
from gpu_driver.hal.types import ErrorStatus, OperandType as T, OperationType as O

B, I, U, STEPS = 2, 3, 4, 5


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _lstm_reference(x, h, c, w, r, bias, steps):
    """The basic LSTM cell (no CIFG, peephole, projection or clipping; tanh), gates in NNAPI's order
    input, forget, cell, output, applied ``steps`` times to the same input."""
    for _ in range(steps):
        gates = [x @ w[k].T + h @ r[k].T + bias[k] for k in range(4)]
        i, f, g, o = _sigmoid(gates[0]), _sigmoid(gates[1]), np.tanh(gates[2]), _sigmoid(gates[3])
        c = f * c + i * g
        h = o * np.tanh(c)
    return h, c


def _weights(seed=7):
    rng = np.random.default_rng(seed)
    w = rng.uniform(-0.5, 0.5, (4, U, I)).astype(np.float32)
    r = rng.uniform(-0.5, 0.5, (4, U, U)).astype(np.float32)
    bias = rng.uniform(-0.2, 0.2, (4, U)).astype(np.float32)
    return w, r, bias


def _state_inputs(b):
    """counter [1] int32, h [B, U], c [B, U], x [B, I]: the loop's state and its invariant input."""
    return (b.add_input(T.TENSOR_INT32, [1]), b.add_input(T.TENSOR_FLOAT32, [B, U]),
            b.add_input(T.TENSOR_FLOAT32, [B, U]), b.add_input(T.TENSOR_FLOAT32, [B, I]))


def while_lstm_model(steps=STEPS, weights=None, start_input=False):
    """``start_input``: the counter starts from a model input (the first), not the constant 0, so
    the trip count is not known at preparation and the loop is not unrolled."""
    w, r, bias = weights or _weights()
    cond = gd.ModelBuilder()
    counter, _h, _c, _x = _state_inputs(cond)
    flag = cond.add_operand(T.TENSOR_BOOL8, [1])
    cond.add_operation(O.LESS, [counter, cond.add_constant(T.TENSOR_INT32, [1], np.array([steps], np.int32))], [flag])
    cond.set_outputs([flag])

    body = gd.ModelBuilder()
    counter, h, c, x = _state_inputs(body)
    nxt = body.add_operand(T.TENSOR_INT32, [1])
    body.add_operation(O.ADD, [counter, body.add_constant(T.TENSOR_INT32, [1], np.array([1], np.int32)),
                               body.add_scalar(T.INT32, 0)], [nxt])
    const = lambda a: body.add_constant(T.TENSOR_FLOAT32, list(a.shape), a)  # noqa: E731
    none = lambda *d: body.add_no_value(T.TENSOR_FLOAT32, list(d))  # noqa: E731
    args = [x, *[const(w[k]) for k in range(4)], *[const(r[k]) for k in range(4)], none(U), none(U), none(U),
            *[const(bias[k]) for k in range(4)], none(U, U), none(U), h, c, body.add_scalar(T.INT32, 4),
            body.add_scalar(T.FLOAT32, 0.0), body.add_scalar(T.FLOAT32, 0.0)]
    outs = [body.add_operand(T.TENSOR_FLOAT32, [B, 4 * U])] + [body.add_operand(T.TENSOR_FLOAT32, [B, U])
                                                                for _ in range(3)]
    body.add_operation(O.LSTM, args, outs)
    body.set_outputs([nxt, outs[1], outs[2]])

    main = gd.ModelBuilder()
    start = main.add_input(T.TENSOR_INT32, [1]) if start_input else None
    h0, c0, x = (main.add_input(T.TENSOR_FLOAT32, s) for s in ([B, U], [B, U], [B, I]))
    if start is None:
        start = main.add_constant(T.TENSOR_INT32, [1], np.array([0], np.int32))
    results = [main.add_operand(T.TENSOR_INT32, [1]), main.add_operand(T.TENSOR_FLOAT32, [B, U]),
               main.add_operand(T.TENSOR_FLOAT32, [B, U])]
    main.add_operation(O.WHILE, [main.add_subgraph(cond), main.add_subgraph(body), start, h0, c0, x], results)
    main.set_outputs(results)
    return main.finish()


def _feeds(seed=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s).astype(np.float32) for s in ((B, U), (B, U), (B, I))]


def test_while_loop_of_lstm_steps(accelerator):
    model = while_lstm_model(start_input=True)
    assert accelerator.get_supported_operations(model) == [True]
    h0, c0, x = _feeds()
    counters = accelerator.backend.allocator.counters
    prepared = accelerator.prepare_model(model)
    counters.reset()
    count, h, c = prepared.execute([np.zeros(1, np.int32), h0, c0, x])
    moved = counters.snapshot()
    want_h, want_c = _lstm_reference(x, h0, c0, *_weights(), STEPS)
    assert count.tolist() == [STEPS]
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)
    # the state never comes back to the host inside the loop: what is downloaded is the final
    # outputs and the one-byte boolean of each of the STEPS + 1 condition evaluations
    final = count.nbytes + h.nbytes + c.nbytes
    assert moved["d2h_bytes"] == final + STEPS + 1, moved


def test_static_while_loop_is_unrolled(accelerator):
    # the counter starts at the constant 0 and the condition compares it with a constant: the loop
    # runs STEPS times whatever the inputs, and compiles as one flat program
    h0, c0, x = _feeds(6)
    counters = accelerator.backend.allocator.counters
    prepared = accelerator.prepare_model(while_lstm_model())
    assert not isinstance(prepared, ControlFlowPreparedModel)
    counters.reset()
    count, h, c = prepared.execute([h0, c0, x])
    moved = counters.snapshot()
    want_h, want_c = _lstm_reference(x, h0, c0, *_weights(), STEPS)
    assert count.tolist() == [STEPS]
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)
    assert moved["d2h_bytes"] == count.nbytes + h.nbytes + c.nbytes, moved   # no condition read back


def test_while_loop_of_lstm_steps_on_the_reference_device():
    h0, c0, x = _feeds(5)
    count, h, c = gd.get_device("reference").prepare_model(while_lstm_model()).execute([h0, c0, x])
    want_h, want_c = _lstm_reference(x, h0, c0, *_weights(), STEPS)
    assert count.tolist() == [STEPS]
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)


def test_reference_device_agrees(accelerator):
    model = while_lstm_model(steps=3)
    feeds = _feeds(4)
    want = gd.get_device("reference").prepare_model(model).execute(feeds)
    got = accelerator.prepare_model(model).execute(feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_loop_timeout(accelerator):
    model = while_lstm_model(steps=10 ** 9)
    prepared = accelerator.prepare_model(model)
    with pytest.raises(gd.DriverError) as err:
        prepared.execute(_feeds(), loop_timeout_duration=20_000_000)  # 20 ms
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT


def test_if_chooses_a_branch(accelerator):
    # out = x + 1 when the condition holds, x * 3 otherwise
    branches = []
    for op, k in ((O.ADD, 1.0), (O.MUL, 3.0)):
        br = gd.ModelBuilder()
        bx = br.add_input(T.TENSOR_FLOAT32, [2, 2])
        bo = br.add_operand(T.TENSOR_FLOAT32, [2, 2])
        br.add_operation(op, [bx, br.add_constant(T.TENSOR_FLOAT32, [1], np.array([k], np.float32)),
                              br.add_scalar(T.INT32, 0)], [bo])
        br.set_outputs([bo])
        branches.append(br)
    b = gd.ModelBuilder()
    cond, x = b.add_input(T.TENSOR_BOOL8, [1]), b.add_input(T.TENSOR_FLOAT32, [2, 2])
    out = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.IF, [cond, b.add_subgraph(branches[0]), b.add_subgraph(branches[1]), x], [out])
    b.set_outputs([out])
    prepared = accelerator.prepare_model(b.finish())
    xv = np.array([[1, 2], [3, 4]], np.float32)
    np.testing.assert_array_equal(prepared.execute([np.array([True]), xv])[0], [[2, 3], [4, 5]])
    np.testing.assert_array_equal(prepared.execute([np.array([False]), xv])[0], [[3, 6], [9, 12]])
