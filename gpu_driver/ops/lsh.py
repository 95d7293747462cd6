"""LSH_PROJECTION (15): project items onto bits by signs of FarmHash-based random projections.

Each bit (i, j) is 1 when Σ_k w_k·double(Fingerprint64(seed_ij bytes ‖ item k bytes)) > 0 (a
sequential double sum; w_k = 1 without weights).  DENSE outputs every bit; SPARSE_DEPRECATED packs
each hash's bits into one signature, SPARSE also adds i·2^num_bits.  Items are hashed as raw bytes,
so any input type and shape works.

Needs a bit-exact FarmHash Fingerprint64: gpu_driver.farmhash on the host, and the same algorithm
in the shared kernel dialect on devices.  lsh.cl STAGE 0 runs one work item per hash bit (i, j): it
builds each key (4 seed bytes ‖ item bytes) in private memory, hashes it and accumulates the
(weighted) double score; DENSE writes the bits to the output, the sparse kinds to a scratch buffer
that STAGE 1 packs into one signature per hash (one work item per i).  Bit-exact with the reference.

Lowered: hash F32 or F16 (weight the same type), input F32/F16/I32/Q8A of any rank/shape, constants
or model inputs.  Refused (``supports`` is False):
- items over MAX_ITEM_BYTES (1024) bytes: the key is a private array of 4 + item bytes;
- zero-sized inputs (no items, or no hash bits): the reference fails those executions;
- a sparse projection with a weight (the definition requires it omitted; a weight that is a model
  input is decided per execution, the kernels never read it);
- a non-constant type argument, unknown shapes.
A DENSE weight that is a model input is taken as present (omitting it fails the execution on both
the reference and the accelerator).  The kernel needs fp64 (OpenCL: cl_khr_fp64).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, known, params_ok, scalars_constant, Work
from ..errors import failure
from ..farmhash import fingerprint64_signed
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, presence, require
from .registry import operation
from .signature import F16, F32, FLOAT_TYPES, I32, Q8A, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

LSH_SPARSE_DEPRECATED = 1
LSH_DENSE = 2
LSH_SPARSE = 3
LSH_TYPES = {LSH_SPARSE_DEPRECATED: "SPARSE_DEPRECATED", LSH_DENSE: "DENSE", LSH_SPARSE: "SPARSE"}

#: largest item (bytes) the kernel's private key buffer holds (key = 4 + item bytes)
MAX_ITEM_BYTES = 1024


# ---- params -----------------------------------------------------------------------------------------

@dataclass
class LSHParams(OpParams):
    """Decoded LSH_PROJECTION (operations.md 15).

    ``lsh_type`` 1 SPARSE_DEPRECATED / 2 DENSE / 3 SPARSE; ``num_hash`` and ``num_bits`` are the hash
    tensor's dims; ``num_items`` is the input's dim 0 and ``item_bytes`` the raw bytes per item
    (hashed after the 4 seed bytes); ``has_weight`` whether per-item weights are given (DENSE only),
    None while undecided (a model input before execution: the presence rule is checked at execution).
    Output I32: [num_hash] (sparse kinds) or [num_hash·num_bits] (DENSE).
    """

    lsh_type: int = LSH_SPARSE
    num_hash: int = 0
    num_bits: int = 0
    num_items: int = 0
    item_bytes: int = 0
    has_weight: bool | None = False


# ---- signature --------------------------------------------------------------------------------------

#: the types the hashed input may have (the reference and the kernels take them all)
_INPUT_TYPES = frozenset((F32, F16, I32, Q8A))

#: hash [num_hash, num_bits], input (items along dim 0), weight (omittable), type
LSH_PROJECTION_SIGNATURE = OpSignature(
    FLOAT_TYPES, (Variant("lsh", ("T", _INPUT_TYPES, "T", i32), (I32,)),), omittable=frozenset({2}),
    ranks={0: (2, 2), 1: (1, 99), 2: (1, 1)}, out_ranks={0: (1, 1)})


# ---- reference kernel -------------------------------------------------------------------------------

def _wrap_int32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def running_sign_bit(items: list[bytes], weights: list[float] | None, seed: np.float32) -> int:
    """1 if Σ_k w_k·double(Fingerprint64(seed bytes ‖ item k)) > 0, else 0 (sequential double sum)."""
    seed_bytes = np.float32(seed).astype("<f4").tobytes()
    score = 0.0
    for k, item in enumerate(items):
        h = float(fingerprint64_signed(seed_bytes + item))
        score += h if weights is None else weights[k] * h
    return 1 if score > 0 else 0


def reference_lsh_projection(params: LSHParams, inputs: list[TensorInfo],
                             outputs: list[TensorInfo]) -> list[np.ndarray]:
    hash_, inp, weight = inputs[0], inputs[1], inputs[2]
    if params.num_items == 0 or np.size(hash_.value) == 0:
        raise failure("LSH_PROJECTION: zero-sized input is not supported")
    seeds = np.asarray(hash_.value).astype(np.float32).reshape(params.num_hash, params.num_bits)
    raw = np.ascontiguousarray(inp.value, dtype=inp.dtype.newbyteorder("<")).tobytes()
    n = params.item_bytes
    items = [raw[k * n:(k + 1) * n] for k in range(params.num_items)]
    weights = None
    if params.has_weight and weight.value is not None:
        weights = [float(w) for w in np.asarray(weight.value).reshape(-1)]  # exact: f32/f16 → double
    bits = [[running_sign_bit(items, weights, seeds[i, j]) for j in range(params.num_bits)]
            for i in range(params.num_hash)]
    if params.lsh_type == LSH_DENSE:
        return [np.asarray(bits, dtype=np.int32).reshape(-1)]
    out = []
    for i, row in enumerate(bits):
        sig = 0
        for bit in row:
            sig = _wrap_int32((sig << 1) | bit)
        if params.lsh_type == LSH_SPARSE:
            sig = _wrap_int32(sig + i * (1 << params.num_bits))
        out.append(sig)
    return [np.asarray(out, dtype=np.int32)]


# ---- lowering ---------------------------------------------------------------------------------------

_HASH_TYPES = (F32, F16)


def _uses_weight(p: LSHParams) -> bool:
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
    elif p.has_weight is True:
        return False  # sparse kinds need the weight omitted (a model input is decided per execution:
        # the accelerator specialises on whether the request gives it, as the definition requires)
    return True


def lower_lsh_projection(ctx: LoweringContext) -> None:
    p = ctx.params
    has_w = _uses_weight(p)
    count = p.num_hash * p.num_bits
    d = {"STAGE": 0, "LSH_TYPE": p.lsh_type, "NUM_HASH": p.num_hash, "NUM_BITS": p.num_bits,
         "NUM_ITEMS": p.num_items, "ITEM_BYTES": p.item_bytes, "KEY_LEN": 4 + p.item_bytes,
         "HAS_W": int(has_w), "HASH_F16": int(ctx.inputs[0].type == F16),
         "TH": ctype(ctx.inputs[0]), "TX": ctype(ctx.inputs[1])}
    ins = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if has_w else [])
    if p.lsh_type == LSH_DENSE:
        ctx.emit("lsh.cl", d, ins, [ctx.output(0)], (count,), Work.ELEMENTS)
        return
    bits = ctx.scratch("int32", count)
    ctx.emit("lsh.cl", d, ins, [bits], (count,), Work.ELEMENTS)
    ctx.emit("lsh.cl", {**d, "STAGE": 1}, [bits], [ctx.output(0)], (p.num_hash,), Work.ELEMENTS)


# ---- definition -------------------------------------------------------------------------------------

@operation(OperationType.LSH_PROJECTION, signature=LSH_PROJECTION_SIGNATURE, reference=reference_lsh_projection,
           lower=lower_lsh_projection, supports=_supports,
           requires=("fp64",))  # the weighted sum is a double
def lsh_projection(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> LSHParams:
    name = "LSH_PROJECTION"
    hash_, inp, weight, type_info = inputs[:4]
    hs = hash_.dims()
    require(len(hs) == 2, name, f"hash tensor must be 2-D [num_hash, num_bits], got {list(hs)}")
    num_hash, num_bits = hs
    require(num_bits <= 32, name, f"num_bits {num_bits} exceeds 32")
    xs = inp.dims()
    require(len(xs) >= 1, name, "input must have rank >= 1")
    lsh_type = type_info.scalar()
    require(lsh_type in LSH_TYPES, name, f"type {lsh_type} is not 1 (SPARSE_DEPRECATED), 2 (DENSE) or 3 (SPARSE)")
    has_weight = presence(weight)
    if lsh_type == LSH_DENSE:
        require(has_weight is not False, name, "DENSE projection requires the weight input")
        if has_weight:
            ws = weight.dims()
            require(len(ws) == 1 and ws[0] == xs[0], name,
                    f"weight must have shape [{xs[0]}] (input dim 0), got {list(ws)}")
        out_shape = (num_hash * num_bits,)
    else:
        require(has_weight is not True, name,
                f"{LSH_TYPES[lsh_type]} projection requires the weight input to be omitted")
        if lsh_type == LSH_SPARSE and num_hash > 0:
            require(num_bits + math.ceil(math.log2(num_hash)) <= 32, name,
                    f"num_bits + ceil(log2(num_hash)) = {num_bits} + {math.ceil(math.log2(num_hash))} exceeds 32")
        out_shape = (num_hash,)
    item_bytes = int(np.prod(xs[1:], dtype=np.int64)) * inp.dtype.itemsize
    return LSHParams(output_shapes=[out_shape], lsh_type=lsh_type, num_hash=num_hash, num_bits=num_bits,
                     num_items=xs[0], item_bytes=item_bytes, has_weight=has_weight)
