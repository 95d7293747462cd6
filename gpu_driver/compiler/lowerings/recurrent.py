"""RNN, SVDF and LSTM (HAL 1.0 + the FL3 layer-norm LSTM), float32, one time step each.

Lowered to matrix-vector and element-wise kernels (rnn.cl, svdf.cl: 2 stages, lstm.cl: 2–3 stages);
weights may be constants or model inputs (read in their HAL layout).  The full LSTM option set is
implemented: CIFG, peephole, projection (with/without bias), cell/projection clipping, layer
normalisation.  LSTM output 0 (scratch buffer, content unspecified) is not written.
Activation codes: TFLite enum 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid.
"""
from __future__ import annotations

from ...hal.types import OperationType
from ...operations.recurrent import (LSTM_ACTIVATION, LSTM_B_C, LSTM_B_F, LSTM_B_I, LSTM_B_O, LSTM_B_PROJ,
                                     LSTM_C_PREV, LSTM_CELL_CLIP, LSTM_H_PREV, LSTM_INPUT, LSTM_LN_C, LSTM_LN_F,
                                     LSTM_LN_I, LSTM_LN_O, LSTM_PROJ_CLIP, LSTM_W_CF, LSTM_W_CI, LSTM_W_CO,
                                     LSTM_W_HC, LSTM_W_HF, LSTM_W_HI, LSTM_W_HO, LSTM_W_PROJ, LSTM_W_XC,
                                     LSTM_W_XF, LSTM_W_XI, LSTM_W_XO)
from ..lowering import LoweringContext, lowering
from ._util import F32, known, params_ok, scalars_constant

_ACTS = (0, 1, 3, 4, 6)


def _float_tensors(ctx) -> bool:
    ts = [t for t in [*ctx.inputs, *ctx.outputs] if t.shape != () and not t.omitted]
    return all(t.type == F32 for t in ts) and known(*ts)


def _rnn_supports(ctx: LoweringContext) -> bool:
    return (params_ok(ctx) and scalars_constant(ctx, [5]) and _float_tensors(ctx)
            and ctx.params.activation in _ACTS and ctx.params.batch > 0)


@lowering(OperationType.RNN, supports=_rnn_supports)
def lower_rnn(ctx: LoweringContext) -> None:
    p = ctx.params
    d = {"B": p.batch, "I": p.input_size, "U": p.num_units, "ACT": p.activation}
    ctx.emit("rnn.cl", d, [ctx.input(k) for k in range(5)], [ctx.output(0), ctx.output(1)], (p.num_units, p.batch))


def _svdf_supports(ctx: LoweringContext) -> bool:
    return (params_ok(ctx) and scalars_constant(ctx, [5, 6]) and _float_tensors(ctx)
            and ctx.params.activation in _ACTS and ctx.params.batch > 0)


@lowering(OperationType.SVDF, supports=_svdf_supports)
def lower_svdf(ctx: LoweringContext) -> None:
    p = ctx.params
    d = {"B": p.batch, "I": p.input_size, "F": p.num_filters, "U": p.num_units, "RANK": p.rank,
         "M": p.memory_size, "ACT": p.activation, "HAS_BIAS": int(p.has_bias)}
    t = ctx.scratch("float32", p.batch * p.num_filters)
    ctx.emit("svdf.cl", {**d, "STAGE": 0}, [ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(4)],
             [ctx.output(0), t], (p.num_filters, p.batch))
    ins = [t, ctx.input(3)] if p.has_bias else [t]
    ctx.emit("svdf.cl", {**d, "STAGE": 1}, ins, [ctx.output(1)], (p.num_units, p.batch))


def _lstm_supports(ctx: LoweringContext) -> bool:
    return (params_ok(ctx) and scalars_constant(ctx, [LSTM_ACTIVATION, LSTM_CELL_CLIP, LSTM_PROJ_CLIP])
            and _float_tensors(ctx) and ctx.params.activation in _ACTS and ctx.params.batch > 0)


@lowering(OperationType.LSTM, supports=_lstm_supports)
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
    ctx.emit("lstm.cl", {**d, "STAGE": 0}, [ctx.input(LSTM_INPUT), ctx.input(LSTM_H_PREV)] + [ctx.input(k) for k in ws],
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
    ctx.emit("lstm.cl", {**d, "STAGE": 1}, ins, outs, gsize)
    # stage 2: projection
    if proj:
        ins = [m, ctx.input(LSTM_W_PROJ)] + ([ctx.input(LSTM_B_PROJ)] if p.use_projection_bias else [])
        ctx.emit("lstm.cl", {**d, "STAGE": 2}, ins, [ctx.output(1), ctx.output(3)], (p.output_size, p.batch))
