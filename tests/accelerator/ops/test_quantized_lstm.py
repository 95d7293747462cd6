"""The quantized LSTM cells on each accelerator device against the reference device, bit for bit
(data of the AOSP specs from tests/reference/test_quantized_lstm.py):

- the 8-bit-in, 16-bit-state cell (operation 73): the AOSP spec step, and random configurations —
  input size below, equal to and above the output size (the fused [recurrent ‖ input] row against
  [x ‖ h_prev]), saturated gates, wrapping int32 accumulators, weights as model inputs, a batch known
  only at execution;
- the 8x8→16 integer LSTM (operation 95): the AOSP spec steps, the peephole/projection/clipping step
  AOSP's QLSTM.cpp computed, every combination of CIFG, peephole, projection and layer norm on random
  data with cell scales inside and outside tanh's range of integer bits, optional tensors omitted by
  the request.
"""
import itertools

import numpy as np
import pytest

import gpu_driver
from gpu_driver.hal.types import OperandLifeTime
from tests.reference.test_quantized_lstm import (ACT, BIASES, PEEP, QL_SCALARS, QL_STATE, QL_X, SPEC_C_OUT,
                                                 SPEC_C_PREV, SPEC_H_OUT, SPEC_H_PREV, SPEC_X, STATE, W_SCALE,
                                                 W_ZP, WEIGHTS, _ql_tensors)

from .harness import check_op, compare
from .models import I32T, OP, OT, Q8A, Const, In, Out, single_op

Q16S, Q8AS, Q8S = OT.TENSOR_QUANT16_SYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_QUANT8_SYMM
CELL16, QLSTM = OP(73), OP(95)


def _cell16_args(batch, n_in, n_out, weights, biases, w_scale, w_zp, weights_as_inputs=False):
    """x, 8 weights, 4 biases, c_prev, h_prev: weights and biases constants, or model inputs."""
    def w(values, rows, cols):
        return In(Q8A, (rows, cols), w_scale, w_zp) if weights_as_inputs else \
            Const(Q8A, np.asarray(values, np.uint8).reshape(rows, cols), w_scale, w_zp)

    def b(values):
        return In(I32T, (n_out,), w_scale / 128) if weights_as_inputs else \
            Const(I32T, np.asarray(values, np.int32), w_scale / 128)

    return ([In(Q8A, (batch, n_in), *ACT)] + [w(weights[g], n_out, n_in) for g in range(4)]
            + [w(weights[4 + g], n_out, n_out) for g in range(4)] + [b(biases[g]) for g in range(4)]
            + [In(Q16S, (batch, n_out), *STATE), In(Q8A, (batch, n_out), *ACT)])


CELL16_OUTS = [Out(Q16S, *STATE), Out(Q8A, *ACT)]


def test_cell16_aosp_spec_step(accelerator):
    args = _cell16_args(2, 2, 4, WEIGHTS, BIASES, W_SCALE, W_ZP)
    data = [np.asarray(SPEC_X, np.uint8), np.asarray(SPEC_C_PREV, np.int16), np.asarray(SPEC_H_PREV, np.uint8)]
    (c, h), _ = check_op(accelerator, CELL16, args, CELL16_OUTS, data=data)
    np.testing.assert_array_equal(c, SPEC_C_OUT)
    np.testing.assert_array_equal(h, SPEC_H_OUT)


def test_cell16_aosp_spec_step_every_tensor_a_model_input(accelerator):
    args = _cell16_args(2, 2, 4, WEIGHTS, BIASES, W_SCALE, W_ZP, weights_as_inputs=True)
    data = ([np.asarray(SPEC_X, np.uint8)] + [np.asarray(w, np.uint8).reshape(4, -1) for w in WEIGHTS]
            + [np.asarray(v, np.int32) for v in BIASES] + [np.asarray(SPEC_C_PREV, np.int16),
                                                           np.asarray(SPEC_H_PREV, np.uint8)])
    (c, h), _ = check_op(accelerator, CELL16, args, CELL16_OUTS, data=data)
    np.testing.assert_array_equal(c, SPEC_C_OUT)
    np.testing.assert_array_equal(h, SPEC_H_OUT)


