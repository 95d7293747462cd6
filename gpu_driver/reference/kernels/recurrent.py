"""LSTM, RNN and SVDF reference kernels (operations.md 16, 24, 27): float32, float16 computed in float32."""
from __future__ import annotations

import numpy as np

from ...errors import failure
from ...hal.types import OPERAND_TYPE_INFO, OperationType
from ...operations import TensorInfo
from ...operations.recurrent import (LSTM_B_C, LSTM_B_F, LSTM_B_I, LSTM_B_O, LSTM_B_PROJ, LSTM_C_PREV, LSTM_H_PREV,
                                     LSTM_INPUT, LSTM_LN_C, LSTM_LN_F, LSTM_LN_I, LSTM_LN_O, LSTM_W_CF, LSTM_W_CI,
                                     LSTM_W_CO, LSTM_W_HC, LSTM_W_HF, LSTM_W_HI, LSTM_W_HO, LSTM_W_PROJ, LSTM_W_XC,
                                     LSTM_W_XF, LSTM_W_XI, LSTM_W_XO, LSTMParams, RNNParams, SVDFParams)
from ..registry import F16, F32, kernel

#: epsilon of the LSTM layer normalisation (variance + eps under the square root)
LAYER_NORM_EPSILON = 1e-8


def apply_recurrent_activation(x: np.ndarray, code: int) -> np.ndarray:
    """The TFLite activation enum of recurrent ops: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid."""
    if code == 0:
        return x
    if code == 1:
        return np.maximum(x, 0).astype(x.dtype)
    if code == 3:
        return np.clip(x, 0, 6).astype(x.dtype)
    if code == 4:
        return np.tanh(x)
    if code == 6:
        return sigmoid(x)
    raise failure(f"unsupported recurrent activation {code}")


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


def _float(info: TensorInfo) -> np.ndarray | None:
    """The tensor's data as float32, or None when omitted."""
    if info.omitted or info.value is None:
        return None
    return np.asarray(info.value, dtype=np.float32)


def _check_not_zero_sized(inputs: list[TensorInfo], op_name: str) -> None:
    """operations.md §0.6: these ops fail on a zero-sized input."""
    for t in inputs:
        if t.value is not None and OPERAND_TYPE_INFO[t.type].is_tensor and np.size(t.value) == 0:
            raise failure(f"{op_name}: zero-sized input operand {t.index} is not supported")


def _outputs(outputs: list[TensorInfo], arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Cast the float32 results to each output's type (float16 rounds to nearest even)."""
    return [np.asarray(a, dtype=np.float32).astype(o.dtype) for o, a in zip(outputs, arrays)]


def _layer_norm(v: np.ndarray) -> np.ndarray:
    """(v − mean)/√(var + ε) over the last axis (population variance)."""
    mean = v.mean(axis=-1, keepdims=True)
    centred = v - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return (centred / np.sqrt(var + np.float32(LAYER_NORM_EPSILON))).astype(np.float32)


@kernel(OperationType.LSTM, types=(F32, F16))
def lstm(params: LSTMParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    _check_not_zero_sized(inputs, "LSTM")
    t = [_float(i) for i in inputs] + [None] * (27 - len(inputs))
    x, h_prev, c_prev = t[LSTM_INPUT], t[LSTM_H_PREV], t[LSTM_C_PREV]
    g = params.activation

    def gate(w_x: int, w_h: int, peephole: int | None, ln: int, bias: int, cell: np.ndarray | None) -> np.ndarray:
        """Pre-activation of one gate: W_x·x + W_h·h_prev (+ peephole⊙cell), then bias or LN·w + bias."""
        pre = x @ t[w_x].T + h_prev @ t[w_h].T
        if params.use_peephole and peephole is not None and t[peephole] is not None:
            pre = pre + t[peephole] * cell
        if params.use_layer_norm:
            return _layer_norm(pre) * t[ln] + t[bias]
        return pre + t[bias]

    f = sigmoid(gate(LSTM_W_XF, LSTM_W_HF, LSTM_W_CF, LSTM_LN_F, LSTM_B_F, c_prev))
    if params.use_cifg:
        i = (np.float32(1) - f).astype(np.float32)
    else:
        i = sigmoid(gate(LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_LN_I, LSTM_B_I, c_prev))
    c_hat = apply_recurrent_activation(gate(LSTM_W_XC, LSTM_W_HC, None, LSTM_LN_C, LSTM_B_C, None), g)
    c = f * c_prev + i * c_hat
    if params.cell_clip > 0:
        c = np.clip(c, -params.cell_clip, params.cell_clip)
    o = sigmoid(gate(LSTM_W_XO, LSTM_W_HO, LSTM_W_CO, LSTM_LN_O, LSTM_B_O, c))
    m = o * apply_recurrent_activation(c, g)
    if params.use_projection:
        h = m @ t[LSTM_W_PROJ].T
        if params.use_projection_bias:
            h = h + t[LSTM_B_PROJ]
        if params.proj_clip > 0:
            h = np.clip(h, -params.proj_clip, params.proj_clip)
    else:
        h = m
    scratch = np.zeros(params.output_shapes[0], dtype=np.float32)  # content unspecified
    return _outputs(outputs, [scratch, h, c, h])


@kernel(OperationType.RNN, types=(F32, F16))
def rnn(params: RNNParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    _check_not_zero_sized(inputs, "RNN")
    x, w, r, bias, h_prev = (_float(i) for i in inputs[:5])
    h = apply_recurrent_activation(x @ w.T + h_prev @ r.T + bias, params.activation)
    return _outputs(outputs, [h, h])


@kernel(OperationType.SVDF, types=(F32, F16))
def svdf(params: SVDFParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    _check_not_zero_sized(inputs, "SVDF")
    x, wf, wt, bias, state = (_float(i) for i in inputs[:5])
    b, f, m = params.batch, params.num_filters, params.memory_size
    s = state.reshape(b, f, m).copy()
    s[:, :, m - 1] = x @ wf.T                                  # newest activation in the last slot
    t = np.einsum("bfm,fm->bf", s, wt)                         # filter over time
    out = t.reshape(b, params.num_units, params.rank).sum(axis=2)
    if params.has_bias and bias is not None:
        out = out + bias
    out = apply_recurrent_activation(out.astype(np.float32), params.activation)
    state_out = np.zeros_like(s)
    state_out[:, :, :m - 1] = s[:, :, 1:]                      # shift left; last slot = 0
    return _outputs(outputs, [state_out.reshape(b, m * f), out])
