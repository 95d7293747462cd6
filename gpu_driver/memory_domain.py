"""Memory domains: driver-managed buffers (HAL ``IBuffer``) and ``IDevice::allocate`` (interface.md §6).

* :func:`validate_allocation` — every rule of §6.1, shared by all devices; returns the buffer's
  operand type/quantisation, its initial (merged) dimensions and its role set.
* :class:`DriverBuffer` — the IBuffer: token, roles, initial and current dimensions, initialized
  state, and the bytes, held on the device that allocated it (host numpy for the reference device, a
  backend device buffer for an accelerator).  ``copy_to`` / ``copy_from`` follow §6.2.
* :class:`BufferRegistry` — the per-device token → buffer map (tokens > 0, unique per device; a
  buffer the client dropped no longer resolves).
* :func:`bind_request_buffers` — the request-time checks of §6.1 / §9.2 item 8 (role, initialized
  input, compatible dims, no buffer twice as output or as input and output) and the input shapes a
  buffer supplies; :meth:`BufferBindings.begin` marks the outputs uninitialized until the execution
  writes them (so a failed execution leaves them uninitialized).

Thread safety: a buffer has a readers/writer lock; concurrent reads (inputs, copy_to) share it, writes
(outputs, copy_from) take it alone, briefly, and never nest another lock.
"""
from __future__ import annotations

import itertools
import math
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .errors import DriverError, failure, invalid
from .hal.model import BufferDesc, BufferRole, Request, RequestArgument, SymmPerChannelQuantParams
from .hal.types import OPERAND_TYPE_INFO, OperandType
from .memory import HardwareBuffer, Memory

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device
    from .prepared_model import PreparedModel

#: the largest driver-managed buffer (HAL sizes are uint32; allocations beyond this are refused)
MAX_DRIVER_BUFFER_BYTES = 1 << 31


# ---- dimensions ------------------------------------------------------------------------------------------
def combine_dims(a: Sequence[int] | None, b: Sequence[int] | None) -> list[int] | None:
    """Merge two dimension lists (``[]`` = unknown rank, 0 = unknown axis); None if incompatible."""
    a = list(a or [])
    b = list(b or [])
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return out


def fully_specified(dims: Sequence[int], is_tensor: bool) -> bool:
    return not is_tensor or (len(dims) > 0 and 0 not in dims)


def byte_size(operand_type: OperandType, dims: Sequence[int]) -> int:
    info = OPERAND_TYPE_INFO[operand_type]
    return info.byte_size * math.prod(int(d) for d in dims) if info.is_tensor else info.byte_size


# ---- allocate validation (§6.1) --------------------------------------------------------------------------
@dataclass
class BufferSpec:
    """What :func:`validate_allocation` establishes about a buffer to allocate."""

    type: OperandType
    scale: float
    zero_point: int
    extra_params: Any
    dims: list[int]
    #: (prepared model, "in" / "out", io index) of every role
    roles: set[tuple[Any, str, int]] = field(default_factory=set)
    prepared_models: list = field(default_factory=list)

    @property
    def is_tensor(self) -> bool:
        return OPERAND_TYPE_INFO[self.type].is_tensor


def _same_extra(a, b) -> bool:
    if isinstance(a, SymmPerChannelQuantParams) or isinstance(b, SymmPerChannelQuantParams):
        if not (isinstance(a, SymmPerChannelQuantParams) and isinstance(b, SymmPerChannelQuantParams)):
            return False
        return a.channel_dim == b.channel_dim and list(a.scales) == list(b.scales)
    return True  # extension params (bytes) are not compared; None == None


