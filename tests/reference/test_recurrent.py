"""LSTM (16), RNN (24), SVDF (27) on the reference device.

Expected values come from the AOSP NNAPI conformance specs (runtime/test/specs: lstm2, lstm_relaxed,
layer_norm_lstm, svdf_bias_present, svdf2, svdf_state, bidirectional_sequence_rnn's forward
outputs for RNN) — computed independently by TFLite — and from tiny hand-worked cases.
"""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.errors import DriverError
from gpu_driver.ops.recurrent import (LSTM_B_C, LSTM_B_F, LSTM_B_I, LSTM_B_O, LSTM_B_PROJ, LSTM_LN_C, LSTM_LN_F,
                                      LSTM_LN_I, LSTM_LN_O, LSTM_W_CF, LSTM_W_CI, LSTM_W_CO, LSTM_W_HC, LSTM_W_HF,
                                      LSTM_W_HI, LSTM_W_HO, LSTM_W_PROJ, LSTM_W_XC, LSTM_W_XF, LSTM_W_XI, LSTM_W_XO)

F32 = T.TENSOR_FLOAT32
F16 = T.TENSOR_FLOAT16


def _prepare(builder):
    return gd.get_device("reference").prepare_model(builder.finish())


def _scalar_type(ttype):
    return T.FLOAT16 if ttype == F16 else T.FLOAT32


# ---- LSTM -----------------------------------------------------------------------------------------

def lstm_model(n_batch, n_input, n_cell, n_output, tensors, *, activation=4, cell_clip=0.0, proj_clip=0.0,
               layer_norm=False, ttype=F32, as_inputs=()):
    """An LSTM model: inputs x, h_prev, c_prev, then the indexes in ``as_inputs`` (model inputs that
    may be omitted at execution); every other weight a constant, or NO_VALUE when ``tensors`` lacks it."""
    U, I, O_ = n_cell, n_input, n_output
    shapes = {LSTM_W_XI: [U, I], LSTM_W_XF: [U, I], LSTM_W_XC: [U, I], LSTM_W_XO: [U, I],
              LSTM_W_HI: [U, O_], LSTM_W_HF: [U, O_], LSTM_W_HC: [U, O_], LSTM_W_HO: [U, O_],
              LSTM_W_CI: [U], LSTM_W_CF: [U], LSTM_W_CO: [U], LSTM_B_I: [U], LSTM_B_F: [U], LSTM_B_C: [U],
              LSTM_B_O: [U], LSTM_W_PROJ: [O_, U], LSTM_B_PROJ: [O_],
              LSTM_LN_I: [U], LSTM_LN_F: [U], LSTM_LN_C: [U], LSTM_LN_O: [U]}
    b = gd.ModelBuilder()
    x = b.add_input(ttype, [n_batch, I])
    h_prev = b.add_input(ttype, [n_batch, O_])
    c_prev = b.add_input(ttype, [n_batch, U])
    extra = {i: b.add_input(ttype, shapes[i]) for i in as_inputs}
    ins = [x]
    for i in range(1, 18):
        if i in extra:
            ins.append(extra[i])
        elif tensors.get(i) is None:
            ins.append(b.add_no_value(ttype, shapes[i]))
        else:
            ins.append(b.add_constant(ttype, shapes[i], tensors[i]))
    ins += [h_prev, c_prev, b.add_scalar(T.INT32, activation),
            b.add_scalar(_scalar_type(ttype), cell_clip), b.add_scalar(_scalar_type(ttype), proj_clip)]
    if layer_norm:
        for i in (LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O):
            ins.append(b.add_no_value(ttype, shapes[i]) if tensors.get(i) is None
                       else b.add_constant(ttype, shapes[i], tensors[i]))
    if LSTM_W_XI in as_inputs:
        scratch_cols = 0                                   # CIFG or not is known only at execution
    else:
        scratch_cols = U * (3 if tensors.get(LSTM_W_XI) is None else 4)
    outs = [b.add_operand(ttype, [n_batch, scratch_cols]), b.add_operand(ttype, [n_batch, O_]),
            b.add_operand(ttype, [n_batch, U]), b.add_operand(ttype, [n_batch, O_])]
    b.add_operation(O.LSTM, ins, outs).set_outputs(outs)
    return _prepare(b)


def run_lstm(pm, x, h, c, dtype=np.float32, extra=()):
    scratch, h_out, c_out, out = pm.execute([np.asarray(x, dtype), np.asarray(h, dtype), np.asarray(c, dtype),
                                            *extra])
    np.testing.assert_array_equal(h_out, out)
    return scratch, h_out, c_out


