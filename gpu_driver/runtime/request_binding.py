"""Request binding: an execution's request validated and its pools resolved, once.

:func:`bind_request` applies the request-time checks of interface.md §6.1 / §9.2 item 8 to every
memory-domain argument (role, initialized input, compatible dims, no buffer twice as output or as
input and output), gives buffer inputs the buffer's current shape, validates the request (§9.2), and
turns each pool into what it names: the Memory itself, or the DriverBuffer its token resolves to.
Everything downstream (reading inputs, writing outputs, an accelerator's pool binding) works on the
resulting :class:`BoundRequest`.

:class:`BindingCache` keeps the bindings of the requests a prepared model ran lately, keyed by value
(:func:`request_key`) and by pool identity: an execution of the same request again (a recurrent model's
steps, a server's fixed requests) only re-checks what can change between executions, namely that each
pool is the same live object (a token: through the buffer registry's generation, see BufferRegistry)
and that each memory-domain input buffer is initialized with the same dimensions.  The cache holds weak references only: it keeps no client memory or buffer alive.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
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
    #: what a device derives from this binding, kept for the binding's life (a burst's or a reusable
    #: execution's binding runs many times): host views of its pools
    device_plans: dict = field(default_factory=dict)
    #: what a device derives from the request that holds no pool (its specialisation, the plan of its
    #: arguments): shared by every binding a BindingCache serves for the same request
    shared_plans: dict = field(default_factory=dict)

    def begin(self) -> None:
        """The execution starts: its output buffers are uninitialized until it writes them (so a failed
        execution leaves them uninitialized)."""
        for buf in self.output_buffers:
            buf.set_uninitialized()


#: pool type -> "token" (a memory-domain token: an integer, not bool), "memory" (a Memory) or None;
#: by type, so a request's pools cost a dict lookup each instead of abstract-class isinstance checks
_POOL_KINDS: dict[type, str | None] = {}


def _pool_kind(pool) -> str | None:
    kind_of = type(pool)
    try:
        return _POOL_KINDS[kind_of]
    except KeyError:
        pass
    if issubclass(kind_of, Memory):
        kind = "memory"
    elif issubclass(kind_of, (int, np.integer)) and not issubclass(kind_of, bool):
        kind = "token"
    else:
        kind = None
    if len(_POOL_KINDS) < 64:
        _POOL_KINDS[kind_of] = kind
    return kind


def _is_token(pool) -> bool:
    return _pool_kind(pool) == "token"


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
    return BoundRequest([captured_argument(a) for a in checked.inputs],
                        [captured_argument(a) for a in checked.outputs], pools, shapes, output_buffers)


def captured_argument(arg: RequestArgument) -> RequestArgument:
    """A copy of a validated argument: a binding outlives the client's request objects, which the client
    may edit (the HAL passes requests by value)."""
    loc = arg.location
    return RequestArgument(DataLocation(int(loc.pool_index), int(loc.offset), int(loc.length), int(loc.padding)),
                           [int(d) for d in (arg.dimensions or ())], bool(arg.has_no_value))


#: the integer types request validation accepts (bool excluded)
_INT_TYPES = frozenset({int, *(np.dtype(c).type for c in "bBhHiIlLqQ")})


def request_key(request: Request) -> tuple | None:
    """The arguments of ``request`` as a hashable value (pools excluded), or None when some field is not
    of the exact type validation accepts (such a request is never served from a cache: ``1`` and
    ``True`` hash alike, one is a valid has_no_value and the other is not)."""
    parts = []
    try:
        for a in (*request.inputs, *request.outputs):
            loc, dims = a.location, a.dimensions
            if type(a) is not RequestArgument or type(loc) is not DataLocation or type(a.has_no_value) is not bool \
                    or type(dims) not in (list, tuple):
                return None
            entry = (loc.pool_index, loc.offset, loc.length, loc.padding, *dims)
            for v in entry:
                if type(v) not in _INT_TYPES:
                    return None
            parts.append((a.has_no_value, entry))
        return tuple(parts), len(request.inputs)
    except (TypeError, AttributeError):
        return None


@dataclass
class _CachedBinding:
    inputs: list[RequestArgument]
    outputs: list[RequestArgument]
    shapes: RequestShapes
    pools: list[weakref.ref]                     # each pool: the Memory or the DriverBuffer it resolved to
    tokens: list[bool]                           # per pool: named by a memory-domain token
    output_pools: list[int]                      # pool positions of the driver buffers written as outputs
    input_dims: list[tuple[int, tuple]]          # (pool position, dims) of each driver-buffer input
    shared_plans: dict                           # BoundRequest.shared_plans of every binding served
    #: the buffer registry's generation when the tokens last resolved to ``pools`` (None: no token)
    generation: int | None = None


class BindingCache:
    """The bindings of the requests one prepared model ran lately (see the module docstring)."""

    #: bindings kept (least recently used dropped first)
    MAX_ENTRIES = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, _CachedBinding] = OrderedDict()

    def bind(self, prepared_model, request: Request) -> BoundRequest:
        """:func:`bind_request`, served from the cache when ``request`` was bound before."""
        key = self._key(request)
        if key is None:
            return bind_request(prepared_model, request)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is not None:
            bound = self._reuse(prepared_model, entry, request.pools)
            if bound is not None:
                return bound
        generation = prepared_model.device.buffers.generation  # read before the tokens resolve
        bound = bind_request(prepared_model, request)
        entry = self._entry(bound, generation)
        if entry is not None:
            with self._lock:
                self._entries[key] = entry
                while len(self._entries) > self.MAX_ENTRIES:
                    self._entries.popitem(last=False)
        return bound

    @staticmethod
    def _key(request) -> tuple | None:
        if type(request) is not Request or type(request.pools) not in (list, tuple):
            return None
        args = request_key(request)
        if args is None:
            return None
        pools = []
        for p in request.pools:
            kind = _pool_kind(p)
            if kind == "token":
                pools.append(int(p))
            elif kind == "memory":
                pools.append(("memory", id(p)))
            else:
                return None
        return args, tuple(pools)

    @staticmethod
    def _entry(bound: BoundRequest, generation: int) -> _CachedBinding | None:
        try:
            refs = [weakref.ref(p) for p in bound.pools]
        except TypeError:  # a pool kind that takes no weak reference: not cached
            return None
        tokens = [isinstance(p, DriverBuffer) for p in bound.pools]
        positions = {id(p): i for i, p in enumerate(bound.pools)}
        input_dims = []
        for arg in bound.inputs:
            if not arg.has_no_value and tokens[arg.location.pool_index]:
                input_dims.append((arg.location.pool_index, tuple(arg.dimensions)))
        return _CachedBinding(bound.inputs, bound.outputs, bound.shapes, refs, tokens,
                              [positions[id(b)] for b in bound.output_buffers], input_dims, bound.shared_plans,
                              generation if any(tokens) else None)

    @staticmethod
    def _reuse(prepared_model, entry: _CachedBinding, request_pools) -> BoundRequest | None:
        """The cached binding for these pools, or None when something changed (a pool is another object,
        a token no longer names the same live buffer, an input buffer's state differs)."""
        pools = []
        buffers = prepared_model.device.buffers
        generation = buffers.generation
        # the key holds the tokens: while the registry's generation is unchanged, a token still names
        # the buffer it resolved to if that is alive (see BufferRegistry)
        resolved = generation == entry.generation
        for p, ref, token in zip(request_pools, entry.pools, entry.tokens):
            obj = ref()
            if obj is None or (p if not token else obj if resolved else buffers.get(p)) is not obj:
                return None
            pools.append(obj)
        if entry.generation is not None and not resolved:
            entry.generation = generation
        for position, dims in entry.input_dims:
            buf = pools[position]
            if not buf.initialized or buf.dimensions != dims:  # dimensions: a tuple
                return None
        return BoundRequest(entry.inputs, entry.outputs, pools, entry.shapes,
                            [pools[i] for i in entry.output_pools], shared_plans=entry.shared_plans)


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