def _random_cell16(rng, batch, n_in, n_out, bias_range):
    """Random weights and biases; a bias_range of None: biases within 2^16 of the int32 limits, so
    that about half the accumulators wrap."""
    weights = [rng.integers(0, 256, n_out * (n_in if g < 4 else n_out)) for g in range(8)]
    if bias_range is None:
        edge = (1 << 31) - 1 - rng.integers(0, 1 << 16, (4, n_out))
        biases = list(np.where(rng.integers(0, 2, (4, n_out)) == 1, edge, -edge - 1))
    else:
        biases = [rng.integers(*bias_range, n_out) for _ in range(4)]
    return weights, biases


@pytest.mark.parametrize("batch, n_in, n_out, w_scale, w_zp, bias_range", [
    pytest.param(1, 3, 3, 0.02, 120, (-3000, 3000), id="square"),
    pytest.param(3, 7, 4, 0.004, 0, (-40000, 40000), id="more-inputs"),
    pytest.param(2, 2, 9, 0.05, 255, (-1 << 16, 1 << 16), id="more-outputs-saturated-gates"),
    pytest.param(4, 17, 33, 0.0123, 77, (-20000, 20000), id="wide"),
    pytest.param(2, 40, 30, 0.9, 128, None, id="wrapping-accumulators"),
])
def test_cell16_random_configurations(accelerator, batch, n_in, n_out, w_scale, w_zp, bias_range):
    rng = np.random.default_rng(73 + batch * n_in * n_out)
    weights, biases = _random_cell16(rng, batch, n_in, n_out, bias_range)
    args = _cell16_args(batch, n_in, n_out, weights, biases, w_scale, w_zp)
    # full-range states, then small ones (unsaturated cells)
    for c_max in (32768, 3000):
        data = [rng.integers(0, 256, (batch, n_in)).astype(np.uint8),
                rng.integers(-c_max, c_max, (batch, n_out)).astype(np.int16),
                rng.integers(0, 256, (batch, n_out)).astype(np.uint8)]
        check_op(accelerator, CELL16, args, CELL16_OUTS, data=data, what=f"c within ±{c_max}")


def test_cell16_batch_known_at_execution(accelerator):
    rng = np.random.default_rng(74)
    weights, biases = _random_cell16(rng, 0, 3, 5, (-5000, 5000))
    model, _ = single_op(CELL16, _cell16_args(0, 3, 5, weights, biases, 0.03, 90), CELL16_OUTS)
    assert all(accelerator.get_supported_operations(model))
    for batch in (1, 4):
        data = [rng.integers(0, 256, (batch, 3)).astype(np.uint8),
                rng.integers(-20000, 20000, (batch, 5)).astype(np.int16),
                rng.integers(0, 256, (batch, 5)).astype(np.uint8)]
        compare(accelerator, model, data, what=f"batch {batch}")


# ---- the 8x8→16 integer LSTM ----------------------------------------------------------------------------

def _ql_spec(i, batch, n_in, n_cell, n_out):
    """(type, shape) of tensor input i (operations.md 95)."""
    if i in (0, 18):
        return Q8AS, (batch, n_in if i == 0 else n_out)
    if 1 <= i <= 8 or i == 16:
        return Q8S, (n_cell, n_in) if i <= 4 else (n_cell, n_out) if i <= 8 else (n_out, n_cell)
    if i == 19:
        return Q16S, (batch, n_cell)
    return (I32T, (n_out if i == 17 else n_cell,)) if 12 <= i <= 15 or i == 17 else (Q16S, (n_cell,))