# lstm2.mod.py: CIFG, peephole, no projection, no clipping (n_batch 1, n_input 2, n_cell = n_output 4)
LSTM2 = {
    LSTM_W_XC: [-0.49770179, -0.27711356, -0.09624726, 0.05100781, 0.04717243, 0.48944736, -0.38535351, -0.17212132],
    LSTM_W_XF: [-0.55291498, -0.42866567, 0.13056988, -0.3633365, -0.22755712, 0.28253698, 0.24407166, 0.33826375],
    LSTM_W_XO: [0.10725588, -0.02335852, -0.55932593, -0.09426838, -0.44257352, 0.54939759, 0.01533556, 0.42751634],
    LSTM_B_F: [1., 1., 1., 1.], LSTM_B_C: [0., 0., 0., 0.], LSTM_B_O: [0., 0., 0., 0.],
    LSTM_W_HC: [0.54066205, -0.32668582, -0.43562764, -0.56094903, 0.42957711, 0.01841056, -0.32764608, -0.33027974,
                -0.10826075, 0.20675004, 0.19069612, -0.03026325, -0.54532051, 0.33003211, 0.44901288, 0.21193194],
    LSTM_W_HF: [-0.13832897, -0.0515101, -0.2359007, -0.16661474, -0.14340827, 0.36986142, 0.23414481, 0.55899,
                0.10798943, -0.41174671, 0.17751795, -0.34484994, -0.35874045, -0.11352962, 0.27268326, 0.54058349],
    LSTM_W_HO: [0.41613156, 0.42610586, -0.16495961, -0.5663873, 0.30579174, -0.05115908, -0.33941799, 0.23364776,
                0.11178309, 0.09481031, -0.26424935, 0.46261835, 0.50248802, 0.26114327, -0.43736315, 0.33149987],
    LSTM_W_CF: [0.47485286, -0.51955009, -0.24458408, 0.31544167],
    LSTM_W_CO: [-0.17135078, 0.82760304, 0.85573703, -0.77109635],
}
LSTM2_IO = dict(x=[[3., 4.]], h=[[-0.364445, -0.00352185, 0.128866, -0.0516365]],
                c=[[-0.760444, -0.0180416, 0.182264, -0.0649371]],
                c_out=[[-0.978419, -0.139203, 0.338163, -0.0983904]],
                h_out=[[-0.42312205, -0.01218222, 0.24201041, -0.08124574]])


def test_lstm2_cifg_peephole():
    pm = lstm_model(1, 2, 4, 4, LSTM2)
    scratch, h, c = run_lstm(pm, LSTM2_IO["x"], LSTM2_IO["h"], LSTM2_IO["c"])
    assert scratch.shape == (1, 12)                       # CIFG: [B, 3U]
    np.testing.assert_allclose(c, LSTM2_IO["c_out"], atol=1e-5)
    np.testing.assert_allclose(h, LSTM2_IO["h_out"], atol=1e-5)


def test_lstm2_float16():
    pm = lstm_model(1, 2, 4, 4, LSTM2, ttype=F16)
    scratch, h, c = run_lstm(pm, LSTM2_IO["x"], LSTM2_IO["h"], LSTM2_IO["c"], dtype=np.float16)
    assert h.dtype == np.float16 and c.dtype == np.float16
    np.testing.assert_allclose(c.astype(np.float32), LSTM2_IO["c_out"], atol=1e-2)
    np.testing.assert_allclose(h.astype(np.float32), LSTM2_IO["h_out"], atol=1e-2)


def test_lstm_optional_weights_as_model_inputs_omitted_at_execution():
    # lstm2.mod.py declares the CIFG/peephole/projection tensors as model inputs and omits them in the
    # request: the option groups are only decided at execution.
    as_inputs = (LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_B_I, LSTM_W_PROJ, LSTM_B_PROJ)
    pm = lstm_model(1, 2, 4, 4, LSTM2, as_inputs=as_inputs)
    _, h, c = run_lstm(pm, LSTM2_IO["x"], LSTM2_IO["h"], LSTM2_IO["c"], extra=[None] * len(as_inputs))
    np.testing.assert_allclose(c, LSTM2_IO["c_out"], atol=1e-5)
    np.testing.assert_allclose(h, LSTM2_IO["h_out"], atol=1e-5)


# lstm_relaxed.mod.py (= lstm.mod.py data): no CIFG, no peephole, no projection, no clipping
LSTM1 = {
    LSTM_W_XI: [-0.45018822, -0.02338299, -0.0870589, -0.34550029, 0.04266912, -0.15680569, -0.34856534, 0.43890524],
    LSTM_W_XF: [0.09701663, 0.20334584, -0.50592935, -0.31343272, -0.40032279, 0.44781327, 0.01387155, -0.35593212],
    LSTM_W_XC: [-0.50013041, 0.1370284, 0.11810488, 0.2013163, -0.20583314, 0.44344562, 0.22077113, -0.29909778],
    LSTM_W_XO: [-0.25065863, -0.28290087, 0.04613829, 0.40525138, 0.44272184, 0.03897077, -0.1556896, 0.19487578],
    LSTM_B_I: [0., 0., 0., 0.], LSTM_B_F: [1., 1., 1., 1.], LSTM_B_C: [0., 0., 0., 0.], LSTM_B_O: [0., 0., 0., 0.],
    LSTM_W_HI: [-0.0063535, -0.2042388, 0.31454784, -0.35746509, 0.28902304, 0.08183324, -0.16555229, 0.02286911,
                -0.13566875, 0.03034258, 0.48091322, -0.12528998, 0.24077177, -0.51332325, -0.33502164, 0.10629296],
    LSTM_W_HC: [-0.3407414, 0.24443203, -0.2078532, 0.26320225, 0.05695659, -0.00123841, -0.4744786, -0.35869038,
                -0.06418842, -0.13502428, -0.501764, 0.22830659, -0.46367589, 0.26016325, -0.03894562, -0.16368064],
    LSTM_W_HF: [-0.48684245, -0.06655136, 0.42224967, 0.2112639, 0.27654213, 0.20864892, -0.07646349, 0.45877004,
                0.00141793, -0.14609534, 0.36447752, 0.09196436, 0.28053468, 0.01560611, -0.20127171, -0.01140004],
    LSTM_W_HO: [0.43385774, -0.17194885, 0.2718237, 0.09215671, 0.24107647, -0.39835793, 0.18212086, 0.01301402,
                0.48572797, -0.50656658, 0.20047462, -0.20607421, -0.51818722, -0.15390486, 0.0468148, 0.39922136],
}


