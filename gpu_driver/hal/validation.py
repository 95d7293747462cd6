"""Validation of models and requests (interface.md §9).  STUB: being written by the validation work."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import invalid
from .model import Model, Request


@dataclass
class RequestShapes:
    """Combined shapes of a validated request: inputs fully specified (None = omitted input);
    outputs may hold 0 entries (unknown) or be None (unknown rank)."""

    inputs: list[tuple[int, ...] | None]
    outputs: list[tuple[int, ...] | None]


def validate_model(model: Model, feature_level: int = 4) -> None:
    if not isinstance(model, Model):
        raise invalid("model must be a gpu_driver.hal.Model")


def validate_request(request: Request, model: Model, *, resolve_token=None,
                     allow_unspecified_outputs: bool = True) -> RequestShapes:
    if not isinstance(request, Request):
        raise invalid("request must be a gpu_driver.hal.Request")
    ins = [None if a.has_no_value else tuple(a.dimensions or model.main.operands[i].dimensions)
           for a, i in zip(request.inputs, model.main.input_indexes)]
    outs = [tuple(a.dimensions or model.main.operands[i].dimensions)
            for a, i in zip(request.outputs, model.main.output_indexes)]
    return RequestShapes(ins, outs)
