"""Recurrent cells of HAL 1.0: LSTM (16), RNN (24), SVDF (27) — one time step each, float32 / float16.

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
(GENERAL_FAILURE) on a zero-sized input (operations.md §0.6).  The lowerings run float32 with
known shapes and constant scalar arguments: recurrent_rnn.cl and recurrent_svdf.cl in 2 stages, recurrent_lstm.cl in 2–3 stages;
weights may be constants or model inputs (read in their HAL layout).  The full LSTM option set is
lowered: CIFG, peephole, projection (with/without bias), cell/projection clipping, layer
normalisation.  LSTM output 0 (scratch buffer, content unspecified) is not written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import known, params_ok, scalars_constant
from ..errors import failure
from ..hal.types import OPERAND_TYPE_INFO, OperandType, OperationType
from .definition import OpParams, ShapeUnknown, TensorInfo, presence, require
from .registry import operation
from .signature import F32, FLOAT_TYPES, OpContext, OpSignature, Variant, i32

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


def reference_lstm(params: LSTMParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
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

def _lowerable(ctx: LoweringContext, scalar_inputs: list[int]) -> bool:
    """Decoded, scalars constant, every present tensor F32 with a known shape, a lowered activation
    and a non-empty batch."""
    tensors = [t for t in [*ctx.inputs, *ctx.outputs] if t.shape != () and not t.omitted]
    return (params_ok(ctx) and scalars_constant(ctx, scalar_inputs)
            and all(t.type == F32 for t in tensors) and known(*tensors)
            and ctx.params.activation in RECURRENT_ACTIVATIONS and ctx.params.batch > 0)


def _rnn_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [5])


def lower_rnn(ctx: LoweringContext) -> None:
    p = ctx.params
    d = {"B": p.batch, "I": p.input_size, "U": p.num_units, "ACT": p.activation}
    ctx.emit("recurrent_rnn.cl", d, [ctx.input(k) for k in range(5)], [ctx.output(0), ctx.output(1)], (p.num_units, p.batch))


def _svdf_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [5, 6])


def lower_svdf(ctx: LoweringContext) -> None:
    p = ctx.params
    # an undecided bias (None) is a model input: accelerators run only requests that provide it
    has_bias = p.has_bias is not False
    d = {"B": p.batch, "I": p.input_size, "F": p.num_filters, "U": p.num_units, "RANK": p.rank,
         "M": p.memory_size, "ACT": p.activation, "HAS_BIAS": int(has_bias)}
    t = ctx.scratch("float32", p.batch * p.num_filters)
    ctx.emit("recurrent_svdf.cl", {**d, "STAGE": 0}, [ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(4)],
             [ctx.output(0), t], (p.num_filters, p.batch))
    ins = [t, ctx.input(3)] if has_bias else [t]
    ctx.emit("recurrent_svdf.cl", {**d, "STAGE": 1}, ins, [ctx.output(1)], (p.num_units, p.batch))


def _lstm_supports(ctx: LoweringContext) -> bool:
    return _lowerable(ctx, [LSTM_ACTIVATION, LSTM_CELL_CLIP, LSTM_PROJ_CLIP])


def lower_lstm(ctx: LoweringContext) -> None:
    p = ctx.params
    cifg, peep, ln, proj = p.use_cifg, p.use_peephole, p.use_layer_norm, p.use_projection
    d = {"B": p.batch, "I": p.input_size, "U": p.num_units, "O": p.output_size, "ACT": p.activation,
         "CIFG": int(cifg), "PEEP": int(peep), "LN": int(ln), "PROJ": int(proj),
         "PROJ_BIAS": int(p.use_projection_bias), "HAS_CELL_CLIP": int(p.cell_clip > 0),
         "CELL_CLIP": float(p.cell_clip), "HAS_PROJ_CLIP": int(p.proj_clip > 0), "PROJ_CLIP": float(p.proj_clip)}
    pre = ctx.scratch("float32", p.batch * 4 * p.num_units)
    # stage 0: gate pre-activations
    ws = ([LSTM_W_XI] if not cifg else []) + [LSTM_W_XF, LSTM_W_XC, LSTM_W_XO] + \
         ([LSTM_W_HI] if not cifg else []) + [LSTM_W_HF, LSTM_W_HC, LSTM_W_HO]
    ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 0}, [ctx.input(LSTM_INPUT), ctx.input(LSTM_H_PREV)] + [ctx.input(k) for k in ws],
             [pre], (4 * p.num_units, p.batch))
    # stage 1: cell
    ins = [pre, ctx.input(LSTM_C_PREV)]
    if peep:
        ins += ([ctx.input(LSTM_W_CI)] if not cifg else []) + [ctx.input(LSTM_W_CF), ctx.input(LSTM_W_CO)]
    ins += ([ctx.input(LSTM_B_I)] if not cifg else []) + [ctx.input(k) for k in (LSTM_B_F, LSTM_B_C, LSTM_B_O)]
    if ln:
        ins += ([ctx.input(LSTM_LN_I)] if not cifg else []) + [ctx.input(k) for k in (LSTM_LN_F, LSTM_LN_C, LSTM_LN_O)]
    if proj:
        m = ctx.scratch("float32", p.batch * p.num_units)
        outs = [ctx.output(2), m]
    else:
        outs = [ctx.output(2), ctx.output(1), ctx.output(3)]
    gsize = (p.batch,) if ln else (p.num_units, p.batch)
    ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 1}, ins, outs, gsize)
    # stage 2: projection
    if proj:
        ins = [m, ctx.input(LSTM_W_PROJ)] + ([ctx.input(LSTM_B_PROJ)] if p.use_projection_bias else [])
        ctx.emit("recurrent_lstm.cl", {**d, "STAGE": 2}, ins, [ctx.output(1), ctx.output(3)], (p.output_size, p.batch))


# ---- definitions ------------------------------------------------------------------------------------

@operation(OperationType.LSTM, signature=LSTM_SIGNATURE, reference=reference_lstm, lower=lower_lstm,
           supports=_lstm_supports)
def lstm(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LSTMParams:
    name = "LSTM"
    x = inputs[LSTM_INPUT]
    _required(x, name, "input")
    xs = x.dims()
    require(len(xs) == 2, name, f"input must be 2-D [batch, input_size], got {list(xs)}")
    batch, input_size = xs
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
           supports=_rnn_supports)
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
           supports=_svdf_supports)
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