def validate_allocation(device: "Device", desc: BufferDesc, prepared_models: Sequence["PreparedModel"],
                        input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]) -> BufferSpec:
    """Apply every allocate rule of interface.md §6.1; INVALID_ARGUMENT for a violation, GENERAL_FAILURE
    for a property this driver cannot honour (extension/OEM types, a buffer too large)."""
    from .prepared_model import PreparedModel

    if not isinstance(desc, BufferDesc):
        raise invalid("allocate: desc must be a BufferDesc")
    ddims = desc.dimensions
    if not isinstance(ddims, (list, tuple)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and 0 <= d < 1 << 32 for d in ddims):
        raise invalid(f"allocate: desc dimensions must be uint32 values, got {ddims!r}")
    if not isinstance(prepared_models, (list, tuple)) or not prepared_models:
        raise invalid("allocate: at least one prepared model is required")
    for i, pm in enumerate(prepared_models):
        if not isinstance(pm, PreparedModel):
            raise invalid(f"allocate: prepared model {i} is not a PreparedModel")
        if pm.device is not device:
            raise invalid(f"allocate: prepared model {i} was not prepared by device {device.name}")
    for name, roles in (("input", input_roles), ("output", output_roles)):
        if not isinstance(roles, (list, tuple)):
            raise invalid(f"allocate: {name} roles must be a list of BufferRole")
    if not input_roles and not output_roles:
        raise invalid("allocate: at least one input or output role is required")

    spec: BufferSpec | None = None
    dims: list[int] | None = [int(d) for d in ddims]
    seen: set[tuple[int, str, int]] = set()
    for direction, roles in (("in", input_roles), ("out", output_roles)):
        for role in roles:
            if not isinstance(role, BufferRole):
                raise invalid(f"allocate: {role!r} is not a BufferRole")
            mi, io, p = role.model_index, role.io_index, role.probability
            if isinstance(mi, bool) or not isinstance(mi, (int, np.integer)) or not 0 <= mi < len(prepared_models):
                raise invalid(f"allocate: role model_index {mi!r} out of range ({len(prepared_models)} models)")
            pm = prepared_models[mi]
            main = pm.model.main
            indexes = main.input_indexes if direction == "in" else main.output_indexes
            if isinstance(io, bool) or not isinstance(io, (int, np.integer)) or not 0 <= io < len(indexes):
                raise invalid(f"allocate: {direction}put role io_index {io!r} out of range "
                              f"(model {mi} has {len(indexes)})")
            if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not 0.0 < float(p) <= 1.0:
                raise invalid(f"allocate: role probability must be in (0.0, 1.0], got {p!r}")
            key = (id(pm), direction, int(io))
            if key in seen:
                raise invalid(f"allocate: duplicate {direction}put role {int(io)} of prepared model {mi}")
            seen.add(key)
            operand = main.operands[indexes[io]]
            try:
                otype = OperandType(operand.type)
            except ValueError:
                otype = None
            if otype is None or otype not in OPERAND_TYPE_INFO or OPERAND_TYPE_INFO[otype].dtype is None:
                raise failure(f"allocate: operand type {operand.type!r} (extension/OEM) cannot be a driver buffer")
            if spec is None:
                spec = BufferSpec(otype, operand.scale, operand.zero_point, operand.extra_params, [])
            elif (otype != spec.type or operand.scale != spec.scale or operand.zero_point != spec.zero_point
                  or not _same_extra(operand.extra_params, spec.extra_params)):
                raise invalid(f"allocate: role {direction}put {int(io)} of model {mi} has another operand type "
                              "or quantisation than the other roles")
            dims = combine_dims(dims, operand.dimensions)
            if dims is None:
                raise invalid(f"allocate: dimensions of role {direction}put {int(io)} of model {mi} "
                              f"({operand.dimensions}) are incompatible with the desc and the other roles")
            spec.roles.add((pm, direction, int(io)))
    assert spec is not None and dims is not None
    if not spec.is_tensor and dims:
        raise invalid(f"allocate: a scalar buffer has no dimensions, got {dims}")
    spec.dims = dims
    spec.prepared_models = list(prepared_models)
    if fully_specified(dims, spec.is_tensor):
        size = byte_size(spec.type, dims)
        if size > MAX_DRIVER_BUFFER_BYTES:
            raise failure(f"allocate: a buffer of {size} bytes exceeds the {MAX_DRIVER_BUFFER_BYTES}-byte limit")
    return spec


