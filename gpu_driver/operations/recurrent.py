"""Recurrent cells of HAL 1.0: LSTM (16), RNN (24), SVDF (27) — one time step each.

The decoded params carry everything a kernel needs (sizes, option flags, activation, clips), so a
GPU lowering can specialise from them alone.  Tensor roles are fixed by input position; the
``LSTM_*`` constants below name them.

Optional (may-be-NO_VALUE) inputs: an operand with lifetime NO_VALUE is absent; a constant, or any
operand at execution, is present; a *model input* before execution is undecided, because the
request may still omit it.  A rule or flag that depends on an undecided operand defers the
definition to execution (:class:`ShapeUnknown`).

The ``activation`` input of these ops is the TFLite activation enum (operands.md §4 note):
0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid are accepted.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..hal.types import OperationType
from .base import OpParams, ShapeUnknown, TensorInfo, operation, require

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


def presence(info: TensorInfo) -> bool | None:
    """True = present, False = omitted (NO_VALUE), None = undecided (a model input before execution)."""
    if info.omitted:
        return False
    if info.value is not None:
        return True
    return None


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


# ---- LSTM -----------------------------------------------------------------------------------------

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


@operation(OperationType.LSTM)
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


# ---- RNN ------------------------------------------------------------------------------------------

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


@operation(OperationType.RNN)
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


# ---- SVDF -----------------------------------------------------------------------------------------

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


@operation(OperationType.SVDF)
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
