"""Recurrent networks: the cells of HAL 1.0 — LSTM (16), RNN (24), SVDF (27), one time step each —
and their sequence forms of HAL 1.2 — UNIDIRECTIONAL_SEQUENCE_LSTM (92) / _RNN (93),
BIDIRECTIONAL_SEQUENCE_LSTM (42) / _RNN (43), the same cell steps over time; float32 / float16.

The decoded params carry everything a kernel needs (sizes, option flags, activation, clips), so a
lowering specialises from them alone.  Tensor roles are fixed by input position; the ``LSTM_*``
constants below name them.

Optional (may-be-NO_VALUE) inputs: an operand with lifetime NO_VALUE is absent; a constant, or any
operand at execution, is present; a *model input* before execution is undecided, because the
request may still omit it.  A rule or flag that depends on an undecided operand defers the
definition to execution (:class:`ShapeUnknown`).

The ``activation`` input of these ops is the TFLite activation enum (operands.md §4 note):
0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid are accepted.

The reference computes float16 in float32 and rounds the results to nearest even; it fails
(GENERAL_FAILURE) on a zero-sized input (operations.md §0.6).  The lowerings run with known shapes
and constant scalar arguments: recurrent_rnn.cl in 1 stage, recurrent_svdf.cl in 2, recurrent_lstm.cl in 2–3;
weights may be constants or model inputs (read in their HAL layout).  The full LSTM option set is
lowered: CIFG, peephole, projection (with/without bias), cell/projection clipping, layer
normalisation.  LSTM output 0 (scratch buffer, content unspecified) is not written.  The sequence
forms run on the reference device and, up to MAX_LOWERED_STEPS steps, on accelerators: one LSTM or RNN
step's launches per time step, addressing its time slice.  Every kernel also stores float16, computing
in float.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, float_io, known, numel, params_ok, scalars_constant
from ..errors import failure
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType
from .definition import OpParams, ShapeUnknown, TensorInfo, presence, require
from .registry import operation
from .signature import BOOL, F32, FLOAT_TYPES, OpContext, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

#: TFLite activation enum values the recurrent ops accept
RECURRENT_ACTIVATIONS = {0: "none", 1: "relu", 3: "relu6", 4: "tanh", 6: "sigmoid"}

# ---- LSTM input positions (operations.md 16) ------------------------------------------------------
LSTM_INPUT = 0
LSTM_W_XI, LSTM_W_XF, LSTM_W_XC, LSTM_W_XO = 1, 2, 3, 4
LSTM_W_HI, LSTM_W_HF, LSTM_W_HC, LSTM_W_HO = 5, 6, 7, 8
LSTM_W_CI, LSTM_W_CF, LSTM_W_CO = 9, 10, 11
LSTM_B_I, LSTM_B_F, LSTM_B_C, LSTM_B_O = 12, 13, 14, 15
LSTM_W_PROJ, LSTM_B_PROJ = 16, 17
LSTM_H_PREV, LSTM_C_PREV = 18, 19
LSTM_ACTIVATION, LSTM_CELL_CLIP, LSTM_PROJ_CLIP = 20, 21, 22
LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O = 23, 24, 25, 26
#: inputs that may be NO_VALUE
LSTM_OPTIONAL = (LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_W_CF, LSTM_W_CO, LSTM_B_I, LSTM_W_PROJ, LSTM_B_PROJ,
                 LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O)

#: epsilon of the LSTM layer normalisation (variance + eps under the square root)
LAYER_NORM_EPSILON = 1e-8


# ---- params -----------------------------------------------------------------------------------------

@dataclass
class LSTMParams(OpParams):
    """One LSTM step (operations.md 16).

    ``batch`` B, ``input_size`` I, ``num_units`` U (cells), ``output_size`` O (= U without
    projection).  Flags: ``use_cifg`` (no input gate: i = 1 − f; inputs 1, 5, 12 absent),
    ``use_peephole`` (w_cf, w_co present; w_ci too unless CIFG), ``use_projection`` (W_proj present),
    ``use_projection_bias`` (b_proj present), ``use_layer_norm`` (27-input form with LN weights:
    gates are LN(pre)·ln_w + bias instead of pre + bias).  ``activation`` is the TFLite enum of the
    cell/output activation g; ``cell_clip``/``proj_clip`` clip |c| / |h| when > 0 (0 = no clipping).
    Outputs: scratch [B, 3U or 4U], h_out [B, O], c_out [B, U], output [B, O].
    """

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    output_size: int = 0
    use_cifg: bool = False
    use_peephole: bool = False
    use_projection: bool = False
    use_projection_bias: bool = False
    use_layer_norm: bool = False
    activation: int = 4
    cell_clip: float = 0.0
    proj_clip: float = 0.0


@dataclass
class RNNParams(OpParams):
    """One basic RNN step: h = act(x·Wᵀ + h_prev·Rᵀ + bias) (operations.md 24).

    ``batch`` B, ``input_size`` I, ``num_units`` U; ``activation`` is the TFLite enum.
    Outputs: h_out [B, U] and output [B, U] (same values).
    """

    batch: int = 0
    input_size: int = 0
    num_units: int = 0
    activation: int = 0


@dataclass
class SVDFParams(OpParams):
    """One SVDF step (operations.md 27; state layout [B, M·F], App. B).

    ``batch`` B, ``input_size`` I, ``num_filters`` F (= rows of weights_feature / weights_time
    = num_units·rank), ``num_units`` U, ``rank``, ``memory_size`` M, ``activation`` (TFLite enum);
    ``has_bias`` is None while undecided (a model-input bias the request may omit; decided again
    at execution).  The state is viewed as [B, F, M]; outputs: state_out [B, M·F], output [B, U].
    """

    batch: int = 0
    input_size: int = 0
    num_filters: int = 0
    num_units: int = 0
    rank: int = 1
    memory_size: int = 0
    has_bias: bool | None = False
    activation: int = 0


# ---- signatures -------------------------------------------------------------------------------------

def _check_lstm(ctx: OpContext, t: OperandType) -> int:
    """The presence rules of the optional LSTM inputs (CIFG, peephole, projection, layer norm)."""
    p = ctx.present
    if p(LSTM_W_XI) != p(LSTM_W_HI):
        ctx.fail("CIFG: input-to-input (1) and recurrent-to-input (5) weights must be both present or both omitted")
    cifg = not p(LSTM_W_XI)
    if cifg and p(LSTM_B_I):
        ctx.fail("CIFG: the input gate bias (12) must be omitted")
    if not cifg and not p(LSTM_B_I):
        ctx.fail("the input gate bias (12) is required without CIFG")
    if not (((p(LSTM_W_CI) or cifg) and p(LSTM_W_CF) and p(LSTM_W_CO))
            or (not p(LSTM_W_CI) and not p(LSTM_W_CF) and not p(LSTM_W_CO))):
        ctx.fail("peephole weights (9, 10, 11) must be all present or all omitted")
    if p(LSTM_B_PROJ) and not p(LSTM_W_PROJ):
        ctx.fail("projection bias (17) given without projection weights (16)")
    if len(ctx.op.inputs) == 27:
        ln = [p(i) for i in (LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O)]
        if cifg:
            if ln[0]:
                ctx.fail("CIFG: the input layer-norm weights (23) must be omitted")
            if len(set(ln[1:])) != 1:
                ctx.fail("layer-norm weights (24, 25, 26) must be all present or all omitted")
        elif len(set(ln)) != 1:
            ctx.fail("layer-norm weights (23–26) must be all present or all omitted")
    return 1


#: 20 tensors, activation, cell clip, projection clip; the FL3 form adds the 4 layer-norm weights
LSTM_SIGNATURE = OpSignature(
    FLOAT_TYPES,
    (Variant("lstm", ("T",) * 20 + (i32, "F", "F"), ("T",) * 4, (((("T",) * 4), 3),)),),
    omittable=frozenset(LSTM_OPTIONAL),
    ranks={LSTM_INPUT: (2, 2), LSTM_H_PREV: (2, 2), LSTM_C_PREV: (2, 2)}, check=_check_lstm)

#: input, weights, recurrent weights, bias, hidden state, activation
RNN_SIGNATURE = OpSignature(
    FLOAT_TYPES, (Variant("rnn", ("T", "T", "T", "T", "T", i32), ("T", "T")),),
    ranks={0: (2, 2), 1: (2, 2), 2: (2, 2), 3: (1, 1), 4: (2, 2)})

#: input, weights_feature, weights_time, bias (omittable), state, rank, activation
SVDF_SIGNATURE = OpSignature(
    FLOAT_TYPES, (Variant("svdf", ("T", "T", "T", "T", "T", i32, i32), ("T", "T")),),
    omittable=frozenset({3}), ranks={0: (2, 2), 1: (2, 2), 2: (2, 2), 3: (1, 1), 4: (2, 2)})


# ---- definition helpers -----------------------------------------------------------------------------

def decided_presence(info: TensorInfo) -> bool:
    """Presence of an optional input; ShapeUnknown while it is undecided."""
    p = presence(info)
    if p is None:
        raise ShapeUnknown(f"operand {info.index}: presence of an optional input is only known at execution")
    return p


def recurrent_activation(info: TensorInfo, op_name: str) -> int:
    """The TFLite activation enum value of a recurrent op's activation input, checked."""
    code = info.scalar()
    require(code in RECURRENT_ACTIVATIONS, op_name,
            f"activation {code} is not one of {sorted(RECURRENT_ACTIVATIONS)} (none/relu/relu6/tanh/sigmoid)")
    return code