# ---- readers/writer lock ---------------------------------------------------------------------------------
class _RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False

    def acquire_read(self) -> None:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True

    def release_write(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()

    class _Ctx:
        def __init__(self, acquire, release):
            self._acquire, self._release = acquire, release

        def __enter__(self):
            self._acquire()

        def __exit__(self, *exc):
            self._release()

    def read(self):
        return self._Ctx(self.acquire_read, self.release_read)

    def write(self):
        return self._Ctx(self.acquire_write, self.release_write)


# ---- the IBuffer -----------------------------------------------------------------------------------------
def _encode(arr: np.ndarray, operand_type: OperandType) -> np.ndarray:
    """Operand values → their little-endian bytes (uint8 array)."""
    info = OPERAND_TYPE_INFO[operand_type]
    arr = np.ascontiguousarray(arr)
    if info.dtype == np.bool_:
        return arr.astype(np.uint8).reshape(-1)
    return arr.astype(info.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)


def _decode(raw: np.ndarray, operand_type: OperandType, dims: Sequence[int]) -> np.ndarray:
    info = OPERAND_TYPE_INFO[operand_type]
    if info.dtype == np.bool_:
        arr = raw != 0
    else:
        arr = np.frombuffer(raw.tobytes(), dtype=info.dtype.newbyteorder("<")).astype(info.dtype)
    return arr.reshape(tuple(dims) if info.is_tensor else ())


class DriverBuffer:
    """A driver-managed buffer (HAL ``IBuffer``) of one device; see the module docstring.

    The bytes stay on the allocating device: a numpy array for the reference device, a backend
    :class:`~gpu_driver.backends.base.DeviceBuffer` for an accelerator (grown when a dynamic-shape
    buffer receives a larger value; never copied through the host by executions).
    """

    def __init__(self, device: "Device", spec: BufferSpec, token: int):
        self.device = device
        self._spec = spec
        self._token = token
        self._roles = {(id(pm), d, i) for pm, d, i in spec.roles}
        self._models = list(spec.prepared_models)  # keep the role models alive: ids stay unique
        self.initial_dims: tuple[int, ...] = tuple(spec.dims)
        self._dims: tuple[int, ...] = tuple(spec.dims)
        self._initialized = False
        self._rw = _RWLock()
        self._state = threading.Lock()  # guards _initialized / _dims flips outside the rw lock
        self.backend = getattr(device, "backend", None)
        self._host: np.ndarray | None = None      # reference storage: the value
        self._dev = None                          # accelerator storage: DeviceBuffer
        self._capacity = 0
        if self.backend is not None and fully_specified(self.initial_dims, spec.is_tensor):
            self._ensure_capacity(byte_size(spec.type, self.initial_dims))

    # ---- HAL --------------------------------------------------------------------------------------
    def get_token(self) -> int:
        """HAL ``IBuffer`` token (also :attr:`token`)."""
        return self._token

    @property
    def token(self) -> int:
        return self._token

    @property
    def operand_type(self) -> OperandType:
        return self._spec.type

    @property
    def is_tensor(self) -> bool:
        return self._spec.is_tensor

    @property
    def dtype(self) -> np.dtype:
        return OPERAND_TYPE_INFO[self._spec.type].dtype

    @property
    def dimensions(self) -> tuple[int, ...]:
        """The current dimensions: the shape last written (the initial, merged dims before that)."""
        return self._dims

    @property
    def initialized(self) -> bool:
        return self._initialized

    @property
    def nbytes(self) -> int | None:
        """Byte size of the current value (None while its shape is unknown)."""
        if not fully_specified(self._dims, self.is_tensor):
            return None
        return byte_size(self._spec.type, self._dims)

    def has_role(self, prepared_model, direction: str, io_index: int) -> bool:
        return (id(prepared_model), direction, io_index) in self._roles

    def copy_to(self, dst: Memory) -> None:
        """HAL ``IBuffer::copyTo``: the whole value into ``dst`` (§6.2).

        GENERAL_FAILURE when ``dst`` cannot be mapped for writing (not a pool, non-BLOB hardware buffer,
        read-only mapping) or the buffer is uninitialized; INVALID_ARGUMENT when ``dst``'s size differs
        from the buffer's byte size.
        """
        if not _mappable(dst, write=True):
            raise failure("copyTo: the destination memory cannot be mapped for writing")
        with self._rw.read():
            if not self._initialized:
                raise failure("copyTo: the buffer is uninitialized")
            size = byte_size(self._spec.type, self._dims)
            if dst.size != size:
                raise invalid(f"copyTo: destination holds {dst.size} bytes, the buffer {size}")
            raw = self._read_bytes(size)
        dst.write(0, raw)

    def copy_from(self, src: Memory, dimensions: Sequence[int] = ()) -> None:
        """HAL ``IBuffer::copyFrom``: replace the value with ``src``'s bytes, of shape ``dimensions``.

        Scalar buffers take empty dimensions; tensors take empty dimensions only when the initial
        dimensions are fully specified, otherwise fully specified dimensions compatible with them.
        ``src``'s size must equal the value's byte size.  INVALID_ARGUMENT for a violation,
        GENERAL_FAILURE for an unmappable ``src``; on any failure the buffer becomes uninitialized.
        """
        with self._rw.write():
            try:
                if not _mappable(src, write=False):
                    raise failure("copyFrom: the source memory cannot be mapped")
                dims = self._copy_from_dims(dimensions)
                size = byte_size(self._spec.type, dims)
                if src.size != size:
                    raise invalid(f"copyFrom: source holds {src.size} bytes, dimensions {list(dims)} need {size}")
                raw = np.frombuffer(src.read(0, size), dtype=np.uint8)
                self._write_bytes(raw, dims)
                self._dims = dims
                self._initialized = True
            except BaseException:
                self._initialized = False
                raise

    def _copy_from_dims(self, dimensions) -> tuple[int, ...]:
        if not isinstance(dimensions, (list, tuple)) or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) and 0 <= d < 1 << 32
                for d in dimensions):
            raise invalid(f"copyFrom: dimensions must be a list of uint32, got {dimensions!r}")
        dims = [int(d) for d in dimensions]
        if not self.is_tensor:
            if dims:
                raise invalid("copyFrom: a scalar buffer takes empty dimensions")
            return ()
        if not dims:
            if not fully_specified(self.initial_dims, True):
                raise invalid(f"copyFrom: the buffer's dimensions {list(self.initial_dims)} are not fully "
                              "specified, so dimensions must be given")
            return self.initial_dims
        if 0 in dims:
            raise invalid(f"copyFrom: dimensions {dims} must be fully specified")
        if combine_dims(self.initial_dims, dims) is None:
            raise invalid(f"copyFrom: dimensions {dims} incompatible with the buffer's {list(self.initial_dims)}")
        if byte_size(self._spec.type, dims) > MAX_DRIVER_BUFFER_BYTES:
            raise failure("copyFrom: value too large for a driver buffer")
        return tuple(dims)

    # ---- storage ----------------------------------------------------------------------------------
    def _ensure_capacity(self, nbytes: int) -> None:
        if self._dev is None or nbytes > self._capacity:
            self._dev = self.backend.alloc(max(nbytes, 1))
            self._capacity = max(nbytes, 1)

    def _read_bytes(self, size: int) -> np.ndarray:
        if self.backend is None:
            return _encode(self._host, self._spec.type)
        out = np.empty(size, dtype=np.uint8)
        if size:
            self.backend.download(self.backend.view(self._dev, 0, size), out)
        return out

    def _write_bytes(self, raw: np.ndarray, dims: Sequence[int]) -> None:
        if self.backend is None:
            self._host = _decode(raw, self._spec.type, dims)
            return
        self._ensure_capacity(raw.size)
        if raw.size:
            self.backend.upload(self.backend.view(self._dev, 0, raw.size), raw)

    # ---- execution-side access -------------------------------------------------------------------
    def read_value(self) -> np.ndarray:
        """The current value as a numpy array (host copy; counted download on an accelerator)."""
        with self._rw.read():
            if not self._initialized:
                raise failure("driver buffer read while uninitialized")
            if self.backend is None:
                return self._host.copy()
            raw = self._read_bytes(byte_size(self._spec.type, self._dims))
            return _decode(raw, self._spec.type, self._dims)

    def write_value(self, value) -> None:
        """Store an execution's output value (shape from the value) and mark the buffer initialized."""
        info = OPERAND_TYPE_INFO[self._spec.type]
        arr = np.asarray(value).astype(info.dtype, copy=False)
        dims = tuple(int(d) for d in arr.shape) if self.is_tensor else ()
        self._check_output_dims(dims)
        with self._rw.write():
            self._write_bytes(_encode(arr, self._spec.type), dims)
            self._dims = dims
            self._initialized = True

    def _check_output_dims(self, dims: tuple[int, ...]) -> None:
        if self.is_tensor and combine_dims(self.initial_dims, dims) is None:
            raise failure(f"output shape {list(dims)} does not fit the driver buffer's {list(self.initial_dims)}")
        if byte_size(self._spec.type, dims) > MAX_DRIVER_BUFFER_BYTES:
            raise failure("output value too large for a driver buffer")

    def device_input(self):
        """(DeviceBuffer, dims) of the current value, for an accelerator to bind without copying."""
        with self._rw.read():
            if not self._initialized:
                raise failure("driver buffer read while uninitialized")
            size = byte_size(self._spec.type, self._dims)
            return self.backend.view(self._dev, 0, size), self._dims

    def device_output(self, dims: Sequence[int]):
        """A DeviceBuffer able to hold a value of shape ``dims`` (the kernels write it in place);
        call :meth:`commit_output` once the execution has succeeded."""
        dims = tuple(int(d) for d in dims) if self.is_tensor else ()
        self._check_output_dims(dims)
        size = byte_size(self._spec.type, dims)
        with self._rw.write():
            self._ensure_capacity(size)
            return self.backend.view(self._dev, 0, size)

    def commit_output(self, dims: Sequence[int]) -> None:
        """The execution that wrote this buffer as an output succeeded with shape ``dims``."""
        with self._rw.write():
            self._dims = tuple(int(d) for d in dims) if self.is_tensor else ()
            self._initialized = True

    def set_uninitialized(self) -> None:
        with self._state:
            self._initialized = False

    def __repr__(self) -> str:
        state = "initialized" if self._initialized else "uninitialized"
        return (f"<DriverBuffer token={self._token} {self._spec.type.name}{list(self._dims)} {state} "
                f"on {self.device.name}>")


