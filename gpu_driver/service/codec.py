"""How HAL values are written in service messages: request arguments, output shapes, timings,
capabilities and the input/output summary of a prepared model.

Models travel whole through :mod:`gpu_driver.hal.serialize`; these are the small values of every
execution, kept compact (plain tuples).  Every ``decode_*`` takes untrusted data and raises
INVALID_ARGUMENT for anything malformed.
"""
from __future__ import annotations

from typing import Any, Sequence

import msgpack

from ..errors import invalid
from ..hal.model import DataLocation, Model, Operand, Request, RequestArgument, Subgraph
from ..hal.types import (Capabilities, OperandLifeTime, OperandPerformance, OperandType, OutputShape,
                         PerformanceInfo, Timing)
from . import wire


def check_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{what} must be an integer, got {value!r}")
    return value


def check_optional_int(value: Any, what: str) -> int | None:
    return None if value is None else check_int(value, what)


def check_seq(value: Any, what: str, length: int | None = None) -> Sequence:
    if not isinstance(value, (tuple, list)) or (length is not None and len(value) != length):
        expected = f"a sequence of {length}" if length is not None else "a sequence"
        raise invalid(f"{what} must be {expected}, got {value!r:.200}")
    return value


# ---- request arguments ---------------------------------------------------------------------------------
def _encode_argument(arg: RequestArgument) -> tuple:
    loc = arg.location
    return (bool(arg.has_no_value), loc.pool_index, loc.offset, loc.length, loc.padding, tuple(arg.dimensions))


def encode_arguments(request: Request) -> tuple:
    """(inputs, outputs) of ``request`` as plain tuples (INVALID_ARGUMENT for a malformed request)."""
    if not isinstance(request, Request):
        raise invalid(f"expected a Request, got {type(request).__name__}")
    try:
        return (tuple(_encode_argument(a) for a in request.inputs),
                tuple(_encode_argument(a) for a in request.outputs))
    except (AttributeError, TypeError) as exc:
        raise invalid(f"malformed request arguments: {exc}") from None


def _decode_argument(enc: Any, kind: str, i: int) -> RequestArgument:
    if type(enc) is tuple and len(enc) == 6:  # well formed (the usual case): checked without messages
        no_value, pool, offset, length, padding, dims = enc
        if type(no_value) is bool and type(pool) is int and type(offset) is int and type(length) is int \
                and type(padding) is int and type(dims) is tuple and all(type(d) is int for d in dims):
            return RequestArgument(DataLocation(pool, offset, length, padding), list(dims), no_value)
    return _check_argument(enc, f"{kind} {i}")


def _check_argument(enc: Any, what: str) -> RequestArgument:
    no_value, pool, offset, length, padding, dims = check_seq(enc, what, 6)
    if not isinstance(no_value, bool):
        raise invalid(f"{what}: has_no_value must be a bool")
    location = DataLocation(check_int(pool, f"{what} pool index"), check_int(offset, f"{what} offset"),
                            check_int(length, f"{what} length"), check_int(padding, f"{what} padding"))
    return RequestArgument(location, [check_int(d, f"{what} dimension") for d in check_seq(dims, f"{what} dims")],
                           no_value)


def decode_arguments(enc: Any) -> tuple[list[RequestArgument], list[RequestArgument]]:
    inputs, outputs = check_seq(enc, "request arguments", 2)
    return ([_decode_argument(a, "input", i) for i, a in enumerate(check_seq(inputs, "inputs"))],
            [_decode_argument(a, "output", i) for i, a in enumerate(check_seq(outputs, "outputs"))])


# ---- results ----------------------------------------------------------------------------------------------
def encode_result(shapes: Sequence[OutputShape], timing: Timing) -> tuple:
    return tuple((tuple(s.dimensions), bool(s.is_sufficient)) for s in shapes), (timing.time_on_device,
                                                                                timing.time_in_driver)


def decode_timing(enc: Any) -> Timing:
    on_device, in_driver = check_seq(enc, "timing", 2)
    return Timing(check_int(on_device, "time on device"), check_int(in_driver, "time in driver"))


