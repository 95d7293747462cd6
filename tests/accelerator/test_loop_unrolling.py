"""Unrolling WHILE loops whose trip count is known at preparation (accelerator/loop_unrolling.py):
which loops qualify, the operations that replace them, and the results on each accelerator device
against values worked out by hand.  The Keras recurrent models that reach TF Lite as such loops
are run in tests/tflite/test_keras_models.py."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.accelerator import loop_unrolling
from gpu_driver.accelerator.control_flow import ControlFlowPreparedModel
from gpu_driver.accelerator.loop_unrolling import unroll_static_loops
from gpu_driver.hal.types import OperandType as T, OperationType as O

from .test_control_flow import STEPS, while_lstm_model


def _i32(b, v):
    return b.add_constant(T.TENSOR_INT32, [1], np.array([v], np.int32))


def counting_loop(trips: int, step: float = 1.0, inner: int | None = None, limit_input: bool = False):
    """x → x + step, ``trips`` times (counter i from 0 while i < trips; the limit is an input-only
    operand of the loop); with ``inner``, the body's addition is itself a loop of ``inner``
    additions; ``limit_input``: the trip count is a model input.  Returns the main, condition and
    body builders."""
    def state(b):
        return b.add_input(T.TENSOR_INT32, [1]), b.add_input(T.TENSOR_FLOAT32, [2, 3]), \
            b.add_input(T.TENSOR_INT32, [1])

    cond = gd.ModelBuilder()
    i, _x, limit = state(cond)
    flag = cond.add_operand(T.TENSOR_BOOL8, [1])
    cond.add_operation(O.LESS, [i, limit], [flag])
    cond.set_outputs([flag])

    body = gd.ModelBuilder()
    i, x, limit = state(body)
    nxt = body.add_operand(T.TENSOR_INT32, [1])
    body.add_operation(O.ADD, [i, _i32(body, 1), body.add_scalar(T.INT32, 0)], [nxt])
    y = body.add_operand(T.TENSOR_FLOAT32, [2, 3])
    if inner is None:
        body.add_operation(O.ADD, [x, body.add_constant(T.TENSOR_FLOAT32, [1], np.array([step], np.float32)),
                                   body.add_scalar(T.INT32, 0)], [y])
    else:
        sub_cond, sub_body = counting_loop(inner, step)[1:]
        done = body.add_operand(T.TENSOR_INT32, [1])
        body.add_operation(O.WHILE, [body.add_subgraph(sub_cond), body.add_subgraph(sub_body), _i32(body, 0), x,
                                     _i32(body, inner)], [done, y])
    body.set_outputs([nxt, y])

    main = gd.ModelBuilder()
    limit = main.add_input(T.TENSOR_INT32, [1]) if limit_input else _i32(main, trips)
    x0 = main.add_input(T.TENSOR_FLOAT32, [2, 3])
    count, out = main.add_operand(T.TENSOR_INT32, [1]), main.add_operand(T.TENSOR_FLOAT32, [2, 3])
    main.add_operation(O.WHILE, [main.add_subgraph(cond), main.add_subgraph(body), _i32(main, 0), x0, limit],
                       [count, out])
    main.set_outputs([out, count])
    return main, cond, body


def _types(model):
    return [op.type for op in model.main.operations]


def test_a_constant_trip_count_unrolls_and_folds_the_counter():
    model = while_lstm_model(steps=STEPS)
    values = bytes(model.operand_values)
    unrolled = unroll_static_loops(model)
    # STEPS LSTM cells; the counter's additions fold into constants except the last, which writes
    # the loop's counter output (a model output)
    assert sorted(t.name for t in _types(unrolled)) == sorted(["LSTM"] * STEPS + ["ADD"])
    assert _types(model) == [O.WHILE] and model.operand_values == values   # the caller's model is kept


@pytest.mark.parametrize("kind", ["data-dependent", "endless", "zero trips"])
def test_loops_that_stay_interpreted(kind):
    model = {"data-dependent": lambda: while_lstm_model(start_input=True),
             "endless": lambda: while_lstm_model(steps=10 ** 9),
             "zero trips": lambda: while_lstm_model(steps=0)}[kind]()
    assert unroll_static_loops(model) is model


def test_a_loop_past_the_trip_limit_stays_interpreted(monkeypatch):
    monkeypatch.setattr(loop_unrolling, "MAX_TRIP_COUNT", STEPS - 1)
    model = while_lstm_model(steps=STEPS)
    assert unroll_static_loops(model) is model


def test_a_loop_past_the_operation_limit_stays_interpreted(monkeypatch):
    monkeypatch.setattr(loop_unrolling, "MAX_UNROLLED_OPERATIONS", 2 * STEPS - 1)
    model = while_lstm_model(steps=STEPS)
    assert unroll_static_loops(model) is model


def test_counting_loop_on_the_accelerator(accelerator):
    main, _, _ = counting_loop(4, step=0.5)
    model = main.finish()
    assert _types(unroll_static_loops(model)).count(O.WHILE) == 0
    prepared = accelerator.prepare_model(model)
    assert not isinstance(prepared, ControlFlowPreparedModel)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out, count = prepared.execute([x])
    np.testing.assert_array_equal(out, x + 2.0)     # 4 × 0.5
    assert count.tolist() == [4]


def test_nested_static_loops_unroll_completely(accelerator):
    main, _, _ = counting_loop(3, step=0.25, inner=2)
    model = main.finish()
    assert _types(unroll_static_loops(model)) == [O.ADD] * 6 + [O.ADD]   # 3 × 2 additions, the last counter
    x = np.full((2, 3), -1.0, np.float32)
    out, count = accelerator.prepare_model(model).execute([x])
    np.testing.assert_array_equal(out, x + 1.5)     # 3 × 2 × 0.25
    assert count.tolist() == [3]


def test_a_trip_count_from_a_model_input_is_interpreted(accelerator):
    main, _, _ = counting_loop(0, step=2.0, limit_input=True)
    model = main.finish()
    assert unroll_static_loops(model) is model
    prepared = accelerator.prepare_model(model)
    assert isinstance(prepared, ControlFlowPreparedModel)
    x = np.ones((2, 3), np.float32)
    out, count = prepared.execute([np.array([3], np.int32), x])
    np.testing.assert_array_equal(out, x + 6.0)
    assert count.tolist() == [3]


def test_the_unrolled_model_comes_back_from_the_private_cache(accelerator, monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "1")
    main, _, _ = counting_loop(5, step=1.0)
    model = main.finish()
    x = np.zeros((2, 3), np.float32)
    first = accelerator.prepare_model(model).execute([x])
    again = accelerator.prepare_model(model)          # a hit: loaded, not compiled
    out, count = again.execute([x])
    np.testing.assert_array_equal(out, np.full((2, 3), 5.0, np.float32))
    np.testing.assert_array_equal(out, first[0])
    assert count.tolist() == [5]


def test_a_model_the_unrolled_form_cannot_prepare_is_interpreted(accelerator, monkeypatch):
    # should the unrolled model fail to prepare (here: its first operation made to read an operand
    # that does not exist), the loops run interpreted, as before unrolling
    import gpu_driver.accelerator.device as device_module
    from gpu_driver.hal.model import Operation

    def broken(model):
        unrolled = unroll_static_loops(model)
        if unrolled is model:      # the interpreted loop's segments are prepared as models too
            return model
        first = unrolled.main.operations[0]
        missing = len(unrolled.main.operands)
        unrolled.main.operations[0] = Operation(first.type, [missing, *first.inputs[1:]], first.outputs)
        return unrolled

    monkeypatch.setattr(device_module, "unroll_static_loops", broken)
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    main, _, _ = counting_loop(3, step=2.0)
    prepared = accelerator.prepare_model(main.finish())
    assert isinstance(prepared, ControlFlowPreparedModel)
    out, count = prepared.execute([np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(out, np.full((2, 3), 7.0, np.float32))
    assert count.tolist() == [3]