def _mappable(memory, write: bool) -> bool:
    if not isinstance(memory, Memory):
        return False
    if isinstance(memory, HardwareBuffer):
        return memory.is_blob
    try:
        return not write or memory.writable
    except Exception:  # a closed or broken mapping
        return False


# ---- per-device token registry ---------------------------------------------------------------------------
class BufferRegistry:
    """Tokens (> 0, unique per device) → live buffers; a buffer the client dropped stops resolving."""

    def __init__(self) -> None:
        self._buffers: "weakref.WeakValueDictionary[int, DriverBuffer]" = weakref.WeakValueDictionary()
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def new_token(self) -> int:
        with self._lock:
            return next(self._next)

    def add(self, buffer: DriverBuffer) -> None:
        with self._lock:
            self._buffers[buffer.token] = buffer

    def get(self, token) -> DriverBuffer | None:
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or token <= 0:
            return None
        with self._lock:
            return self._buffers.get(int(token))

    def remove(self, token: int) -> None:
        with self._lock:
            self._buffers.pop(token, None)


_REGISTRIES: "weakref.WeakKeyDictionary[Any, BufferRegistry]" = weakref.WeakKeyDictionary()
_REGISTRIES_LOCK = threading.Lock()


def registry_of(device: "Device") -> BufferRegistry:
    with _REGISTRIES_LOCK:
        reg = _REGISTRIES.get(device)
        if reg is None:
            reg = _REGISTRIES[device] = BufferRegistry()
        return reg


