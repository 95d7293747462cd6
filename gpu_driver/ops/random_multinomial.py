"""RANDOM_MULTINOMIAL (74): samples of class indexes drawn with probabilities
exp(logit) / Σ exp(logits) per row.

The driver draws its uniforms from a counter-based generator (three rounds of a 32-bit integer hash of
the seeds, the row and the sample index), so every device draws the same stream for the same seeds;
AOSP uses TF's Philox, and the spec checks only the distribution.  Seeds (0, 0) seed at random.
A sample is the first class whose running float32 sum of exp(logit − max) exceeds u·total, u in
[0, 1) with 24 random bits; non-finite logits get probability zero.  Float16 logits are computed in
float32.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.lowering_helpers import ctype, float_io, known, params_ok, scalars_constant
from ..compiler.ir import Work
from ..hal.types import OperationType
from .definition import OpParams, TensorInfo, require
from .registry import operation
from .signature import FLOAT_TYPES, I32, OpSignature, Variant, i32

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext


@dataclass
class MultinomialParams(OpParams):
    batch: int = 0
    classes: int = 0
    samples: int = 0


#: logits [B, C], num_samples, seeds [2]
RANDOM_MULTINOMIAL_SIGNATURE = OpSignature(
    FLOAT_TYPES, (Variant("multinomial", ("T", i32, I32), (I32,)),), ranks={0: (2, 2), 2: (1, 1)})


def hash32(x: np.ndarray) -> np.ndarray:
    """A 32-bit integer mixing function (xorshift-multiply), on uint32 arrays."""
    x = np.asarray(x, np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def uniforms(seed0: int, seed1: int, batch: int, samples: int) -> np.ndarray:
    """[batch, samples] uniforms in [0, 1): hash(seed0 ^ hash(seed1 ^ hash(row·samples + s))), top 24 bits."""
    counter = np.arange(batch * samples, dtype=np.uint32).reshape(batch, samples)
    with np.errstate(over="ignore"):
        bits = hash32(np.uint32(seed0) ^ hash32(np.uint32(seed1) ^ hash32(counter)))
    return (bits >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))


def _seeds(info: TensorInfo) -> tuple[int, int]:
    s0, s1 = (int(v) for v in np.asarray(info.value).reshape(-1)[:2])
    if s0 == 0 and s1 == 0:
        s0, s1 = (int.from_bytes(os.urandom(4), "little") for _ in range(2))
    return s0 & 0xFFFFFFFF, s1 & 0xFFFFFFFF


def reference_random_multinomial(params: MultinomialParams, inputs: list[TensorInfo],
                                 outputs: list[TensorInfo]) -> list[np.ndarray]:
    logits = np.asarray(inputs[0].value, np.float32)
    u = uniforms(*_seeds(inputs[2]), params.batch, params.samples)
    out = np.zeros((params.batch, params.samples), np.int32)
    with np.errstate(all="ignore"):
        for b in range(params.batch):
            row = logits[b]
            finite = np.isfinite(row)
            top = row[finite].max() if finite.any() else np.float32(0)
            weights = np.where(finite, np.exp(row - top), np.float32(0)).astype(np.float32)
            running = np.cumsum(weights, dtype=np.float32)          # sequential float32 sum
            total = running[-1] if running.size else np.float32(0)
            targets = u[b] * total
            picked = np.searchsorted(running, targets, side="right")
            out[b] = np.minimum(picked, params.classes - 1)
    return [out]


def supports_random_multinomial(ctx: LoweringContext) -> bool:
    x, out = ctx.inputs[0], ctx.outputs[0]
    return params_ok(ctx) and scalars_constant(ctx, [1]) and known(x, out) and ctx.inputs[2].value is not None \
        and not (np.asarray(ctx.inputs[2].value) == 0).all()


def lower_random_multinomial(ctx: LoweringContext) -> None:
    p = ctx.params
    if p.batch * p.samples == 0:
        return
    s0, s1 = _seeds(ctx.inputs[2])
    d = {"T": ctype(ctx.inputs[0]), **float_io(ctx.inputs[0]), "B": p.batch, "C": p.classes, "S": p.samples,
         "SEED0": f"{s0}u", "SEED1": f"{s1}u"}
    ctx.emit("random_multinomial.cl", d, [ctx.input(0)], [ctx.output(0)], (p.samples, p.batch), Work.GRID)


@operation(OperationType.RANDOM_MULTINOMIAL, signature=RANDOM_MULTINOMIAL_SIGNATURE,
           reference=reference_random_multinomial, lower=lower_random_multinomial,
           supports=supports_random_multinomial, value_inputs=(2,))
def random_multinomial(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> MultinomialParams:
    name = "RANDOM_MULTINOMIAL"
    batch, classes = inputs[0].dims()
    samples = inputs[1].scalar()
    require(samples >= 0, name, f"num_samples {samples} must be >= 0")
    require(classes > 0, name, "logits need at least one class")
    require(tuple(inputs[2].dims()) == (2,), name, f"seeds must have shape [2], got {list(inputs[2].dims())}")
    return MultinomialParams(output_shapes=[(batch, samples)], batch=batch, classes=classes, samples=samples)
