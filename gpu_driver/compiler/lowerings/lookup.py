"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP (HAL 1.0) as row gathers (exact copies).

EMBEDDING_LOOKUP must fail the execution for an out-of-range lookup: lookups that are not constants
known to be in range are checked by the kernel, which reports a bad one through the status word
(``ctx.status``; the execution then fails with GENERAL_FAILURE, out-of-range rows are zero-filled).
HASHTABLE_LOOKUP has no failure mode (misses give zero rows, hit 0) and takes any lookups and keys
(the kernel binary-searches the keys, a lower bound like the reference's numpy.searchsorted).
"""
from __future__ import annotations

import numpy as np

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering
from ._util import F32, I32, Q8A, ctype, known, launch_1d, params_ok


def _emb_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    look, values, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    return known(look, values, out) and look.type == I32 and values.type in (F32, Q8A, I32) \
        and out.type == values.type


def _lookups_in_range(ctx: LoweringContext) -> bool:
    """Constant lookups, all in range: the kernel needs no check."""
    if not ctx.is_constant(0) or ctx.inputs[0].value is None:
        return False
    idx = ctx.inputs[0].array()
    return bool(np.all((idx >= 0) & (idx < ctx.params.num_rows)))


@lowering(OperationType.EMBEDDING_LOOKUP, supports=_emb_supports)
def lower_embedding_lookup(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.num_lookups * p.row_size
    if count == 0:
        return
    checked = not _lookups_in_range(ctx)
    d = {"T": ctype(ctx.inputs[1]), "MODE": 0, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_rows, "NKEYS": 0,
         "STATUS": int(checked), "STATUS_CODE": ctx.status_code if checked else 0}
    outs = [ctx.output(0)]
    if checked:
        outs.append(ctx.status(f"a lookup index is outside [0, {p.num_rows})"))
    g, l = launch_1d(count)
    ctx.emit("lookup.cl", d, [ctx.input(0), ctx.input(1)], outs, g, l)


def _hash_supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx):
        return False
    look, keys, values = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    return (known(look, keys, values, *ctx.outputs) and look.type == I32 and keys.type == I32
            and values.type in (F32, Q8A, I32) and ctx.outputs[0].type == values.type)


@lowering(OperationType.HASHTABLE_LOOKUP, supports=_hash_supports)
def lower_hashtable_lookup(ctx: LoweringContext) -> None:
    p = ctx.params
    count = p.num_lookups * p.row_size
    if count == 0:
        return
    d = {"T": ctype(ctx.inputs[2]), "MODE": 1, "COUNT": count, "ROW": p.row_size, "NROWS": p.num_keys,
         "NKEYS": p.num_keys, "STATUS": 0, "STATUS_CODE": 0}
    g, l = launch_1d(count)
    ctx.emit("lookup.cl", d, [ctx.input(0), ctx.input(1), ctx.input(2)], [ctx.output(0), ctx.output(1)], g, l)