def allocate(device: "Device", desc: BufferDesc, prepared_models, input_roles, output_roles
             ) -> tuple[DriverBuffer, int]:
    """``IDevice::allocate`` for any device: validate (§6.1), create the buffer on the device, register."""
    spec = validate_allocation(device, desc, prepared_models, input_roles, output_roles)
    reg = registry_of(device)
    token = reg.new_token()
    try:
        buffer = DriverBuffer(device, spec, token)
    except DriverError:
        raise
    except Exception as exc:  # device allocation trouble
        raise failure(f"allocate: could not allocate the buffer on {device.name}: {exc}") from None
    reg.add(buffer)
    return buffer, token


def resolve(device: "Device", token) -> DriverBuffer:
    buffer = registry_of(device).get(token)
    if buffer is None:
        raise invalid(f"memory-domain token {token!r} is not a live buffer of device {device.name}")
    return buffer


# ---- request-time checks ---------------------------------------------------------------------------------
@dataclass
class BufferBindings:
    """Driver buffers a request uses: (argument index, buffer) per direction."""

    inputs: list[tuple[int, DriverBuffer]] = field(default_factory=list)
    outputs: list[tuple[int, DriverBuffer]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.inputs or self.outputs)

    def begin(self) -> None:
        """The execution starts: its output buffers are uninitialized until it writes them."""
        for _, buf in self.outputs:
            buf.set_uninitialized()