def test_lstm_no_cifg_no_peephole():
    pm = lstm_model(1, 2, 4, 4, LSTM1)
    scratch, h, c = run_lstm(pm, [[3., 4.]], [[-0.0297319, 0.122947, 0.208851, -0.153588]],
                             [[-0.145439, 0.157475, 0.293663, -0.277353]])
    assert scratch.shape == (1, 16)                       # [B, 4U]
    np.testing.assert_allclose(c, [[-0.287121, 0.148115, 0.556837, -0.388276]], atol=1e-5)
    np.testing.assert_allclose(h, [[-0.03716109, 0.12507336, 0.41193449, -0.20860538]], atol=1e-5)


# layer_norm_lstm.mod.py (V1_2): layer norm, peephole, projection (no bias), no clipping;
# n_batch 2, n_input 5, n_cell 4, n_output 3; three steps, states fed back.
LN_LSTM = {
    LSTM_W_XI: [0.5, 0.6, 0.7, -0.8, -0.9, 0.1, 0.2, 0.3, -0.4, 0.5, -0.8, 0.7, -0.6, 0.5, -0.4, -0.5, -0.4, -0.3,
                -0.2, -0.1],
    LSTM_W_XF: [-0.6, -0.1, 0.3, 0.2, 0.9, -0.5, -0.2, -0.4, 0.3, -0.8, -0.4, 0.3, -0.5, -0.4, -0.6, 0.3, -0.4, -0.6,
                -0.5, -0.5],
    LSTM_W_XC: [-0.4, -0.3, -0.2, -0.1, -0.5, 0.5, -0.2, -0.3, -0.2, -0.6, 0.6, -0.1, -0.4, -0.3, -0.7, 0.7, -0.9,
                -0.5, 0.8, 0.6],
    LSTM_W_XO: [-0.8, -0.4, -0.2, -0.9, -0.1, -0.7, 0.3, -0.3, -0.8, -0.2, 0.6, -0.2, 0.4, -0.7, -0.3, -0.5, 0.1, 0.5,
                -0.6, -0.4],
    LSTM_B_I: [0.03, 0.15, 0.22, 0.38], LSTM_B_F: [0.1, -0.3, -0.2, 0.1], LSTM_B_C: [-0.05, 0.72, 0.25, 0.08],
    LSTM_B_O: [0.05, -0.01, 0.2, 0.1],
    LSTM_W_HI: [-0.2, -0.3, 0.4, 0.1, -0.5, 0.9, -0.2, -0.3, -0.7, 0.05, -0.2, -0.6],
    LSTM_W_HC: [-0.3, 0.2, 0.1, -0.3, 0.8, -0.08, -0.2, 0.3, 0.8, -0.6, -0.1, 0.2],
    LSTM_W_HF: [-0.5, -0.3, -0.5, -0.2, 0.6, 0.4, 0.9, 0.3, -0.1, 0.2, 0.5, 0.2],
    LSTM_W_HO: [0.3, -0.1, 0.1, -0.2, -0.5, -0.7, -0.2, -0.6, -0.1, -0.4, -0.7, -0.2],
    LSTM_W_CI: [0.05, 0.1, 0.25, 0.15], LSTM_W_CF: [-0.02, -0.15, -0.25, -0.03], LSTM_W_CO: [0.1, -0.1, -0.5, 0.05],
    LSTM_W_PROJ: [-0.1, 0.2, 0.01, -0.2, 0.1, 0.5, 0.3, 0.08, 0.07, 0.2, -0.4, 0.2],
    LSTM_LN_I: [0.1, 0.2, 0.3, 0.5], LSTM_LN_F: [0.2, 0.2, 0.4, 0.3], LSTM_LN_C: [0.7, 0.2, 0.3, 0.8],
    LSTM_LN_O: [0.6, 0.2, 0.2, 0.5],
}
LN_INPUTS = [[0.7, 0.8, 0.1, 0.2, 0.3, 0.3, 0.2, 0.9, 0.8, 0.1],
             [0.8, 0.1, 0.2, 0.4, 0.5, 0.1, 0.5, 0.2, 0.4, 0.2],
             [0.2, 0.7, 0.7, 0.1, 0.7, 0.6, 0.9, 0.2, 0.5, 0.7]]
LN_CELLS = [[-0.451771229505539, 0.376915663480759, 0.225425109267235, 0.232406347990036,
             -0.252585828304291, 0.330421179533005, 0.017305245622993, 0.366601228713989],
            [-0.645632147789001, 0.518238246440887, 0.168679088354111, 0.555787742137909,
             -0.493674814701080, 0.475847363471985, 0.106874041259289, 0.504309654235840],
            [-0.742560744285583, 0.579139292240143, 0.114988230168819, 0.649957716464996,
             -0.686565399169922, 0.548869132995605, 0.173138767480850, 0.587379336357117]]
LN_OUTPUTS = [[0.024407668039203, 0.128027379512787, -0.001709178090096,
               -0.006924282759428, 0.084874063730240, 0.063444979488850],
              [0.013764165341854, 0.140751048922539, 0.039583537727594,
               -0.004039138555527, 0.139963015913963, 0.072681039571762],
              [-0.004592306911945, 0.155278354883194, 0.083737745881081,
               0.007527053356171, 0.161902531981468, 0.056137066334486]]
# the CIFG variant of the same spec (input-gate tensors removed)
LN_CIFG_CELLS = [[-0.3510298, 0.4261035, 0.2146365, 0.2771652, -0.1885517, 0.3252200, 0.0203665, 0.4896766],
                 [-0.5069088, 0.5386363, 0.1980069, 0.5355753, -0.3866257, 0.4749442, 0.1074765, 0.7124508],
                 [-0.5736622, 0.5952501, 0.1292950, 0.7110270, -0.5323033, 0.5556133, 0.1800992, 0.7845056]]
LN_CIFG_OUTPUTS = [[0.02129706, 0.140816242, 0.0112733059, -0.0226350538, 0.0916948169, 0.0769175813],
                   [0.0132302344, 0.152308047, 0.0346313119, -0.0269966982, 0.149707705, 0.094149217],
                   [-0.0123688057, 0.165790111, 0.0893077999, -0.0103429332, 0.173016444, 0.0720508844]]