def _required(info: TensorInfo, op_name: str, what: str) -> None:
    require(not info.omitted, op_name, f"{what} (operand {info.index}) is required but has no value")


def _check_shape(info: TensorInfo, expected: tuple[int, ...], op_name: str, what: str) -> None:
    shape = info.dims()
    require(tuple(shape) == tuple(expected), op_name, f"{what} must have shape {list(expected)}, got {list(shape)}")


def _matrix(info: TensorInfo, op_name: str, what: str) -> tuple[int, int]:
    _required(info, op_name, what)
    shape = info.dims()
    require(len(shape) == 2, op_name, f"{what} must be 2-D, got shape {list(shape)}")
    return shape[0], shape[1]


# ---- reference kernels ------------------------------------------------------------------------------

def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


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


def lstm_step(params: LSTMParams, t: list, x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray,
              aux: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM step: (h, c) from x, h_prev, c_prev and the float cell tensors ``t`` in LSTM order (27
    slots, None where absent).  ``aux`` = (aux input, [W_aux to i, f, c, o]) adds W_aux·aux to each
    gate whose weights are present (bidirectional cross-linking)."""
    g = params.activation

    def gate(w_x: int, w_h: int, peephole: int | None, ln: int, bias: int, cell: np.ndarray | None,
             k: int) -> np.ndarray:
        """Pre-activation of one gate: W_x·x + W_h·h_prev (+ W_aux·aux) (+ peephole⊙cell), then bias
        or LN·w + bias."""
        pre = x @ t[w_x].T + h_prev @ t[w_h].T
        if aux is not None and aux[1][k] is not None:
            pre = pre + aux[0] @ aux[1][k].T
        if params.use_peephole and peephole is not None and t[peephole] is not None:
            pre = pre + t[peephole] * cell
        if params.use_layer_norm:
            return _layer_norm(pre) * t[ln] + t[bias]
        return pre + t[bias]

    f = sigmoid(gate(LSTM_W_XF, LSTM_W_HF, LSTM_W_CF, LSTM_LN_F, LSTM_B_F, c_prev, 1))
    if params.use_cifg:
        i = (np.float32(1) - f).astype(np.float32)
    else:
        i = sigmoid(gate(LSTM_W_XI, LSTM_W_HI, LSTM_W_CI, LSTM_LN_I, LSTM_B_I, c_prev, 0))
    c_hat = apply_recurrent_activation(gate(LSTM_W_XC, LSTM_W_HC, None, LSTM_LN_C, LSTM_B_C, None, 2), g)
    c = f * c_prev + i * c_hat
    if params.cell_clip > 0:
        c = np.clip(c, -params.cell_clip, params.cell_clip)
    o = sigmoid(gate(LSTM_W_XO, LSTM_W_HO, LSTM_W_CO, LSTM_LN_O, LSTM_B_O, c, 3))
    m = o * apply_recurrent_activation(c, g)
    if params.use_projection:
        h = m @ t[LSTM_W_PROJ].T
        if params.use_projection_bias:
            h = h + t[LSTM_B_PROJ]
        if params.proj_clip > 0:
            h = np.clip(h, -params.proj_clip, params.proj_clip)
    else:
        h = m
    return h.astype(np.float32), c.astype(np.float32)


def reference_lstm(params: LSTMParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    _check_not_zero_sized(inputs, "LSTM")
    t = [_float(i) for i in inputs] + [None] * (27 - len(inputs))
    h, c = lstm_step(params, t, t[LSTM_INPUT], t[LSTM_H_PREV], t[LSTM_C_PREV])
    scratch = np.zeros(params.output_shapes[0], dtype=np.float32)  # content unspecified
    return _outputs(outputs, [scratch, h, c, h])


def reference_rnn(params: RNNParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    _check_not_zero_sized(inputs, "RNN")
    x, w, r, bias, h_prev = (_float(i) for i in inputs[:5])
    h = apply_recurrent_activation(x @ w.T + h_prev @ r.T + bias, params.activation)
    return _outputs(outputs, [h, h])


def reference_svdf(params: SVDFParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
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


# ---- lowerings --------------------------------------------------------------------------------------

def _lowerable(ctx: LoweringContext, scalar_inputs: list[int], types=(F32,)) -> bool:
    """Decoded, scalars constant, every present tensor of one of ``types`` (all the same) with a known
    shape, a lowered activation and a non-empty batch."""
    tensors = [t for t in [*ctx.inputs, *ctx.outputs] if t.shape != () and not t.omitted]
    return (params_ok(ctx) and scalars_constant(ctx, scalar_inputs) and tensors[0].type in types
            and all(t.type == tensors[0].type for t in tensors) and known(*tensors)
            and ctx.params.activation in RECURRENT_ACTIVATIONS and ctx.params.batch > 0)


def _rnn_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [5], FLOAT_TYPES)


def lower_rnn(ctx: LoweringContext) -> None:
    p = ctx.params
    emit_rnn_step(ctx, p, [ctx.input(k) for k in range(1, 4)], x=(ctx.input(0), 0, p.input_size),
                  h_prev=(ctx.input(4), 0, p.num_units), h_out=ctx.output(0), out=(ctx.output(1), 0, p.num_units))


def emit_rnn_step(ctx: LoweringContext, p: RNNParams, weights: list, x: tuple, h_prev: tuple, h_out,
                  out: tuple, aux: tuple | None = None) -> None:
    """The launch of one RNN step: ``weights`` = (W, R, bias); ``x``, ``h_prev`` and ``out`` are
    (tensor, offset, batch stride) rows of a time slice; ``aux`` = (tensor, offset, batch stride, width,
    W_aux) adds the auxiliary input's term."""
    t = ctx.inputs[0]
    d = {"T": ctype(t), **float_io(t), "B": p.batch, "I": p.input_size, "U": p.num_units, "ACT": p.activation,
         "X_OFF": x[1], "X_BSTRIDE": x[2],
         "H_OFF": h_prev[1], "H_BSTRIDE": h_prev[2], "OUT_OFF": out[1], "OUT_BSTRIDE": out[2],
         "AUX": int(aux is not None), "A_OFF": aux[1] if aux else 0, "A_BSTRIDE": aux[2] if aux else 0,
         "A": aux[3] if aux else 0}
    ins = [x[0], *weights, h_prev[0]] + ([aux[0], aux[4]] if aux else [])
    ctx.emit("recurrent_rnn.cl", d, ins, [h_out, out[0]], (p.num_units, p.batch))


def _svdf_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [5, 6], FLOAT_TYPES)