def _is_token(pool) -> bool:
    return not isinstance(pool, Memory) and isinstance(pool, (int, np.integer)) and not isinstance(pool, bool)


def _check_image_buffers(request: Request) -> None:
    """A non-BLOB HardwareBuffer is only ever a whole execution input or output (offset 0)."""
    for direction, args in (("in", request.inputs), ("out", request.outputs)):
        if not isinstance(args, (list, tuple)):
            continue
        for i, arg in enumerate(args):
            if not isinstance(arg, RequestArgument) or arg.has_no_value:
                continue
            pi = arg.location.pool_index
            if isinstance(pi, (int, np.integer)) and 0 <= pi < len(request.pools):
                pool = request.pools[pi]
                if isinstance(pool, HardwareBuffer) and not pool.is_blob and arg.location.offset != 0:
                    raise invalid(f"{direction}put {i}: a non-BLOB HardwareBuffer is used whole (offset 0), "
                                  f"got offset {arg.location.offset}")


def bind_request_buffers(prepared_model: "PreparedModel", request: Request) -> tuple[Request, BufferBindings]:
    """Check every memory-domain argument of ``request`` against its buffer (§6.1, §9.2 item 8).

    Returns the request with each buffer input's dimensions set to the buffer's current shape and each
    buffer output's dimensions merged with the buffer's initial shape (a new Request when anything
    changed), and the bindings.  Malformed arguments (bad pool index, …) are left to validate_request.
    """
    bindings = BufferBindings()
    if not isinstance(request, Request) or not isinstance(request.pools, (list, tuple)):
        return request, bindings
    _check_image_buffers(request)
    if not any(_is_token(p) for p in request.pools):
        return request, bindings
    device = prepared_model.device
    main = prepared_model.model.main
    new_inputs = list(request.inputs) if isinstance(request.inputs, (list, tuple)) else request.inputs
    new_outputs = list(request.outputs) if isinstance(request.outputs, (list, tuple)) else request.outputs
    changed = False
    used_as_output: set[int] = set()
    used_as_input: set[int] = set()
    for direction, args, new_args in (("in", request.inputs, new_inputs), ("out", request.outputs, new_outputs)):
        if not isinstance(args, (list, tuple)):
            continue
        count = len(main.input_indexes if direction == "in" else main.output_indexes)
        for i, arg in enumerate(args):
            if not isinstance(arg, RequestArgument) or arg.has_no_value or i >= count:
                continue
            pi = arg.location.pool_index
            if isinstance(pi, bool) or not isinstance(pi, (int, np.integer)) or not 0 <= pi < len(request.pools):
                continue
            pool = request.pools[pi]
            if not _is_token(pool):
                continue
            buf = resolve(device, pool)
            what = f"{direction}put {i}"
            if not buf.has_role(prepared_model, direction, i):
                raise invalid(f"{what}: driver buffer {buf.token} has no role as {what} of this prepared model")
            if arg.location.offset != 0:
                raise invalid(f"{what}: a driver buffer is used whole (offset 0), got offset {arg.location.offset}")
            dims = list(arg.dimensions or [])
            if direction == "in":
                used_as_input.add(id(buf))  # the same buffer as two inputs is fine
                bindings.inputs.append((i, buf))
            else:
                if id(buf) in used_as_output:
                    raise invalid(f"{what}: driver buffer {buf.token} is used as two outputs of one request")
                used_as_output.add(id(buf))
                merged = combine_dims(dims, buf.initial_dims)
                if merged is None:
                    raise invalid(f"{what}: dimensions {dims} incompatible with the driver buffer's "
                                  f"{list(buf.initial_dims)}")
                if merged != dims:
                    new_args[i] = RequestArgument(arg.location, merged, False)
                    changed = True
                bindings.outputs.append((i, buf))
    if used_as_input & used_as_output:
        raise invalid("a driver buffer is used as both an input and an output of one request")
    for i, buf in bindings.inputs:
        arg = new_inputs[i]
        dims = list(arg.dimensions or [])
        if not buf.initialized:
            raise failure(f"input {i}: driver buffer {buf.token} is uninitialized")
        current = list(buf.dimensions)
        if combine_dims(dims, current) is None:
            raise invalid(f"input {i}: dimensions {dims} incompatible with the driver buffer's {current}")
        if current != dims:
            new_inputs[i] = RequestArgument(arg.location, current, False)
            changed = True
    if changed:
        request = Request(new_inputs, new_outputs, request.pools)
    return request, bindings


