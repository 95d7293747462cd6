"""Request binding: an execution's request validated and its pools resolved, once.

:func:`bind_request` applies the request-time checks of interface.md §6.1 / §9.2 item 8 to every
memory-domain argument (role, initialized input, compatible dims, no buffer twice as output or as
input and output), gives buffer inputs the buffer's current shape, validates the request (§9.2), and
turns each pool into what it names: the Memory itself, or the DriverBuffer its token resolves to.
Everything downstream (reading inputs, writing outputs, an accelerator's pool binding) works on the
resulting :class:`BoundRequest`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import failure, invalid
from ..hal.model import DataLocation, Request, RequestArgument
from ..memory import HardwareBuffer, Memory
from ..validation import RequestShapes, validate_request
from .buffer_spec import merge_dims
from .driver_buffer import DriverBuffer


@dataclass
class BoundRequest:
    """A validated request whose pools are resolved: each is a Memory or a DriverBuffer."""

    inputs: list[RequestArgument]
    outputs: list[RequestArgument]
    pools: list[Memory | DriverBuffer]
    shapes: RequestShapes
    #: the driver buffers this request writes as outputs
    output_buffers: list[DriverBuffer] = field(default_factory=list)

    def begin(self) -> None:
        """The execution starts: its output buffers are uninitialized until it writes them (so a failed
        execution leaves them uninitialized)."""
        for buf in self.output_buffers:
            buf.set_uninitialized()


def _is_token(pool) -> bool:
    return not isinstance(pool, Memory) and isinstance(pool, (int, np.integer)) and not isinstance(pool, bool)


def bind_request(prepared_model, request: Request) -> BoundRequest:
    """Check and validate ``request`` for ``prepared_model``; resolve its pools (see the module docstring).

    Each token is resolved once per request, through the device's buffer registry; an unknown token
    is INVALID_ARGUMENT.
    """
    device = prepared_model.device
    resolved: dict[int, DriverBuffer] = {}

    def resolve(token) -> DriverBuffer:
        buffer = resolved.get(int(token))
        if buffer is None:
            buffer = resolved[int(token)] = device.resolve_buffer_token(token)
        return buffer

    checked, output_buffers = _check_buffer_arguments(prepared_model, request, resolve)
    shapes = validate_request(checked, prepared_model.model, resolve_token=resolve)
    pools = [resolve(p) if _is_token(p) else p for p in checked.pools]
    return BoundRequest(list(checked.inputs), list(checked.outputs), pools, shapes, output_buffers)


def _check_image_buffers(request: Request) -> None:
    """A non-BLOB HardwareBuffer is only ever a whole execution input or output (offset 0)."""
    for direction, args in (("in", request.inputs), ("out", request.outputs)):
        if not isinstance(args, (list, tuple)):
            continue
        for i, arg in enumerate(args):
            if not isinstance(arg, RequestArgument) or arg.has_no_value or not isinstance(arg.location, DataLocation):
                continue  # validate_request reports malformed arguments
            pi = arg.location.pool_index
            if isinstance(pi, (int, np.integer)) and 0 <= pi < len(request.pools):
                pool = request.pools[pi]
                if isinstance(pool, HardwareBuffer) and not pool.is_blob and arg.location.offset != 0:
                    raise invalid(f"{direction}put {i}: a non-BLOB HardwareBuffer is used whole (offset 0), "
                                  f"got offset {arg.location.offset}")


def _check_buffer_arguments(prepared_model, request: Request, resolve) -> tuple[Request, list[DriverBuffer]]:
    """Check every memory-domain argument of ``request`` against its buffer (§6.1, §9.2 item 8).

    Returns the request with each buffer input's dimensions set to the buffer's current shape and each
    buffer output's dimensions merged with the buffer's initial shape (a new Request when anything
    changed), and the output buffers.  Malformed arguments (bad pool index, …) are left to
    validate_request.
    """
    if not isinstance(request, Request) or not isinstance(request.pools, (list, tuple)):
        return request, []
    _check_image_buffers(request)
    if not any(_is_token(p) for p in request.pools):
        return request, []
    main = prepared_model.model.main
    new_inputs = list(request.inputs) if isinstance(request.inputs, (list, tuple)) else request.inputs
    new_outputs = list(request.outputs) if isinstance(request.outputs, (list, tuple)) else request.outputs
    changed = False
    input_buffers: list[tuple[int, DriverBuffer]] = []
    output_buffers: list[DriverBuffer] = []
    used_as_output: set[int] = set()
    used_as_input: set[int] = set()
    for direction, args, new_args in (("in", request.inputs, new_inputs), ("out", request.outputs, new_outputs)):
        if not isinstance(args, (list, tuple)):
            continue
        count = len(main.input_indexes if direction == "in" else main.output_indexes)
        for i, arg in enumerate(args):
            if not isinstance(arg, RequestArgument) or arg.has_no_value or i >= count \
                    or not isinstance(arg.location, DataLocation):
                continue  # validate_request reports malformed arguments
            pi = arg.location.pool_index
            if isinstance(pi, bool) or not isinstance(pi, (int, np.integer)) or not 0 <= pi < len(request.pools):
                continue
            pool = request.pools[pi]
            if not _is_token(pool):
                continue
            buf = resolve(pool)
            what = f"{direction}put {i}"
            if not buf.has_role(prepared_model, direction, i):
                raise invalid(f"{what}: driver buffer {buf.token} has no role as {what} of this prepared model")
            if arg.location.offset != 0:
                raise invalid(f"{what}: a driver buffer is used whole (offset 0), got offset {arg.location.offset}")
            dims = list(arg.dimensions or [])
            if direction == "in":
                used_as_input.add(id(buf))  # the same buffer as two inputs is fine
                input_buffers.append((i, buf))
            else:
                if id(buf) in used_as_output:
                    raise invalid(f"{what}: driver buffer {buf.token} is used as two outputs of one request")
                used_as_output.add(id(buf))
                merged = merge_dims(dims, buf.initial_dims)
                if merged is None:
                    raise invalid(f"{what}: dimensions {dims} incompatible with the driver buffer's "
                                  f"{list(buf.initial_dims)}")
                if merged != dims:
                    new_args[i] = RequestArgument(arg.location, merged, False)
                    changed = True
                output_buffers.append(buf)
    if used_as_input & used_as_output:
        raise invalid("a driver buffer is used as both an input and an output of one request")
    for i, buf in input_buffers:
        arg = new_inputs[i]
        dims = list(arg.dimensions or [])
        if not buf.initialized:
            raise failure(f"input {i}: driver buffer {buf.token} is uninitialized")
        current = list(buf.dimensions)
        if merge_dims(dims, current) is None:
            raise invalid(f"input {i}: dimensions {dims} incompatible with the driver buffer's {current}")
        if current != dims:
            new_inputs[i] = RequestArgument(arg.location, current, False)
            changed = True
    if changed:
        request = Request(new_inputs, new_outputs, request.pools)
    return request, output_buffers