def decode_result(enc: Any) -> tuple[list[OutputShape], Timing]:
    shapes, timing = check_seq(enc, "execution result", 2)
    return [OutputShape([check_int(d, "dimension") for d in dims], bool(ok)) for dims, ok in shapes], \
        decode_timing(timing)


def result_frame(call_id: int, shapes: Sequence[OutputShape], timing: Timing) -> bytes:
    """The compact reply (see :mod:`gpu_driver.service.wire`) of a call that executed: (shapes, timing)."""
    tail = msgpack.packb(tuple((tuple(s.dimensions), bool(s.is_sufficient)) for s in shapes))
    return wire.frame_of_body(wire.RESULT.pack(wire.COMPACT, wire.KIND_RESULT, call_id, timing.time_on_device,
                                               timing.time_in_driver) + tail)


class ResultDecoder:
    """Reads compact execution results; the output shapes of the results seen lately are kept decoded
    and checked (a model's outputs mostly come back with the same shapes)."""

    MAX_KEPT = 64

    def __init__(self) -> None:
        self._shapes: dict[bytes, tuple] = {}

    def decode(self, body: Any) -> tuple[list[OutputShape], Timing]:
        if type(body) is not bytes or len(body) < wire.RESULT.size:
            raise invalid(f"expected an execution result, got {body!r:.200}")
        marker, kind, _call_id, on_device, in_driver = wire.RESULT.unpack_from(body)
        if marker != wire.COMPACT or kind != wire.KIND_RESULT:
            raise invalid(f"expected an execution result, got a compact message of kind {kind}")
        tail = body[wire.RESULT.size:]
        shapes = self._shapes.get(tail)
        if shapes is None:
            try:
                enc = msgpack.unpackb(tail, use_list=False)
            except Exception as exc:  # msgpack raises many kinds
                raise invalid(f"malformed output shapes ({type(exc).__name__})") from None
            shapes = tuple((tuple(check_int(d, "dimension") for d in check_seq(dims, "dimensions")), ok)
                           for dims, ok in (check_seq(e, "output shape", 2) for e in check_seq(enc, "output shapes")))
            if not all(isinstance(ok, bool) for _, ok in shapes):
                raise invalid("is_sufficient must be a bool")
            if len(self._shapes) >= self.MAX_KEPT:
                self._shapes.clear()
            self._shapes[tail] = shapes
        return [OutputShape(list(dims), ok) for dims, ok in shapes], Timing(on_device, in_driver)


# ---- capabilities ----------------------------------------------------------------------------------------
def _perf(p: PerformanceInfo) -> tuple:
    return p.exec_time, p.power_usage


def encode_capabilities(c: Capabilities) -> tuple:
    return (_perf(c.relaxed_float32_to_float16_performance_scalar),
            _perf(c.relaxed_float32_to_float16_performance_tensor),
            tuple((int(e.type), *_perf(e.info)) for e in c.operand_performance),
            _perf(c.if_performance), _perf(c.while_performance))


def decode_capabilities(enc: Any) -> Capabilities:
    scalar, tensor, table, if_perf, while_perf = enc
    return Capabilities(PerformanceInfo(*scalar), PerformanceInfo(*tensor),
                        [OperandPerformance(OperandType(t), PerformanceInfo(e, p)) for t, e, p in table],
                        PerformanceInfo(*if_perf), PerformanceInfo(*while_perf))


# ---- a prepared model's inputs and outputs ---------------------------------------------------------------
def io_model(model: Model) -> Model:
    """A model with only the main subgraph's input and output operands (no operations, no constants):
    what a client needs to build requests for a prepared model it did not see (prepared from cache)."""
    main = model.main
    operands = []
    for lifetime, indexes in ((OperandLifeTime.SUBGRAPH_INPUT, main.input_indexes),
                              (OperandLifeTime.SUBGRAPH_OUTPUT, main.output_indexes)):
        for i in indexes:
            o = main.operands[i]
            operands.append(Operand(o.type, list(o.dimensions), o.scale, o.zero_point, lifetime, DataLocation(),
                                    o.extra_params))
    n = len(main.input_indexes)
    return Model(Subgraph(operands, [], list(range(n)), list(range(n, len(operands)))))