def lower_svdf(ctx: LoweringContext) -> None:
    p = ctx.params
    # an undecided bias (None) is a model input: accelerators run only requests that provide it
    has_bias = p.has_bias is not False
    x = ctx.inputs[0]
    d = {"T": ctype(x), **float_io(x), "B": p.batch, "I": p.input_size, "F": p.num_filters, "U": p.num_units,
         "RANK": p.rank, "M": p.memory_size, "ACT": p.activation, "HAS_BIAS": int(has_bias)}
    t = ctx.scratch("float32", p.batch * p.num_filters)
    ctx.emit("recurrent_svdf.cl", {**d, "STAGE": 0}, [ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(4)],
             [ctx.output(0), t], (p.num_filters, p.batch))
    ins = [t, ctx.input(3)] if has_bias else [t]
    ctx.emit("recurrent_svdf.cl", {**d, "STAGE": 1}, ins, [ctx.output(1)], (p.num_units, p.batch))


def _lstm_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [LSTM_ACTIVATION, LSTM_CELL_CLIP, LSTM_PROJ_CLIP], FLOAT_TYPES)


def lower_lstm(ctx: LoweringContext) -> None:
    p = ctx.params
    emit_lstm_step(ctx, p, ctx.input, x=(ctx.input(LSTM_INPUT), 0, p.input_size),
                   h_prev=(ctx.input(LSTM_H_PREV), 0, p.output_size), c_prev=ctx.input(LSTM_C_PREV),
                   c_out=ctx.output(2), h_out=ctx.output(1), out=(ctx.output(3), 0, p.output_size))


def emit_lstm_step(ctx: LoweringContext, p: LSTMParams, cell, x: tuple, h_prev: tuple, c_prev, c_out, h_out,
                   out: tuple, aux: tuple | None = None) -> None:
    """The launches of one LSTM step.  ``cell(slot)`` is the tensor of an LSTM-order input slot;
    ``x``, ``h_prev`` and ``out`` are (tensor, offset, batch stride): rows of a time slice; ``aux`` =
    (tensor, offset, batch stride, width, [weights to i, f, c, o]) adds the auxiliary input's terms."""
    cifg, peep, ln, proj = p.use_cifg, p.use_peephole, p.use_layer_norm, p.use_projection
    t = ctx.inputs[0]
    d = {"T": ctype(t), **float_io(t), "B": p.batch, "I": p.input_size, "U": p.num_units, "O": p.output_size, "ACT": p.activation,
         "CIFG": int(cifg), "PEEP": int(peep), "LN": int(ln), "PROJ": int(proj),
         "PROJ_BIAS": int(p.use_projection_bias), "HAS_CELL_CLIP": int(p.cell_clip > 0),
         "CELL_CLIP": float(p.cell_clip), "HAS_PROJ_CLIP": int(p.proj_clip > 0), "PROJ_CLIP": float(p.proj_clip),
         "X_OFF": x[1], "X_BSTRIDE": x[2], "H_OFF": h_prev[1], "H_BSTRIDE": h_prev[2], "OUT_OFF": out[1],
         "OUT_BSTRIDE": out[2], "AUX": int(aux is not None), "A_OFF": aux[1] if aux else 0,
         "A_BSTRIDE": aux[2] if aux else 0, "A": aux[3] if aux else 0}
    pre = ctx.scratch("float32", p.batch * 4 * p.num_units)
    # stage 0: gate pre-activations
    ws = ([LSTM_W_XI] if not cifg else []) + [LSTM_W_XF, LSTM_W_XC, LSTM_W_XO] + \
         ([LSTM_W_HI] if not cifg else []) + [LSTM_W_HF, LSTM_W_HC, LSTM_W_HO]
    aux_ins = [] if aux is None else [aux[0]] + aux[4][1 if cifg else 0:]
    ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 0}, [x[0], h_prev[0]] + [cell(k) for k in ws] + aux_ins,
             [pre], (4 * p.num_units, p.batch))
    # stage 1: cell
    ins = [pre, c_prev]
    if peep:
        ins += ([cell(LSTM_W_CI)] if not cifg else []) + [cell(LSTM_W_CF), cell(LSTM_W_CO)]
    ins += ([cell(LSTM_B_I)] if not cifg else []) + [cell(k) for k in (LSTM_B_F, LSTM_B_C, LSTM_B_O)]
    if ln:
        ins += ([cell(LSTM_LN_I)] if not cifg else []) + [cell(k) for k in (LSTM_LN_F, LSTM_LN_C, LSTM_LN_O)]
    if proj:
        m = ctx.scratch("float32", p.batch * p.num_units)
        outs = [c_out, m]
    else:
        outs = [c_out, h_out, out[0]]
    gsize = (p.batch,) if ln else (p.num_units, p.batch)
    ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 1}, ins, outs, gsize)
    # stage 2: projection
    if proj:
        ins = [m, cell(LSTM_W_PROJ)] + ([cell(LSTM_B_PROJ)] if p.use_projection_bias else [])
        ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 2}, ins, [h_out, out[0]], (p.output_size, p.batch))