@pytest.mark.parametrize("cifg", [False, True])
def test_layer_norm_lstm_three_steps(cifg):
    tensors = dict(LN_LSTM)
    cells, outputs = LN_CELLS, LN_OUTPUTS
    if cifg:
        for i in (LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_B_I, LSTM_LN_I):
            tensors.pop(i)
        cells, outputs = LN_CIFG_CELLS, LN_CIFG_OUTPUTS
    pm = lstm_model(2, 5, 4, 3, tensors, layer_norm=True)
    h = np.zeros((2, 3), np.float32)
    c = np.zeros((2, 4), np.float32)
    for x, golden_c, golden_h in zip(LN_INPUTS, cells, outputs):
        _, h, c = run_lstm(pm, np.reshape(x, (2, 5)), h, c)
        np.testing.assert_allclose(c, np.reshape(golden_c, (2, 4)), atol=1e-5)
        np.testing.assert_allclose(h, np.reshape(golden_h, (2, 3)), atol=1e-5)


def test_lstm_projection_with_bias_and_both_clips_hand_worked():
    # B=1, I=1, U=2, O=1, activation relu (1); all gate weights 0, so every gate pre-activation is its bias.
    #   i = f = o = σ(0) = 0.5;  c_hat = relu(b_c) = relu([2, 1]) = [2, 1]
    #   c = f·c_prev + i·c_hat = 0.5·[4, 0] + 0.5·[2, 1] = [3, 0.5];  cell_clip 2.5 → c = [2.5, 0.5]
    #   m = o·relu(c) = [1.25, 0.25];  h = W_proj·m + b_proj = 2·1.25 − 1·0.25 + 0.5 = 2.75
    #   proj_clip 2.5 → h = 2.5
    z2x1, z2 = [0.0, 0.0], [0.0, 0.0]
    tensors = {LSTM_W_XI: z2x1, LSTM_W_XF: z2x1, LSTM_W_XC: z2x1, LSTM_W_XO: z2x1,
               LSTM_W_HI: z2x1, LSTM_W_HF: z2x1, LSTM_W_HC: z2x1, LSTM_W_HO: z2x1,
               LSTM_B_I: z2, LSTM_B_F: z2, LSTM_B_C: [2.0, 1.0], LSTM_B_O: z2,
               LSTM_W_PROJ: [2.0, -1.0], LSTM_B_PROJ: [0.5]}
    pm = lstm_model(1, 1, 2, 1, tensors, activation=1, cell_clip=2.5, proj_clip=2.5)
    _, h, c = run_lstm(pm, [[7.0]], [[-3.0]], [[4.0, 0.0]])
    np.testing.assert_allclose(c, [[2.5, 0.5]], atol=1e-6)
    np.testing.assert_allclose(h, [[2.5]], atol=1e-6)
    # without clipping: c = [3, 0.5], m = [1.5, 0.25], h = 3 − 0.25 + 0.5 = 3.25
    pm = lstm_model(1, 1, 2, 1, tensors, activation=1)
    _, h, c = run_lstm(pm, [[7.0]], [[-3.0]], [[4.0, 0.0]])
    np.testing.assert_allclose(c, [[3.0, 0.5]], atol=1e-6)
    np.testing.assert_allclose(h, [[3.25]], atol=1e-6)


def _expect_invalid(fn):
    with pytest.raises(DriverError) as err:
        fn()
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("mutate", [
    pytest.param(lambda t: t.pop(LSTM_W_HI), id="cifg-half-missing"),
    pytest.param(lambda t: t.pop(LSTM_B_I), id="input-bias-missing-without-cifg"),
    pytest.param(lambda t: t.pop(LSTM_W_CF), id="peephole-partial"),
    pytest.param(lambda t: (t.pop(LSTM_W_PROJ), t.update({LSTM_B_PROJ: [0.0] * 3})), id="proj-bias-without-weights"),
    pytest.param(lambda t: t.pop(LSTM_LN_C), id="layer-norm-partial"),
    pytest.param(lambda t: t.update({LSTM_W_XF: [0.0] * 19}), id="bad-weight-shape"),
])
def test_lstm_option_group_violations_are_rejected(mutate):
    tensors = dict(LN_LSTM)
    mutate(tensors)
    shapes_ok = len(tensors.get(LSTM_W_XF)) == 20

    def build():
        if shapes_ok:
            return lstm_model(2, 5, 4, 3, tensors, layer_norm=True)
        # a wrongly sized constant: declare the operand with the wrong dims by hand
        b = gd.ModelBuilder()
        x = b.add_input(F32, [2, 5])
        ins = [x] + [b.add_constant(F32, [4, 5], [0.0] * 20) for _ in range(4)]
        ins[LSTM_W_XF] = b.add_constant(F32, [4, 4], [0.0] * 16)
        ins += [b.add_constant(F32, [4, 3], [0.0] * 12) for _ in range(4)]
        ins += [b.add_no_value(F32, [4]) for _ in range(3)]
        ins += [b.add_constant(F32, [4], [0.0] * 4) for _ in range(4)]
        ins += [b.add_no_value(F32, [3, 4]), b.add_no_value(F32, [3])]
        ins += [b.add_input(F32, [2, 3]), b.add_input(F32, [2, 4]), b.add_scalar(T.INT32, 4),
                b.add_scalar(T.FLOAT32, 0.0), b.add_scalar(T.FLOAT32, 0.0)]
        outs = [b.add_operand(F32, [2, 16]), b.add_operand(F32, [2, 3]), b.add_operand(F32, [2, 4]),
                b.add_operand(F32, [2, 3])]
        b.add_operation(O.LSTM, ins, outs).set_outputs(outs)
        pm = _prepare(b)
        pm.execute([np.zeros((2, 5), np.float32), np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)])

    _expect_invalid(build)


