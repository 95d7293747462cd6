"""LSH_PROJECTION (operations.md 15) on the accelerators: FarmHash Fingerprint64 in the kernel dialect.

lsh.cl STAGE 0 runs one work item per hash bit (i, j): it builds each key (4 seed bytes ‖ item bytes)
in private memory, hashes it with a bit-exact Fingerprint64 and accumulates the (weighted) double
score; DENSE writes the bits to the output, the sparse kinds to a scratch buffer that STAGE 1 packs
into one signature per hash (one work item per i).  Bit-exact with the reference device.

Supported: hash F32 or F16 (weight the same type), input F32/F16/I32/Q8A of any rank/shape (items are
hashed as raw bytes), constants or model inputs.  Refused (``supports`` is False):
- items over MAX_ITEM_BYTES (1024) bytes: the key is a private array of 4 + item bytes;
- zero-sized inputs (no items, or no hash bits): the reference fails those executions;
- a sparse projection whose weight input is a model input / temporary (presence only known at
  execution; the reference requires it omitted, the accelerators cannot run omitted inputs);
- a non-constant type argument, unknown shapes.
A DENSE weight that is a model input is taken as present (omitting it fails the execution on both
the reference and the accelerator).  The kernel needs fp64 (OpenCL: cl_khr_fp64).
"""
from __future__ import annotations

from ...hal.abbreviations import F16
from ...hal.types import OperationType
from ...operations.lsh import LSH_DENSE, LSH_TYPES
from ..lowering import LoweringContext, lowering
from ._util import F32, I32, Q8A, ctype, known, launch_1d, params_ok, scalars_constant

#: largest item (bytes) the kernel's private key buffer holds (key = 4 + item bytes)
MAX_ITEM_BYTES = 1024

_HASH_TYPES = (F32, F16)
_INPUT_TYPES = (F32, F16, I32, Q8A)


def _uses_weight(p) -> bool:
    """Whether the kernel reads the weight input (DENSE: required; present or a model input)."""
    return p.lsh_type == LSH_DENSE and p.has_weight is not False


def _supports(ctx: LoweringContext) -> bool:
    if not params_ok(ctx) or not scalars_constant(ctx, [3]):
        return False
    p = ctx.params
    hash_, inp, weight = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    out = ctx.outputs[0]
    if p.lsh_type not in LSH_TYPES or not known(hash_, inp, out):
        return False
    if hash_.type not in _HASH_TYPES or inp.type not in _INPUT_TYPES or out.type != I32:
        return False
    if p.num_items <= 0 or p.num_hash <= 0 or p.num_bits <= 0 or p.num_bits > 32:
        return False
    if p.item_bytes > MAX_ITEM_BYTES:
        return False
    if p.lsh_type == LSH_DENSE:
        if p.has_weight is False:
            return False
        if not known(weight) or weight.type != hash_.type:
            return False
    elif p.has_weight is not False:
        return False  # sparse kinds need the weight omitted; undecided presence is refused
    return True


@lowering(OperationType.LSH_PROJECTION, supports=_supports, requires=("fp64",))  # the weighted sum is a double
def lower_lsh_projection(ctx: LoweringContext) -> None:
    p = ctx.params
    has_w = _uses_weight(p)
    count = p.num_hash * p.num_bits
    d = {"STAGE": 0, "LSH_TYPE": p.lsh_type, "NUM_HASH": p.num_hash, "NUM_BITS": p.num_bits,
         "NUM_ITEMS": p.num_items, "ITEM_BYTES": p.item_bytes, "KEY_LEN": 4 + p.item_bytes,
         "HAS_W": int(has_w), "HASH_F16": int(ctx.inputs[0].type == F16),
         "TH": ctype(ctx.inputs[0]), "TX": ctype(ctx.inputs[1])}
    ins = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if has_w else [])
    g, l = launch_1d(count)
    if p.lsh_type == LSH_DENSE:
        ctx.emit("lsh.cl", d, ins, [ctx.output(0)], g, l)
        return
    bits = ctx.scratch("int32", count)
    ctx.emit("lsh.cl", d, ins, [bits], g, l)
    g1, l1 = launch_1d(p.num_hash)
    ctx.emit("lsh.cl", {**d, "STAGE": 1}, [bits], [ctx.output(0)], g1, l1)