def _qlstm_model(sizes, tensors, x_quant, h_quant, c_scale, scalars, as_inputs=()):
    """A one-operation model of ``sizes`` (batch, input, cells, output): x, h_prev, c_prev model inputs;
    ``tensors`` maps every other present tensor input to (values, scale), a constant or, when in
    ``as_inputs``, a model input; the others NO_VALUE (with a scale: validation wants one)."""
    m = gpu_driver.ModelBuilder()
    quant = {0: x_quant, 18: h_quant, 19: (c_scale, 0)}
    ins = []
    for i in range(24):
        t, shape = _ql_spec(i, *sizes)
        scale = tensors[i][1] if i in tensors else 0.0 if t == I32T else 1.0
        if i in quant or i in as_inputs:
            ins.append(m.add_input(t, shape, *quant.get(i, (scale, 0))))
        elif i in tensors:
            ins.append(m.add_constant(t, shape, np.asarray(tensors[i][0]).reshape(shape), scale))
        else:
            ins.append(m.add_operand(t, [], scale, lifetime=OperandLifeTime.NO_VALUE))
    clips_and_scales = (scalars["cell_clip"], scalars["proj_clip"], *scalars["intermediate"])
    ins += [m.add_scalar(OT.FLOAT32, float(v)) for v in clips_and_scales]
    ins += [m.add_scalar(OT.INT32, int(scalars["hidden_zp"])),
            m.add_scalar(OT.FLOAT32, float(scalars["hidden_scale"]))]
    batch, _, n_cell, n_out = sizes
    outs = [m.add_operand(Q8AS, [batch, n_out], *h_quant), m.add_operand(Q16S, [batch, n_cell], c_scale, 0),
            m.add_operand(Q8AS, [batch, n_out], *h_quant)]
    m.add_operation(QLSTM, ins, outs)
    m.set_outputs(outs)
    return m.finish()


def _qlstm_data(x, h_prev, c_prev):
    return [np.asarray(x, np.int8), np.asarray(h_prev, np.int8), np.asarray(c_prev, np.int16)]


def _check_qlstm(accelerator, model, data, what=""):
    assert all(accelerator.get_supported_operations(model)), what
    return compare(accelerator, model, data, what=what)


@pytest.mark.parametrize("cifg, projection", [(False, True), (True, True), (True, False)])
def test_qlstm_aosp_spec_tensors(accelerator, cifg, projection):
    n_out = 3 if projection else 4
    model = _qlstm_model((2, 5, 4, n_out), _ql_tensors(cifg, projection), (1 / 128, 0), (QL_STATE, 0), QL_STATE,
                         QL_SCALARS)
    rng = np.random.default_rng(95)
    for h_prev, c_prev in ((np.zeros((2, n_out)), np.zeros((2, 4))),
                           (rng.integers(-128, 128, (2, n_out)), rng.integers(-32768, 32768, (2, 4)))):
        _check_qlstm(accelerator, model, _qlstm_data(QL_X, h_prev, c_prev))


def test_qlstm_optional_tensors_omitted_by_the_request(accelerator):
    # as the AOSP spec does: CIFG without projection, the optional tensors model inputs the request omits
    omitted = (1, 5, 9, 10, 11, 12, 16, 17, 20)
    model = _qlstm_model((2, 5, 4, 4), _ql_tensors(True, False), (1 / 128, 0), (QL_STATE, 0), QL_STATE, QL_SCALARS,
                         as_inputs=omitted)
    x, h_prev, c_prev = _qlstm_data(QL_X, np.zeros((2, 4)), np.zeros((2, 4)))
    compare(accelerator, model, [x] + [None] * 8 + [h_prev, c_prev, None])   # model inputs in operand order


def test_qlstm_peephole_projection_clipping_step_of_aosp(accelerator):
    p = PEEP
    t = {1 + g: (p["w_x"][g], 0.01) for g in range(4)}
    t.update({5 + g: (p["w_h"][g], 0.012) for g in range(4)})
    t.update({9 + k: (p["w_c"][k], 0.002) for k in range(3)})
    t.update({12 + g: (p["bias"][g], 0.0) for g in range(4)})
    t.update({16: (p["w_proj"], 0.005), 17: (p["b_proj"], 0.0)})
    scalars = dict(cell_clip=0.3, proj_clip=0.04, intermediate=(0.004,) * 4, hidden_zp=4, hidden_scale=0.008)
    model = _qlstm_model((2, 3, 4, 2), t, (1 / 128, 3), (1 / 128, -2), 2.0 ** -12, scalars)
    (h, c, out), _ = _check_qlstm(accelerator, model, _qlstm_data(p["x"], p["h_prev"], p["c_prev"]))
    np.testing.assert_array_equal(c, p["c_out"])
    np.testing.assert_array_equal(h, p["out"])
    np.testing.assert_array_equal(out, p["out"])


