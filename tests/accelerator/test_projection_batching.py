"""Batched input projections (compiler/projection_batching.py): per-step FULLY_CONNECTEDs of single
rows of one tensor, sharing constant weights, bias and activation, become one FULLY_CONNECTED whose
rows the steps' element-wise operations read in place.  Values against float64 numpy."""
import numpy as np

import gpu_driver as gd
from gpu_driver import OperandType as T, OperationType as O
from gpu_driver.compiler.pipeline import prepare_graph

from .helpers import opencl_device

F32 = T.TENSOR_FLOAT32
STEPS, K, UNITS = 3, 5, 4


def _steps_model(rng, shared_weights=True, raw_last=False):
    """seq [STEPS, 1, K]; step t: GATHER(seq, 0, [t]) → RESHAPE [1, K] → FULLY_CONNECTED (RELU) →
    TANH, each step's TANH a model output (``raw_last``: the last step's FULLY_CONNECTED output itself)."""
    b = gd.ModelBuilder()
    seq = b.add_input(F32, [STEPS, 1, K])
    weights = [rng.uniform(-1, 1, (UNITS, K)).astype(np.float32) for _ in range(1 if shared_weights else STEPS)]
    bias = rng.uniform(-0.5, 0.5, UNITS).astype(np.float32)
    w_ops = [b.add_constant(F32, [UNITS, K], w) for w in weights]
    b_op = b.add_constant(F32, [UNITS], bias)
    shape = b.add_constant(T.TENSOR_INT32, [2], np.array([1, K], np.int32))
    outs = []
    for t in range(STEPS):
        row = b.add_operand(F32, [1, 1, K])
        b.add_operation(O.GATHER, [seq, b.add_scalar(T.INT32, 0),
                                   b.add_constant(T.TENSOR_INT32, [1], np.array([t], np.int32))], [row])
        flat = b.add_operand(F32, [1, K])
        b.add_operation(O.RESHAPE, [row, shape], [flat])
        fc = b.add_operand(F32, [1, UNITS])
        b.add_operation(O.FULLY_CONNECTED, [flat, w_ops[t % len(w_ops)], b_op, b.add_scalar(T.INT32, 1)], [fc])
        if raw_last and t == STEPS - 1:
            outs.append(fc)
            continue
        out = b.add_operand(F32, [1, UNITS])
        b.add_operation(O.TANH, [fc], [out])
        outs.append(out)
    b.set_outputs(outs)
    return b.finish(), weights, bias


def _expected(seq, weights, bias, raw_last=False):
    outs = []
    for t in range(STEPS):
        w = weights[t % len(weights)].astype(np.float64)
        v = np.maximum(seq[t].astype(np.float64) @ w.T + bias, 0.0)
        outs.append(v if raw_last and t == STEPS - 1 else np.tanh(v))
    return outs


def test_steps_share_one_product():
    rng = np.random.default_rng(51)
    model, weights, bias = _steps_model(rng)
    seq = rng.uniform(-2, 2, (STEPS, 1, K)).astype(np.float32)
    pm = opencl_device().prepare_model(model)
    for got, want in zip(pm.execute([seq]), _expected(seq, weights, bias)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    types = [n.type for n in prepare_graph(model).nodes]
    assert types.count(O.FULLY_CONNECTED) == 1 and O.GATHER not in types and O.SLICE not in types
    assert pm.memory_plan["kernels"] == 1 + STEPS   # the product, then each step's TANH reading its row


def test_a_step_whose_product_is_an_output_copies_its_row():
    rng = np.random.default_rng(52)
    model, weights, bias = _steps_model(rng, raw_last=True)
    seq = rng.uniform(-2, 2, (STEPS, 1, K)).astype(np.float32)
    pm = opencl_device().prepare_model(model)
    for got, want in zip(pm.execute([seq]), _expected(seq, weights, bias, raw_last=True)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    types = [n.type for n in prepare_graph(model).nodes]
    assert types.count(O.FULLY_CONNECTED) == 1 and types.count(O.SLICE) == 1


def test_steps_with_their_own_weights_stay_apart():
    rng = np.random.default_rng(53)
    model, weights, bias = _steps_model(rng, shared_weights=False)
    seq = rng.uniform(-2, 2, (STEPS, 1, K)).astype(np.float32)
    pm = opencl_device().prepare_model(model)
    for got, want in zip(pm.execute([seq]), _expected(seq, weights, bias)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert [n.type for n in prepare_graph(model).nodes].count(O.FULLY_CONNECTED) == STEPS