def test_lstm_option_groups_checked_again_at_execution():
    # optional tensors declared as model inputs pass model validation; the request decides
    as_inputs = (LSTM_W_XI, LSTM_W_HI, LSTM_B_I)
    pm = lstm_model(1, 2, 4, 4, LSTM1, as_inputs=as_inputs)
    w_xi = np.array(LSTM1[LSTM_W_XI], np.float32).reshape(4, 2)
    w_hi = np.array(LSTM1[LSTM_W_HI], np.float32).reshape(4, 4)
    state = [np.zeros((1, 2), np.float32), np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32)]
    for extra in ([w_xi, None, None],                                     # CIFG half-omitted
                  [w_xi, w_hi, None]):                                    # no CIFG, input bias omitted
        with pytest.raises(DriverError) as err:
            pm.execute(state + extra)
        assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    outs = pm.execute(state + [w_xi, w_hi, np.zeros(4, np.float32)])   # complete: runs
    assert outs[0].shape == (1, 16)


@pytest.mark.parametrize("kwargs", [dict(activation=2), dict(activation=5), dict(cell_clip=-1.0),
                                    dict(proj_clip=-0.5)])
def test_lstm_bad_scalars_are_rejected(kwargs):
    _expect_invalid(lambda: lstm_model(1, 2, 4, 4, LSTM2, **kwargs))


def test_lstm_lengths_without_projection_must_match():
    # O (3) != U (4) and no projection weights
    tensors = {k: v for k, v in LN_LSTM.items() if k not in (LSTM_W_PROJ,)}
    _expect_invalid(lambda: lstm_model(2, 5, 4, 3, tensors, layer_norm=True))


# ---- RNN ------------------------------------------------------------------------------------------

def rnn_model(n_batch, n_input, n_units, weights, recurrent, bias, activation, ttype=F32):
    b = gd.ModelBuilder()
    x = b.add_input(ttype, [n_batch, n_input])
    w = b.add_constant(ttype, [n_units, n_input], weights)
    r = b.add_constant(ttype, [n_units, n_units], recurrent)
    bb = b.add_constant(ttype, [n_units], bias)
    h = b.add_input(ttype, [n_batch, n_units])
    act = b.add_scalar(T.INT32, activation)
    outs = [b.add_operand(ttype, [n_batch, n_units]), b.add_operand(ttype, [n_batch, n_units])]
    b.add_operation(O.RNN, [x, w, r, bb, h, act], outs).set_outputs(outs)
    return _prepare(b)


# TFLite basic RNN data (rnn.mod.py; also the forward half of bidirectional_sequence_rnn.mod.py):
# input 8, units 16, relu, recurrent = 0.1·I; both batch rows carry the same sequence.
RNN_WEIGHTS = [
    0.461459, 0.153381, 0.529743, -0.00371218, 0.676267, -0.211346, 0.317493, 0.969689, -0.343251, 0.186423,
    0.398151, 0.152399, 0.448504, 0.317662, 0.523556, -0.323514, 0.480877, 0.333113, -0.757714, -0.674487,
    -0.643585, 0.217766, -0.0251462, 0.79512, -0.595574, -0.422444, 0.371572, -0.452178, -0.556069, -0.482188,
    -0.685456, -0.727851, 0.841829, 0.551535, -0.232336, 0.729158, -0.00294906, -0.69754, 0.766073, -0.178424,
    0.369513, -0.423241, 0.548547, -0.0152023, -0.757482, -0.85491, 0.251331, -0.989183, 0.306261, -0.340716,
    0.886103, -0.0726757, -0.723523, -0.784303, 0.0354295, 0.566564, -0.485469, -0.620498, 0.832546, 0.697884,
    -0.279115, 0.294415, -0.584313, 0.548772, 0.0648819, 0.968726, 0.723834, -0.0080452, -0.350386, -0.272803,
    0.115121, -0.412644, -0.824713, -0.992843, -0.592904, -0.417893, 0.863791, -0.423461, -0.147601, -0.770664,
    -0.479006, 0.654782, 0.587314, -0.639158, 0.816969, -0.337228, 0.659878, 0.73107, 0.754768, -0.337042,
    0.0960841, 0.368357, 0.244191, -0.817703, -0.211223, 0.442012, 0.37225, -0.623598, -0.405423, 0.455101,
    0.673656, -0.145345, -0.511346, -0.901675, -0.81252, -0.127006, 0.809865, -0.721884, 0.636255, 0.868989,
    -0.347973, -0.10179, -0.777449, 0.917274, 0.819286, 0.206218, -0.00785118, 0.167141, 0.45872, 0.972934,
    -0.276798, 0.837861, 0.747958, -0.0151566, -0.330057, -0.469077, 0.277308, 0.415818]
RNN_BIAS = [0.065691948, -0.69055247, 0.1107955, -0.97084129, -0.23957068, -0.23566568, -0.389184, 0.47481549,
            -0.4791103, 0.29931796, 0.10463274, 0.83918178, 0.37197268, 0.61957061, 0.3956964, -0.37609905]
RNN_INPUTS = [[0.23689353, 0.285385, 0.037029743, -0.19858193, -0.27569133, 0.43773448, 0.60379338, 0.35562468],
              [-0.69424844, -0.93421471, -0.87287879, 0.37144363, -0.62476718, 0.23791671, 0.40060222, 0.1356622],
              [-0.99774903, -0.98858172, -0.38952237, -0.47685933, 0.31073618, 0.71511042, -0.63767755,
               -0.31729108]]