def _random_qlstm(rng, sizes, cifg, peephole, projection, layer_norm):
    """Random tensors of every present input: int8 weights, int16 peephole and layer-norm weights, int32
    biases; input 9 is left out with CIFG."""
    _, n_in, n_cell, n_out = sizes
    t = {}
    for g in range(4):
        if cifg and g == 0:
            continue
        t[1 + g] = (rng.integers(-128, 128, (n_cell, n_in)), rng.uniform(0.005, 0.02))
        t[5 + g] = (rng.integers(-128, 128, (n_cell, n_out)), rng.uniform(0.005, 0.02))
        t[12 + g] = (rng.integers(-1 << 20, 1 << 20, n_cell), 0.0)
        if layer_norm:
            t[20 + g] = (rng.integers(-20000, 20000, n_cell), 3.05e-5)
    if peephole:
        for k in (0, 1, 2)[cifg:]:
            t[9 + k] = (rng.integers(-8000, 8000, n_cell), 0.001)
    if projection:
        t[16] = (rng.integers(-128, 128, (n_out, n_cell)), rng.uniform(0.002, 0.01))
        if rng.integers(0, 2):
            t[17] = (rng.integers(-5000, 5000, n_out), 0.0)
    return t


#: cell scales 2^cs: 15 + cs inside tanh's 0 … 6 integer bits, at either end, and past them (-20: the
#: reference reads the input gate instead)
CELL_SHIFTS = (-11, -15, -9, -20)


@pytest.mark.parametrize("cifg, peephole, projection, layer_norm", list(itertools.product([False, True], repeat=4)))
def test_qlstm_option_combinations(accelerator, cifg, peephole, projection, layer_norm):
    k = cifg * 8 + peephole * 4 + projection * 2 + layer_norm
    rng = np.random.default_rng(950 + k)
    batch, n_in, n_cell = 3, 5, 7 + k
    n_out = 4 if projection else n_cell
    sizes = (batch, n_in, n_cell, n_out)
    cs = CELL_SHIFTS[k % 4]
    x_quant, h_quant = (1 / 128, int(rng.integers(-20, 20))), (rng.uniform(0.004, 0.02), int(rng.integers(-20, 20)))
    scalars = dict(cell_clip=0.0 if k % 3 else 2.0 ** (cs + 13), proj_clip=0.0 if k % 2 else 0.3,
                   intermediate=tuple(rng.uniform(0.002, 0.01, 4)), hidden_zp=int(rng.integers(-10, 10)),
                   hidden_scale=rng.uniform(0.004, 0.01))
    model = _qlstm_model(sizes, _random_qlstm(rng, sizes, cifg, peephole, projection, layer_norm), x_quant,
                         h_quant, 2.0 ** cs, scalars)
    for c_max in (1 << 15, 1 << 11):
        data = _qlstm_data(rng.integers(-128, 128, (batch, n_in)), rng.integers(-128, 128, (batch, n_out)),
                           rng.integers(-c_max, c_max, (batch, n_cell)))
        _check_qlstm(accelerator, model, data, what=f"cs {cs}, |c_prev| < {c_max}")


@pytest.mark.parametrize("ln_scale", [3.05e-5, 2e-4])         # variance floor 0 and 1
def test_qlstm_layer_norm_below_the_variance_floor(accelerator, ln_scale):
    # coarse intermediate scales: the gate values are -1, 0 or 1, their variance (in whole units) 0,
    # replaced by the floor
    rng = np.random.default_rng(96)
    sizes = (2, 3, 6, 6)
    t = {i: (rng.integers(-128, 128, 18 if i <= 4 else 36), 0.01) for i in range(1, 9)}
    t.update({12 + g: (rng.integers(-1 << 22, 1 << 22, 6), 0.0) for g in range(4)})
    t.update({20 + g: (rng.integers(-30000, 30000, 6), ln_scale) for g in range(4)})
    model = _qlstm_model(sizes, t, (1 / 128, 0), (1 / 128, 0), 2.0 ** -11, dict(QL_SCALARS, intermediate=(1.5,) * 4))
    _check_qlstm(accelerator, model, _qlstm_data(rng.integers(-128, 128, (2, 3)), rng.integers(-128, 128, (2, 6)),
                                                 rng.integers(-3000, 3000, (2, 6))))