# ---- definitions ------------------------------------------------------------------------------------

def recurrent_multiply_adds(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> int:
    """Every weight and state is read once per input row (a batch entry of one time step)."""
    x = inputs[0].shape
    rows = numel(x[:-1]) if x else 1
    return rows * sum(numel(t.shape) for t in inputs[1:] if t.shape is not None)


@operation(OperationType.LSTM, signature=LSTM_SIGNATURE, reference=reference_lstm, lower=lower_lstm,
           supports=_lstm_supports, multiply_adds=recurrent_multiply_adds)
def lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LSTMParams:
    name = "LSTM"
    x = inputs[LSTM_INPUT]
    _required(x, name, "input")
    xs = x.dims()
    require(len(xs) == 2, name, f"input must be 2-D [batch, input_size], got {list(xs)}")
    return decode_lstm_cell(inputs, xs[0], xs[1], name)


def decode_lstm_cell(inputs: list[TensorInfo], batch: int, input_size: int, name: str) -> LSTMParams:
    """The cell of an LSTM step from its inputs in LSTM order (23 or 27; slot 0, the input, is not
    read): sizes, option groups, every shape; the output shapes are those of op 16."""
    num_units, i2 = _matrix(inputs[LSTM_W_XO], name, "input-to-output weights")
    require(i2 == input_size, name, f"input-to-output weights have {i2} columns, input size is {input_size}")
    u2, output_size = _matrix(inputs[LSTM_W_HO], name, "recurrent-to-output weights")
    require(u2 == num_units, name, f"recurrent-to-output weights have {u2} rows, expected {num_units}")

    activation = recurrent_activation(inputs[LSTM_ACTIVATION], name)
    cell_clip = inputs[LSTM_CELL_CLIP].scalar()
    proj_clip = inputs[LSTM_PROJ_CLIP].scalar()
    require(cell_clip >= 0, name, f"cell_clip {cell_clip} must be >= 0")
    require(proj_clip >= 0, name, f"proj_clip {proj_clip} must be >= 0")

    # the 23-input form (HAL 1.0) has no layer-norm inputs: treat them as omitted
    present = {i: decided_presence(inputs[i]) if i < len(inputs) else False for i in LSTM_OPTIONAL}

    # CIFG: input-to-input and recurrent-to-input weights both absent, or both present.
    require(present[LSTM_W_XI] == present[LSTM_W_HI], name,
            "input-to-input and recurrent-to-input weights must both be present or both be omitted (CIFG)")
    use_cifg = not present[LSTM_W_XI]
    if use_cifg:
        require(not present[LSTM_B_I], name, "input gate bias must be omitted with CIFG")
    else:
        require(present[LSTM_B_I], name, "input gate bias is required without CIFG")
    # Peephole: all three or none (with CIFG, w_ci may be absent while w_cf, w_co are present).
    peep = (present[LSTM_W_CI], present[LSTM_W_CF], present[LSTM_W_CO])
    require(peep == (False, False, False) or ((peep[0] or use_cifg) and peep[1] and peep[2]), name,
            "peephole weights (cell-to-input/forget/output) must be all present or all omitted")
    use_peephole = present[LSTM_W_CO]
    # Projection: bias only with weights.
    use_projection = present[LSTM_W_PROJ]
    require(use_projection or not present[LSTM_B_PROJ], name, "projection bias given without projection weights")
    # Layer norm: all or none (with CIFG, the input-gate LN weights must be absent).
    ln = (present[LSTM_LN_I], present[LSTM_LN_F], present[LSTM_LN_C], present[LSTM_LN_O])
    if use_cifg:
        require(not ln[0], name, "input layer-norm weights must be omitted with CIFG")
        require(ln[1] == ln[2] == ln[3], name,
                "forget/cell/output layer-norm weights must be all present or all omitted")
    else:
        require(ln[0] == ln[1] == ln[2] == ln[3], name, "layer-norm weights must be all present or all omitted")
    use_layer_norm = ln[3]
    if not use_projection:
        require(output_size == num_units, name,
                f"without projection the output size ({output_size}) must equal num_units ({num_units})")

    # Shapes of every present tensor.
    gate_in = [LSTM_W_XF, LSTM_W_XC] + ([] if use_cifg else [LSTM_W_XI])
    gate_rec = [LSTM_W_HF, LSTM_W_HC] + ([] if use_cifg else [LSTM_W_HI])
    for i in gate_in:
        _required(inputs[i], name, f"input {i}")
        _check_shape(inputs[i], (num_units, input_size), name, f"input {i} (input weights)")
    for i in gate_rec:
        _required(inputs[i], name, f"input {i}")
        _check_shape(inputs[i], (num_units, output_size), name, f"input {i} (recurrent weights)")
    vectors_u = [LSTM_B_F, LSTM_B_C, LSTM_B_O]
    vectors_u += [i for i in (LSTM_B_I, LSTM_W_CI, LSTM_W_CF, LSTM_W_CO, LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O)
                  if present[i]]
    for i in vectors_u:
        _required(inputs[i], name, f"input {i}")
        _check_shape(inputs[i], (num_units,), name, f"input {i}")
    if use_projection:
        _check_shape(inputs[LSTM_W_PROJ], (output_size, num_units), name, "projection weights")
    if present[LSTM_B_PROJ]:
        _check_shape(inputs[LSTM_B_PROJ], (output_size,), name, "projection bias")
    _required(inputs[LSTM_H_PREV], name, "output state in")
    _check_shape(inputs[LSTM_H_PREV], (batch, output_size), name, "output state in")
    _required(inputs[LSTM_C_PREV], name, "cell state in")
    _check_shape(inputs[LSTM_C_PREV], (batch, num_units), name, "cell state in")

    scratch = (batch, num_units * (3 if use_cifg else 4))
    return LSTMParams(output_shapes=[scratch, (batch, output_size), (batch, num_units), (batch, output_size)],
                      batch=batch, input_size=input_size, num_units=num_units, output_size=output_size,
                      use_cifg=use_cifg, use_peephole=use_peephole, use_projection=use_projection,
                      use_projection_bias=present[LSTM_B_PROJ], use_layer_norm=use_layer_norm,
                      activation=activation, cell_clip=float(cell_clip), proj_clip=float(proj_clip))


@operation(OperationType.RNN, signature=RNN_SIGNATURE, reference=reference_rnn, lower=lower_rnn,
           supports=_rnn_supports, multiply_adds=recurrent_multiply_adds)
def rnn(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> RNNParams:
    name = "RNN"
    x, w, r, bias, h_prev, act = inputs[:6]
    batch, input_size = _matrix(x, name, "input")
    num_units, i2 = _matrix(w, name, "weights")
    require(i2 == input_size, name, f"weights have {i2} columns, input size is {input_size}")
    _matrix(r, name, "recurrent weights")
    _check_shape(r, (num_units, num_units), name, "recurrent weights")
    _required(bias, name, "bias")
    _check_shape(bias, (num_units,), name, "bias")
    _required(h_prev, name, "hidden state in")
    _check_shape(h_prev, (batch, num_units), name, "hidden state in")
    activation = recurrent_activation(act, name)
    shape = (batch, num_units)
    return RNNParams(output_shapes=[shape, shape], batch=batch, input_size=input_size, num_units=num_units,
                     activation=activation)


@operation(OperationType.SVDF, signature=SVDF_SIGNATURE, reference=reference_svdf, lower=lower_svdf,
           supports=_svdf_supports, multiply_adds=recurrent_multiply_adds)
def svdf(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SVDFParams:
    name = "SVDF"
    x, wf, wt, bias, state, rank_info, act = inputs[:7]
    batch, input_size = _matrix(x, name, "input")
    num_filters, i2 = _matrix(wf, name, "weights_feature")
    require(i2 == input_size, name, f"weights_feature has {i2} columns, input size is {input_size}")
    f2, memory_size = _matrix(wt, name, "weights_time")
    require(f2 == num_filters, name, f"weights_time has {f2} rows, weights_feature has {num_filters}")
    rank = rank_info.scalar()
    require(rank > 0, name, f"rank {rank} must be positive")
    require(num_filters % rank == 0, name, f"number of filters {num_filters} is not a multiple of rank {rank}")
    num_units = num_filters // rank
    has_bias = presence(bias)
    if has_bias:
        _check_shape(bias, (num_units,), name, "bias")
    _required(state, name, "state in")
    _check_shape(state, (batch, memory_size * num_filters), name, "state in")
    activation = recurrent_activation(act, name)
    return SVDFParams(output_shapes=[(batch, memory_size * num_filters), (batch, num_units)],
                      batch=batch, input_size=input_size, num_filters=num_filters, num_units=num_units,
                      rank=rank, memory_size=memory_size, has_bias=has_bias, activation=activation)


# ---- sequence forms (FL3): the cells above over T time steps ---------------------------------------------
# Inputs are [T, B, I] (time-major) or [B, T, I]; outputs follow the same layout.  A bidirectional
# operation runs a forward cell over t = 0…T−1 and a backward cell over t = T−1…0 (writing its output
# at the same t); the auxiliary input links them: aux input with aux weights adds W_aux·aux_t to each
# gate (cross-linking); aux input without weights feeds the backward cell instead of input 0
# (parallel linking, FL4); aux weights without an aux input are invalid.

@dataclass
class SequenceParams(OpParams):
    """A sequence operation: ``cells`` (one per direction: LSTMParams or RNNParams, forward first),
    ``steps`` T, ``time_major``, ``merge`` (bidirectional outputs concatenated on the last axis),
    ``linking`` ("none", "cross" or "parallel"), ``states`` (final states are outputs, FL4)."""

    cells: list = None
    steps: int = 0
    time_major: bool = True
    merge: bool = False
    linking: str = "none"
    states: bool = False


def _sequence_input(x: TensorInfo, time_major: bool, name: str, what: str = "input") -> tuple[int, int, int]:
    """(T, B, I) of a rank-3 sequence input."""
    _required(x, name, what)
    dims = x.dims()
    require(len(dims) == 3, name, f"{what} must be rank 3, got shape {list(dims)}")
    steps, batch = (dims[0], dims[1]) if time_major else (dims[1], dims[0])
    return steps, batch, dims[2]


def _sequence_layout(steps: int, batch: int, width: int, time_major: bool) -> tuple[int, int, int]:
    return (steps, batch, width) if time_major else (batch, steps, width)


def _linking(inputs: list[TensorInfo], aux: int, weights: list[int], steps: int, batch: int, time_major: bool,
             name: str) -> tuple[str, int]:
    """(linking mode, auxiliary input size) of a bidirectional operation; the aux input's time and
    batch sizes must equal the input's."""
    has_aux = decided_presence(inputs[aux])
    has_weights = [decided_presence(inputs[i]) for i in weights]
    if not has_aux:
        require(not any(has_weights), name, "auxiliary weights given without an auxiliary input")
        return "none", 0
    aux_steps, aux_batch, aux_size = _sequence_input(inputs[aux], time_major, name, "auxiliary input")
    require((aux_steps, aux_batch) == (steps, batch), name, "the auxiliary input's time and batch sizes "
            f"({aux_steps}, {aux_batch}) differ from the input's ({steps}, {batch})")
    return ("cross" if any(has_weights) else "parallel"), aux_size


def _bidirectional_shapes(n_outputs: int, merge: bool, with_states: int, steps: int, batch: int, fw_width: int,
                          bw_width: int, time_major: bool, name: str) -> list[tuple[int, ...]]:
    """The sequence output shapes of a bidirectional operation (merged: one, else one per direction),
    after checking the output count; ``with_states`` is the count that adds the final states."""
    legal = (1, with_states - 1) if merge else (2, with_states)
    require(n_outputs in legal, name, f"{n_outputs} outputs with merge_outputs={merge} (legal: {legal[0]} or "
            f"{legal[1]})")
    if merge:
        return [_sequence_layout(steps, batch, fw_width + bw_width, time_major)]
    return [_sequence_layout(steps, batch, fw_width, time_major), _sequence_layout(steps, batch, bw_width, time_major)]


def _time_major_view(x: np.ndarray, time_major: bool) -> np.ndarray:
    return x if time_major else x.transpose(1, 0, 2)


def _sequence_arrays(params: SequenceParams, inputs: list[TensorInfo], what: str) -> tuple[list, np.ndarray]:
    """Every input as float32 (None where omitted) and the sequence input viewed time-major."""
    _check_not_zero_sized(inputs, what)
    f = [_float(i) for i in inputs]
    return f, _time_major_view(f[0], params.time_major)


#: UNIDIRECTIONAL_SEQUENCE_LSTM (92): the LSTM tensors 0–19, activation, clips, time_major, LN weights
SEQUENCE_LSTM_SIGNATURE = OpSignature(
    FLOAT_TYPES,
    (Variant("sequence", ("T",) * 20 + (i32, "F", "F", BOOL) + ("T",) * 4, ("T",)),
     Variant("sequence_states", ("T",) * 20 + (i32, "F", "F", BOOL) + ("T",) * 4, ("T",) * 3, feature_level=4)),
    omittable=frozenset(set(LSTM_OPTIONAL) - {LSTM_LN_I, LSTM_LN_F, LSTM_LN_C, LSTM_LN_O} | {24, 25, 26, 27}),
    ranks={0: (3, 3), LSTM_H_PREV: (2, 2), LSTM_C_PREV: (2, 2)})


def _lstm_cell_inputs(inputs: list[TensorInfo], x: TensorInfo, first: int, h: int, c: int, scalars: int,
                      ln: int) -> list[TensorInfo]:
    """One direction's cell inputs in LSTM order (27 slots): input, 17 cell tensors from ``first``,
    the states, the 3 scalars from ``scalars`` and the 4 layer-norm weights from ``ln``."""
    return ([x] + inputs[first:first + 17] + [inputs[h], inputs[c]] + inputs[scalars:scalars + 3]
            + inputs[ln:ln + 4])


def _run_lstm(cell: LSTMParams, t: list, x: np.ndarray, aux: tuple | None, reverse: bool):
    """Every step of one direction over time-major ``x``: (outputs [T, B, O], final h, final c)."""
    h, c = t[LSTM_H_PREV], t[LSTM_C_PREV]
    ys = [None] * x.shape[0]
    for step in (reversed(range(x.shape[0])) if reverse else range(x.shape[0])):
        step_aux = None if aux is None else (aux[0][step], aux[1])
        h, c = lstm_step(cell, t, x[step], h, c, step_aux)
        ys[step] = h
    return np.stack(ys) if ys else np.zeros((0, h.shape[0], cell.output_size), np.float32), h, c


def reference_sequence_lstm(params: SequenceParams, inputs: list[TensorInfo],
                            outputs: list[TensorInfo]) -> list[np.ndarray]:
    f, x = _sequence_arrays(params, inputs, "sequence LSTM")
    tm = params.time_major
    if len(params.cells) == 1:
        t = [f[0]] + f[1:20] + f[20:23] + f[24:28]
        y, h, c = _run_lstm(params.cells[0], t, x, None, False)
        return _outputs(outputs, [_time_major_view(y, tm), h, c][:len(outputs)])
    fw_t = [f[0]] + f[1:18] + [f[35], f[36]] + f[48:51] + f[53:57]
    bw_t = [f[0]] + f[18:35] + [f[37], f[38]] + f[48:51] + f[57:61]
    aux = None if params.linking == "none" else _time_major_view(f[39], tm)
    fw_aux = (aux, f[40:44]) if params.linking == "cross" else None
    bw_aux = (aux, f[44:48]) if params.linking == "cross" else None
    fw_y, fw_h, fw_c = _run_lstm(params.cells[0], fw_t, x, fw_aux, False)
    bw_y, bw_h, bw_c = _run_lstm(params.cells[1], bw_t, aux if params.linking == "parallel" else x, bw_aux, True)
    ys = [np.concatenate([fw_y, bw_y], axis=2)] if params.merge else [fw_y, bw_y]
    results = [_time_major_view(y, tm) for y in ys]
    if params.states:
        results += [fw_h, fw_c, bw_h, bw_c]
    return _outputs(outputs, results)


def time_rows(p: SequenceParams, t: int, offset: int, total: int) -> tuple[int, int]:
    """(offset, batch stride) of step t's rows, from column ``offset`` on, in a [T, B, total]
    (time-major) or [B, T, total] tensor."""
    batch = p.cells[0].batch
    return (t * batch * total + offset, total) if p.time_major else (t * total + offset, p.steps * total)


def _sequence_lstm_supports(ctx: LoweringContext) -> bool:
    """Float32 or float16 (computed in float), known shapes, constant scalars, at most
    MAX_LOWERED_STEPS steps (one launch group per step)."""
    p = ctx.params
    scalars = [20, 21, 22, 23] if len(p.cells) == 1 else [48, 49, 50, 51, 52]
    tensors = [t for t in [*ctx.inputs, *ctx.outputs] if t.shape != () and not t.omitted]
    return (params_ok(ctx) and scalars_constant(ctx, scalars) and tensors[0].type in FLOAT_TYPES
            and all(t.type == tensors[0].type for t in tensors)
            and known(*tensors) and 0 < p.steps <= MAX_LOWERED_STEPS and p.cells[0].batch > 0
            and _aux_weights_complete(ctx))


def _aux_weights_complete(ctx: LoweringContext) -> bool:
    """Cross-linking: every used gate of each direction has its auxiliary weights (the kernel adds
    them all; the input gate's are unused with CIFG)."""
    p = ctx.params
    if p.linking != "cross":
        return True
    return all(not ctx.inputs[first + k].omitted for first, cell in ((40, p.cells[0]), (44, p.cells[1]))
               for k in range(4) if not (k == 0 and cell.use_cifg))



#: sequences longer than this stay on the reference device (each step is its own launches)
MAX_LOWERED_STEPS = 128


def lower_sequence_lstm(ctx: LoweringContext) -> None:
    """Each direction's steps in time order, each step the launches of one LSTM step addressing its
    time slice: x and the output rows at offset + b·stride, h_prev read back from the previous step's
    output rows, c in two scratch rows used in turn."""
    p = ctx.params
    bidirectional = len(p.cells) == 2
    width = sum(c.output_size for c in p.cells) if p.merge else None
    aux_size = ctx.inputs[39].shape[2] if bidirectional and p.linking != "none" else 0

    def rows(t: int, offset: int, total: int) -> tuple[int, int]:
        return time_rows(p, t, offset, total)

    for direction, cell in enumerate(p.cells):
        if bidirectional:
            first, ln, h_init, c_init = (1, 53, 35, 36) if direction == 0 else (18, 57, 37, 38)
            slots = {k: first + k - 1 for k in range(1, 18)}
            slots.update({LSTM_LN_I + k: ln + k for k in range(4)})
            x_in = ctx.input(39) if direction == 1 and p.linking == "parallel" else ctx.input(0)
            y = ctx.output(0) if p.merge or direction == 0 else ctx.output(1)
            col = p.cells[0].output_size if p.merge and direction == 1 else 0
            total = width if p.merge else cell.output_size
            state_base = (1 if p.merge else 2) + 2 * direction
            aux_weights = [ctx.input((40 if direction == 0 else 44) + k) for k in range(4)]
        else:
            slots = {k: k for k in range(1, 18)}
            slots.update({LSTM_LN_I + k: 24 + k for k in range(4)})
            h_init, c_init, x_in, y, col, total, state_base = 18, 19, ctx.input(0), ctx.output(0), 0, cell.output_size, 1
            aux_weights = None
        h_final = ctx.output(state_base) if p.states else ctx.scratch("float32", cell.batch * cell.output_size)
        c_final = ctx.output(state_base + 1) if p.states else None
        c_rows = [ctx.scratch("float32", cell.batch * cell.num_units) for _ in range(2)]
        order = list(reversed(range(p.steps))) if direction == 1 else list(range(p.steps))
        for n, t in enumerate(order):
            if n == 0:
                h_prev = (ctx.input(h_init), 0, cell.output_size)
                c_prev = ctx.input(c_init)
            else:
                h_prev = (y, *rows(order[n - 1], col, total))
                c_prev = c_rows[(n - 1) % 2]
            last = n == p.steps - 1
            emit_lstm_step(ctx, cell, lambda slot: ctx.input(slots[slot]),
                           x=(x_in, *rows(t, 0, cell.input_size)), h_prev=h_prev, c_prev=c_prev,
                           c_out=c_final if last and c_final is not None else c_rows[n % 2], h_out=h_final,
                           out=(y, *rows(t, col, total)),
                           aux=(ctx.input(39), *rows(t, 0, aux_size), aux_size, aux_weights)
                           if p.linking == "cross" else None)


@operation(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, signature=SEQUENCE_LSTM_SIGNATURE,
           reference=reference_sequence_lstm, lower=lower_sequence_lstm, supports=_sequence_lstm_supports, multiply_adds=recurrent_multiply_adds)
def unidirectional_sequence_lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SequenceParams:
    name = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    time_major = bool(inputs[23].scalar())
    steps, batch, input_size = _sequence_input(inputs[0], time_major, name)
    cell = decode_lstm_cell(_lstm_cell_inputs(inputs, inputs[0], 1, 18, 19, 20, 24), batch, input_size, name)
    shapes = [_sequence_layout(steps, batch, cell.output_size, time_major)]
    if len(outputs) == 3:
        shapes += [(batch, cell.output_size), (batch, cell.num_units)]
    return SequenceParams(output_shapes=shapes, cells=[cell], steps=steps, time_major=time_major,
                          states=len(outputs) == 3)


#: BIDIRECTIONAL_SEQUENCE_LSTM (42): 61 inputs; outputs 1 or 2 (merged or not), 5 or 6 with final states
BIDIRECTIONAL_LSTM_SIGNATURE = OpSignature(
    FLOAT_TYPES,
    tuple(Variant(f"bidirectional_{n}", ("T",) * 48 + (i32, "F", "F", BOOL, BOOL) + ("T",) * 8, ("T",) * n,
                  feature_level=3 if n < 5 else 4) for n in (1, 2, 5, 6)),
    omittable=frozenset({1, 5, 9, 10, 11, 12, 16, 17, 18, 22, 26, 27, 28, 29, 33, 34, 39, 40, 41, 42, 43, 44, 45,
                         46, 47} | set(range(53, 61))),
    ranks={0: (3, 3), 35: (2, 2), 36: (2, 2), 37: (2, 2), 38: (2, 2)})


@operation(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, signature=BIDIRECTIONAL_LSTM_SIGNATURE,
           reference=reference_sequence_lstm, lower=lower_sequence_lstm, supports=_sequence_lstm_supports, multiply_adds=recurrent_multiply_adds)
def bidirectional_sequence_lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SequenceParams:
    name = "BIDIRECTIONAL_SEQUENCE_LSTM"
    time_major, merge = bool(inputs[52].scalar()), bool(inputs[51].scalar())
    steps, batch, input_size = _sequence_input(inputs[0], time_major, name)
    linking, aux_size = _linking(inputs, 39, list(range(40, 48)), steps, batch, time_major, name)
    bw_x, bw_size = (inputs[39], aux_size) if linking == "parallel" else (inputs[0], input_size)
    fw = decode_lstm_cell(_lstm_cell_inputs(inputs, inputs[0], 1, 35, 36, 48, 53), batch, input_size, name)
    bw = decode_lstm_cell(_lstm_cell_inputs(inputs, bw_x, 18, 37, 38, 48, 57), batch, bw_size, name)
    if linking == "cross":
        for first, cell in ((40, fw), (44, bw)):
            for k in range(4):
                if presence(inputs[first + k]):
                    _check_shape(inputs[first + k], (cell.num_units, aux_size), name, f"auxiliary weights {first + k}")
    shapes = _bidirectional_shapes(len(outputs), merge, 6, steps, batch, fw.output_size, bw.output_size,
                                   time_major, name)
    states = len(outputs) > 2
    if states:
        shapes += [(batch, fw.output_size), (batch, fw.num_units), (batch, bw.output_size), (batch, bw.num_units)]
    return SequenceParams(output_shapes=shapes, cells=[fw, bw], steps=steps, time_major=time_major, merge=merge,
                          linking=linking, states=states)


#: UNIDIRECTIONAL_SEQUENCE_RNN (93): input, W, R, bias, h_init, activation, time_major (an INT32)
SEQUENCE_RNN_SIGNATURE = OpSignature(
    FLOAT_TYPES,
    (Variant("sequence", ("T",) * 5 + (i32, i32), ("T",)),
     Variant("sequence_state", ("T",) * 5 + (i32, i32), ("T", "T"), feature_level=4)),
    ranks={0: (3, 3), 1: (2, 2), 2: (2, 2), 3: (1, 1), 4: (2, 2)})


def _decode_rnn_cell(inputs: list[TensorInfo], w: int, batch: int, input_size: int, name: str) -> RNNParams:
    """An RNN cell from its weights, recurrent weights, bias and initial state at ``w``…``w + 3``."""
    num_units, i2 = _matrix(inputs[w], name, f"weights (input {w})")
    require(i2 == input_size, name, f"weights (input {w}) have {i2} columns, input size is {input_size}")
    _check_shape(inputs[w + 1], (num_units, num_units), name, f"recurrent weights (input {w + 1})")
    _check_shape(inputs[w + 2], (num_units,), name, f"bias (input {w + 2})")
    _check_shape(inputs[w + 3], (batch, num_units), name, f"initial hidden state (input {w + 3})")
    return RNNParams(batch=batch, input_size=input_size, num_units=num_units)


def _run_rnn(cell: RNNParams, w, r, b, h, x: np.ndarray, aux: tuple | None, reverse: bool):
    """Every step of one direction over time-major ``x``: (outputs [T, B, U], final h)."""
    ys = [None] * x.shape[0]
    for step in (reversed(range(x.shape[0])) if reverse else range(x.shape[0])):
        pre = x[step] @ w.T + h @ r.T + b
        if aux is not None:
            pre = pre + aux[0][step] @ aux[1].T
        h = apply_recurrent_activation(pre.astype(np.float32), cell.activation)
        ys[step] = h
    return np.stack(ys) if ys else np.zeros((0, h.shape[0], cell.num_units), np.float32), h


def reference_sequence_rnn(params: SequenceParams, inputs: list[TensorInfo],
                           outputs: list[TensorInfo]) -> list[np.ndarray]:
    f, x = _sequence_arrays(params, inputs, "sequence RNN")
    tm = params.time_major
    if len(params.cells) == 1:
        y, h = _run_rnn(params.cells[0], f[1], f[2], f[3], f[4], x, None, False)
        return _outputs(outputs, [_time_major_view(y, tm), h][:len(outputs)])
    aux = None if params.linking == "none" else _time_major_view(f[9], tm)
    cross = params.linking == "cross"
    fw_y, fw_h = _run_rnn(params.cells[0], f[1], f[2], f[3], f[4], x, (aux, f[10]) if cross else None, False)
    bw_x = aux if params.linking == "parallel" else x
    bw_y, bw_h = _run_rnn(params.cells[1], f[5], f[6], f[7], f[8], bw_x, (aux, f[11]) if cross else None, True)
    ys = [np.concatenate([fw_y, bw_y], axis=2)] if params.merge else [fw_y, bw_y]
    results = [_time_major_view(y, tm) for y in ys]
    if params.states:
        results += [fw_h, bw_h]
    return _outputs(outputs, results)


def _sequence_rnn_supports(ctx: LoweringContext) -> bool:
    """Float32 or float16 (computed in float), known shapes, constant scalars, at most
    MAX_LOWERED_STEPS steps; cross-linking with both directions' auxiliary weights."""
    p = ctx.params
    scalars = [5, 6] if len(p.cells) == 1 else [12, 13, 14]
    tensors = [t for t in [*ctx.inputs, *ctx.outputs] if t.shape != () and not t.omitted]
    return (params_ok(ctx) and scalars_constant(ctx, scalars) and tensors[0].type in FLOAT_TYPES
            and all(t.type == tensors[0].type for t in tensors)
            and known(*tensors) and 0 < p.steps <= MAX_LOWERED_STEPS and p.cells[0].batch > 0
            and (p.linking != "cross" or not (ctx.inputs[10].omitted or ctx.inputs[11].omitted)))


def lower_sequence_rnn(ctx: LoweringContext) -> None:
    """Each direction's steps in time order, one RNN step launch per time slice; h_prev is read back
    from the previous step's output rows."""
    p = ctx.params
    width = sum(c.num_units for c in p.cells) if p.merge else None
    aux_size = ctx.inputs[9].shape[2] if len(p.cells) == 2 and p.linking != "none" else 0
    for direction, cell in enumerate(p.cells):
        if len(p.cells) == 2:
            first = 1 if direction == 0 else 5
            x_in = ctx.input(9) if direction == 1 and p.linking == "parallel" else ctx.input(0)
            y = ctx.output(0) if p.merge or direction == 0 else ctx.output(1)
            col = p.cells[0].num_units if p.merge and direction == 1 else 0
            total = width if p.merge else cell.num_units
            state = (1 if p.merge else 2) + direction
            aux_weights = ctx.input(10 + direction)
        else:
            first, x_in, y, col, total, state, aux_weights = 1, ctx.input(0), ctx.output(0), 0, cell.num_units, 1, None
        h_final = ctx.output(state) if p.states else ctx.scratch(ctx.inputs[0].dtype, cell.batch * cell.num_units)
        order = list(reversed(range(p.steps))) if direction == 1 else list(range(p.steps))
        for n, t in enumerate(order):
            h_prev = ((ctx.input(first + 3), 0, cell.num_units) if n == 0
                      else (y, *time_rows(p, order[n - 1], col, total)))
            emit_rnn_step(ctx, cell, [ctx.input(first + k) for k in range(3)],
                          x=(x_in, *time_rows(p, t, 0, cell.input_size)), h_prev=h_prev, h_out=h_final,
                          out=(y, *time_rows(p, t, col, total)),
                          aux=(ctx.input(9), *time_rows(p, t, 0, aux_size), aux_size, aux_weights)
                          if p.linking == "cross" else None)


@operation(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, signature=SEQUENCE_RNN_SIGNATURE,
           reference=reference_sequence_rnn, lower=lower_sequence_rnn, supports=_sequence_rnn_supports, multiply_adds=recurrent_multiply_adds)
def unidirectional_sequence_rnn(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SequenceParams:
    name = "UNIDIRECTIONAL_SEQUENCE_RNN"
    flag = inputs[6].scalar()
    require(flag in (0, 1), name, f"time_major {flag} must be 0 or 1")
    steps, batch, input_size = _sequence_input(inputs[0], bool(flag), name)
    cell = _decode_rnn_cell(inputs, 1, batch, input_size, name)
    cell.activation = recurrent_activation(inputs[5], name)
    shapes = [_sequence_layout(steps, batch, cell.num_units, bool(flag))]
    if len(outputs) == 2:
        shapes.append((batch, cell.num_units))
    return SequenceParams(output_shapes=shapes, cells=[cell], steps=steps, time_major=bool(flag),
                          states=len(outputs) == 2)


#: BIDIRECTIONAL_SEQUENCE_RNN (43): 15 inputs; outputs 1–2, or 3–4 with final states (FL4)
BIDIRECTIONAL_RNN_SIGNATURE = OpSignature(
    FLOAT_TYPES,
    tuple(Variant(f"bidirectional_{n}", ("T",) * 12 + (i32, BOOL, BOOL), ("T",) * n, feature_level=3 if n < 3 else 4)
          for n in (1, 2, 3, 4)),
    omittable=frozenset({9, 10, 11}), ranks={0: (3, 3), 4: (2, 2), 8: (2, 2)})


@operation(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, signature=BIDIRECTIONAL_RNN_SIGNATURE,
           reference=reference_sequence_rnn, lower=lower_sequence_rnn, supports=_sequence_rnn_supports, multiply_adds=recurrent_multiply_adds)
def bidirectional_sequence_rnn(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> SequenceParams:
    name = "BIDIRECTIONAL_SEQUENCE_RNN"
    time_major, merge = bool(inputs[13].scalar()), bool(inputs[14].scalar())
    steps, batch, input_size = _sequence_input(inputs[0], time_major, name)
    linking, aux_size = _linking(inputs, 9, [10, 11], steps, batch, time_major, name)
    activation = recurrent_activation(inputs[12], name)
    fw = _decode_rnn_cell(inputs, 1, batch, input_size, name)
    bw = _decode_rnn_cell(inputs, 5, batch, aux_size if linking == "parallel" else input_size, name)
    for cell in (fw, bw):
        cell.activation = activation
    if linking == "cross":
        _check_shape(inputs[10], (fw.num_units, aux_size), name, "forward auxiliary weights")
        _check_shape(inputs[11], (bw.num_units, aux_size), name, "backward auxiliary weights")
    shapes = _bidirectional_shapes(len(outputs), merge, 4, steps, batch, fw.num_units, bw.num_units, time_major, name)
    states = len(outputs) > 2
    if states:
        shapes += [(batch, fw.num_units), (batch, bw.num_units)]
    return SequenceParams(output_shapes=shapes, cells=[fw, bw], steps=steps, time_major=time_major, merge=merge,
                          linking=linking, states=states)