RNN_OUTPUTS = [[0.496726, 0, 0.965996, 0, 0.0584254, 0, 0, 0.12315, 0, 0, 0.612266, 0.456601, 0, 0.52286,
                1.16099, 0.0291232],
               [0, 0, 0.524901, 0, 0, 0, 0, 1.02116, 0, 1.35762, 0, 0.356909, 0.436415, 0.0355727, 0, 0],
               [0, 0, 0, 0.262335, 0, 0, 0, 1.33992, 0, 2.9739, 0, 0, 1.31914, 2.66147, 0, 0]]


@pytest.mark.parametrize("ttype,atol", [(F32, 1e-5), (F16, 2e-2)])
def test_rnn_three_steps_relu(ttype, atol):
    dtype = np.float16 if ttype == F16 else np.float32
    pm = rnn_model(2, 8, 16, RNN_WEIGHTS, (0.1 * np.eye(16)).ravel(), RNN_BIAS, 1, ttype)
    h = np.zeros((2, 16), dtype)
    for x, golden in zip(RNN_INPUTS, RNN_OUTPUTS):
        h, out = pm.execute([np.asarray([x, x], dtype), h])
        assert h.dtype == dtype
        np.testing.assert_array_equal(h, out)
        np.testing.assert_allclose(h.astype(np.float32), [golden, golden], atol=atol)


@pytest.mark.parametrize("activation,expected", [
    # x = [1, 2], W = I, R = 0.5·I, h_prev = [2, −4]:  x·Wᵀ + h·Rᵀ = [1 + 1, 2 − 2] = [2, 0]
    (6, [0.5, 0.5]),              # bias [−2, 0] → [0, 0] → sigmoid 0.5
    (4, [0.0, 0.0]),              # tanh(0) = 0
    (0, [0.0, 0.0]),
])
def test_rnn_hand_worked_sigmoid_tanh(activation, expected):
    pm = rnn_model(1, 2, 2, [1, 0, 0, 1], [0.5, 0, 0, 0.5], [-2.0, 0.0], activation)
    h, _ = pm.execute([np.array([[1.0, 2.0]], np.float32), np.array([[2.0, -4.0]], np.float32)])
    np.testing.assert_allclose(h, [expected], atol=1e-7)


def test_rnn_hand_worked_relu6_and_relu():
    # bias [3, 7]: pre = [2 + 3, 0 + 7] = [5, 7] → relu6 [5, 6]; with bias [−3, 7] → relu [0, 7]
    x, h0 = np.array([[1.0, 2.0]], np.float32), np.array([[2.0, -4.0]], np.float32)
    h, _ = rnn_model(1, 2, 2, [1, 0, 0, 1], [0.5, 0, 0, 0.5], [3.0, 7.0], 3).execute([x, h0])
    np.testing.assert_allclose(h, [[5.0, 6.0]])
    h, _ = rnn_model(1, 2, 2, [1, 0, 0, 1], [0.5, 0, 0, 0.5], [-3.0, 7.0], 1).execute([x, h0])
    np.testing.assert_allclose(h, [[0.0, 7.0]])


def test_rnn_rejects_bad_activation_and_shapes():
    _expect_invalid(lambda: rnn_model(1, 2, 2, [1, 0, 0, 1], [0.5, 0, 0, 0.5], [0.0, 0.0], 2))
    _expect_invalid(lambda: rnn_model(1, 2, 2, [1, 0, 0, 1], [0.5, 0, 0, 0.5], [0.0, 0.0], 7))

    def bad_recurrent():
        b = gd.ModelBuilder()
        ins = [b.add_input(F32, [1, 2]), b.add_constant(F32, [2, 2], [1, 0, 0, 1]),
               b.add_constant(F32, [2, 3], [0] * 6), b.add_constant(F32, [2], [0, 0]), b.add_input(F32, [1, 2]),
               b.add_scalar(T.INT32, 0)]
        outs = [b.add_operand(F32, [1, 2]), b.add_operand(F32, [1, 2])]
        b.add_operation(O.RNN, ins, outs).set_outputs(outs)
        _prepare(b).execute([np.zeros((1, 2), np.float32)] * 2)
    _expect_invalid(bad_recurrent)


def test_rnn_zero_sized_batch_fails_at_execution():
    # a request cannot carry a zero-sized input, but another operation may produce one (§0.6):
    # call the definition and the kernel directly with execution-time infos
    from gpu_driver.ops.catalog import lookup
    from gpu_driver.ops.definition import TensorInfo

    def info(shape, value, t=F32):
        return TensorInfo(type=t, shape=shape, value=value, index=0)
    ins = [info((0, 2), np.zeros((0, 2), np.float32)), info((2, 2), np.eye(2, dtype=np.float32)),
           info((2, 2), np.eye(2, dtype=np.float32)), info((2,), np.zeros(2, np.float32)),
           info((0, 2), np.zeros((0, 2), np.float32)), info((), 0, T.INT32)]
    outs = [info((0, 2), None), info((0, 2), None)]
    entry = lookup(O.RNN)
    params = entry.define(ins, outs)
    assert params.output_shapes == [(0, 2), (0, 2)]
    with pytest.raises(DriverError) as err:
        entry.reference(params, ins, outs)
    assert err.value.status == ErrorStatus.GENERAL_FAILURE


# ---- SVDF -----------------------------------------------------------------------------------------

