"""LSH_PROJECTION is not lowered: it needs a bit-exact FarmHash Fingerprint64 over arbitrary byte
strings, which is CPU work by nature (operations.md 15).  It is registered with a ``supports`` that
always returns False so get_supported_operations reports it unsupported (the reference device runs it).
"""
from __future__ import annotations

from ...hal.types import OperationType
from ..lowering import LoweringContext, lowering


def _never(ctx: LoweringContext) -> bool:
    return False


@lowering(OperationType.LSH_PROJECTION, supports=_never)
def lower_lsh_projection(ctx: LoweringContext) -> None:
    raise NotImplementedError("LSH_PROJECTION runs on the CPU (FarmHash); it has no device kernel")