# ---- accelerator binding: device-resident pools never cross the host ------------------------------------
def _aligned(backend, offset: int) -> bool:
    return offset % backend.alignment == 0


def bind_device_input(prepared_model, arg, pool, buffer, nbytes: int) -> bool:
    """Fill the accelerator's input ``buffer`` from a device-resident pool; False = not handled here.

    A driver buffer of this device, or a HardwareBuffer living on this backend at an aligned offset, is
    copied device-to-device (no host bytes); any other HardwareBuffer is read through its allocator.
    """
    backend = prepared_model.backend
    if _is_token(pool):
        buf = resolve(prepared_model.device, pool)
        if buf.backend is not backend:
            return False
        src, _dims = buf.device_input()
        if src.nbytes < nbytes:
            raise failure(f"driver buffer {buf.token} holds {src.nbytes} bytes, the input needs {nbytes}")
        backend.copy(src, buffer, nbytes)
        return True
    if isinstance(pool, HardwareBuffer):
        off = arg.location.offset
        if pool.resides_on(backend) and _aligned(backend, off):
            backend.copy(backend.view(pool.device_buffer, off, nbytes), buffer, nbytes)
        else:
            backend.upload(buffer, np.frombuffer(pool.read(off, nbytes), dtype=np.uint8))
        return True
    return False


def bind_device_output(prepared_model, arg, pool, buffer, nbytes: int, shape) -> bool:
    """Deliver the accelerator's output ``buffer`` into a device-resident pool; False = not handled."""
    backend = prepared_model.backend
    if _is_token(pool):
        buf = resolve(prepared_model.device, pool)
        if buf.backend is not backend:
            return False
        dst = buf.device_output(shape)
        backend.copy(buffer, dst, nbytes)
        backend.finish()
        buf.commit_output(shape)
        return True
    if isinstance(pool, HardwareBuffer):
        off = arg.location.offset
        if pool.resides_on(backend) and _aligned(backend, off):
            if nbytes:
                backend.copy(buffer, backend.view(pool.device_buffer, off, nbytes), nbytes)
                backend.finish()
        elif nbytes:
            out = np.empty(nbytes, dtype=np.uint8)
            backend.download(buffer, out)
            pool.write(off, out)
        return True
    return False