def svdf_model(n_batch, n_input, n_filters, memory, rank, weights_feature, weights_time, bias, activation=0,
               ttype=F32, bias_as_input=False):
    b = gd.ModelBuilder()
    x = b.add_input(ttype, [n_batch, n_input])
    wf = b.add_constant(ttype, [n_filters, n_input], weights_feature)
    wt = b.add_constant(ttype, [n_filters, memory], weights_time)
    units = n_filters // rank
    if bias_as_input:
        bb = b.add_input(ttype, [units])
    elif bias is None:
        bb = b.add_no_value(ttype, [units])
    else:
        bb = b.add_constant(ttype, [units], bias)
    state = b.add_input(ttype, [n_batch, memory * n_filters])
    ins = [x, wf, wt, bb, state, b.add_scalar(T.INT32, rank), b.add_scalar(T.INT32, activation)]
    outs = [b.add_operand(ttype, [n_batch, memory * n_filters]), b.add_operand(ttype, [n_batch, units])]
    b.add_operation(O.SVDF, ins, outs).set_outputs(outs)
    return _prepare(b)


SVDF_WF_RANK1 = [-0.31930989, -0.36118156, 0.0079667, 0.37613347, 0.22197971, 0.12416199,
                 0.27901134, 0.27557442, 0.3905206, -0.36137494, -0.06634006, -0.10640851]
SVDF_WT_RANK1 = [-0.31930989, 0.37613347, 0.27901134, -0.36137494, -0.36118156,
                 0.22197971, 0.27557442, -0.06634006, 0.0079667, 0.12416199,
                 0.3905206, -0.10640851, -0.0976817, 0.15294972, 0.39635518,
                 -0.02702999, 0.39296314, 0.15785322, 0.21931258, 0.31053296,
                 -0.36916667, 0.38031587, -0.21580373, 0.27072677, 0.23622236,
                 0.34936687, 0.18174365, 0.35907319, -0.17493086, 0.324846,
                 -0.10781813, 0.27201805, 0.14324132, -0.23681851, -0.27115166,
                 -0.01580888, -0.14943552, 0.15465137, 0.09784451, -0.0337657]


@pytest.mark.parametrize("bias_as_input", [False, True])
def test_svdf_bias_present_rank1(bias_as_input):
    # svdf_bias_present.mod.py (V1_2): batches 2, features 4, rank 1, input 3, memory 10, bias [1, 2, 3, 4]
    pm = svdf_model(2, 3, 4, 10, 1, SVDF_WF_RANK1, SVDF_WT_RANK1, [1.0, 2.0, 3.0, 4.0],
                    bias_as_input=bias_as_input)
    x = np.array([[0.12609188, -0.46347019, -0.89598465]] * 2, np.float32)
    ins = [x, np.zeros((2, 40), np.float32)]
    if bias_as_input:
        ins.insert(1, np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    state, out = pm.execute(ins)
    np.testing.assert_allclose(out, [[1.014899, 1.9482339, 2.856275, 3.99728117]] * 2, atol=1e-5)
    assert state.shape == (2, 40)


def test_svdf_bias_as_model_input_may_be_omitted():
    # svdf.mod.py: same data without bias (outputs = the bias-present goldens minus the bias)
    pm = svdf_model(2, 3, 4, 10, 1, SVDF_WF_RANK1, SVDF_WT_RANK1, None, bias_as_input=True)
    x = np.array([[0.12609188, -0.46347019, -0.89598465]] * 2, np.float32)
    _, out = pm.execute([x, None, np.zeros((2, 40), np.float32)])
    np.testing.assert_allclose(out, [[0.014899, -0.0517661, -0.143725, -0.00271883]] * 2, atol=1e-5)


def test_svdf2_rank2():
    # svdf2.mod.py: batches 2, features 8, rank 2 (units 4), input 3, memory 10, no bias
    wf = [-0.31930989, 0.0079667, 0.39296314, 0.37613347, 0.12416199, 0.15785322, 0.27901134, 0.3905206,
          0.21931258, -0.36137494, -0.10640851, 0.31053296, -0.36118156, -0.0976817, -0.36916667, 0.22197971,
          0.15294972, 0.38031587, 0.27557442, 0.39635518, -0.21580373, -0.06634006, -0.02702999, 0.27072677]
    wt = SVDF_WT_RANK1 + [
        -0.14884081, 0.19931212, -0.36002168, 0.34663299, -0.11405486,
        0.12672701, 0.39463779, -0.07886535, -0.06384811, 0.08249187,
        -0.26816407, -0.19905911, 0.29211238, 0.31264046, -0.28664589,
        0.05698794, 0.11613581, 0.14078894, 0.02187902, -0.21781836,
        -0.15567942, 0.08693647, -0.38256618, 0.36580828, -0.22922277,
        -0.0226903, 0.12878349, -0.28122205, -0.10850525, -0.11955214,
        0.27179423, -0.04710215, 0.31069002, 0.22672787, 0.09580326,
        0.08682203, 0.1258215, 0.1851041, 0.29228821, 0.12366763]
    pm = svdf_model(2, 3, 8, 10, 2, wf, wt, None)
    x = np.array([[0.12609188, -0.46347019, -0.89598465], [0.35867718, 0.36897406, 0.73463392]], np.float32)
    state, out = pm.execute([x, np.zeros((2, 80), np.float32)])
    np.testing.assert_allclose(out, [[-0.09623547, -0.10193135, 0.11083051, -0.0347917],
                                     [0.1141196, 0.12965347, -0.12652366, 0.01007236]], atol=1e-5)


def test_svdf_state_layout():
    # svdf_state.mod.py: units 4, rank 1, memory 10, input 3; nonzero state_in, checks state_out too.
    state_in = np.zeros((2, 4, 10), np.float32)          # [B, F, M]
    for b in range(2):
        state_in[b, :, 8] = [0.119996, -0.166701, -0.44244, 0.0805206]
    # the spec lists state rows of 4 values; as [F, M] they put the previous activations at slot 8
    pm = svdf_model(2, 3, 4, 10, 1, SVDF_WF_RANK1, SVDF_WT_RANK1, None)
    x = np.array([[0.14278367, -1.64410412, -0.75222826]] * 2, np.float32)
    state, out = pm.execute([x, state_in.reshape(2, 40)])
    np.testing.assert_allclose(out, [[0.068281, -0.162217, -0.152268, 0.00323521]] * 2, atol=1e-5)
    expected_state = np.zeros((2, 4, 10), np.float32)
    for b in range(2):
        expected_state[b, :, 7] = [0.119996, -0.166701, -0.44244, 0.0805206]
        expected_state[b, :, 8] = [0.542235, -0.40465, -0.706995, 0.137515]
    np.testing.assert_allclose(state, expected_state.reshape(2, 40), atol=1e-5)


def test_svdf_hand_worked_rank2():
    # B=1, I=1, F=2 (U=1, rank 2), M=2; weights_feature [[1], [2]], weights_time [[1, 10], [100, 1000]]
    # state_in as [F, M] = [[3, 0], [5, 0]];  x = [1]
    #   S = [[3, 1·1], [5, 2·1]] = [[3, 1], [5, 2]]
    #   t = [3·1 + 1·10, 5·100 + 2·1000] = [13, 2500];  out = 13 + 2500 + bias 0.5 = 2513.5
    #   state_out = S shifted left, last slot 0 = [[1, 0], [2, 0]]
    pm = svdf_model(1, 1, 2, 2, 2, [1.0, 2.0], [1.0, 10.0, 100.0, 1000.0], [0.5])
    state, out = pm.execute([np.array([[1.0]], np.float32), np.array([[3.0, 0.0, 5.0, 0.0]], np.float32)])
    np.testing.assert_allclose(out, [[2513.5]])
    np.testing.assert_allclose(state, [[1.0, 0.0, 2.0, 0.0]])
    # sigmoid of a large value, relu6 caps it
    pm = svdf_model(1, 1, 2, 2, 2, [1.0, 2.0], [1.0, 10.0, 100.0, 1000.0], [0.5], activation=3)
    _, out = pm.execute([np.array([[1.0]], np.float32), np.array([[3.0, 0.0, 5.0, 0.0]], np.float32)])
    np.testing.assert_allclose(out, [[6.0]])


def test_svdf_float16():
    pm = svdf_model(1, 1, 2, 2, 2, [1.0, 2.0], [1.0, 10.0, 100.0, 1000.0], [0.5], ttype=F16)
    state, out = pm.execute([np.array([[1.0]], np.float16), np.array([[3.0, 0.0, 5.0, 0.0]], np.float16)])
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float32), [[2513.5]], rtol=1e-3)


def test_svdf_rejects_rank_not_dividing_filters_and_bad_state():
    _expect_invalid(lambda: svdf_model(1, 1, 3, 2, 2, [1.0, 2.0, 3.0], [0.0] * 6, None))
    _expect_invalid(lambda: svdf_model(1, 1, 2, 2, 2, [1.0, 2.0], [0.0] * 4, None, activation=2))

    def bad_state():
        b = gd.ModelBuilder()
        ins = [b.add_input(F32, [1, 1]), b.add_constant(F32, [2, 1], [1, 2]), b.add_constant(F32, [2, 2], [0] * 4),
               b.add_no_value(F32, [1]), b.add_input(F32, [1, 3]),  # state should be [1, M·F] = [1, 4]
               b.add_scalar(T.INT32, 2), b.add_scalar(T.INT32, 0)]
        outs = [b.add_operand(F32, [1, 4]), b.add_operand(F32, [1, 1])]
        b.add_operation(O.SVDF, ins, outs).set_outputs(outs)
        _prepare(b).execute([np.zeros((1, 1), np.float32), np.zeros((1, 3), np.float32)])
    _expect_invalid(bad_state)


def test_params_decoded_at_prepare(monkeypatch):
    # what a GPU lowering sees: flags and sizes from the model alone (weights constant / NO_VALUE)
    from gpu_driver.graph import build_graph
    monkeypatch.setitem(globals(), "_prepare", lambda b: b.finish())

    def params_of(model):
        return build_graph(model, model.main).nodes[0].params

    p = params_of(lstm_model(2, 5, 4, 3, LN_LSTM, layer_norm=True, cell_clip=1.5))
    assert (p.batch, p.input_size, p.num_units, p.output_size) == (2, 5, 4, 3)
    assert (p.use_cifg, p.use_peephole, p.use_projection, p.use_projection_bias, p.use_layer_norm) == \
        (False, True, True, False, True)
    assert p.activation == 4 and p.cell_clip == 1.5 and p.proj_clip == 0.0
    assert p.output_shapes == [(2, 16), (2, 3), (2, 4), (2, 3)]
    p = params_of(lstm_model(1, 2, 4, 4, LSTM2))
    assert p.use_cifg and p.use_peephole and not p.use_projection and not p.use_layer_norm
    assert p.output_shapes[0] == (1, 12)
    # optional weights that are model inputs: CIFG is decided only at execution
    assert params_of(lstm_model(1, 2, 4, 4, LSTM2, as_inputs=(LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_B_I))) is None

    p = params_of(svdf_model(2, 3, 8, 10, 2, [0.0] * 24, [0.0] * 80, None, activation=6, bias_as_input=True))
    assert (p.batch, p.input_size, p.num_filters, p.num_units, p.rank, p.memory_size, p.activation) == \
        (2, 3, 8, 4, 2, 10, 6)
    assert p.has_bias is None and p.output_shapes == [(2, 80), (2, 4)]
    p = params_of(rnn_model(2, 8, 16, RNN_WEIGHTS, (0.1 * np.eye(16)).ravel(), RNN_BIAS, 1))
    assert (p.batch, p.input_size, p.num_units, p.activation) == (2, 8, 16, 1)
