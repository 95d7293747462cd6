"""DriverBuffer: a driver-managed buffer (HAL ``IBuffer``) and the storage behind it (interface.md §6).

The buffer knows its token, roles, initial and current dimensions and initialized state; its bytes live
in the allocating device's allocator (a backends.base.Allocator: its backend's for an accelerator, a
host allocator for the reference device).  ``copy_to`` / ``copy_from`` follow §6.2.

Thread safety: a buffer has a readers/writer lock; concurrent reads (inputs, copy_to) share it, writes
(outputs, copy_from) take it alone, briefly, and never nest another lock.  An accelerator's in-place
binding (:meth:`DriverBuffer.device_input`, :meth:`~DriverBuffer.device_output`,
:meth:`~DriverBuffer.commit_output`) runs under the lock's mutex alone (one plain lock round trip when
uncontended), on views made once per shape.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from ..errors import failure, invalid
from ..hal.types import OPERAND_TYPE_INFO, OperandType
from ..memory import HardwareBuffer, Memory
from ..validation import byte_size
from .buffer_spec import MAX_DRIVER_BUFFER_BYTES, BufferSpec, fully_specified, merge_dims


# ---- readers/writer lock ---------------------------------------------------------------------------------
class _RWLock:
    """Readers/writer lock whose uncontended path is one acquisition of a plain mutex.

    The Condition is only waited on (and only notified) when some thread is actually blocked.  For a
    step short enough to run under the mutex itself (no device I/O), :meth:`quick` returns the mutex
    held with no writer (and, for a write, no reader) active: the step is then atomic with respect to
    every reader and writer, and costs one lock round trip.
    """

    __slots__ = ("_mutex", "_cond", "_readers", "_writer", "_waiting")

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._waiting = 0

    def _wait(self, write: bool) -> None:
        """Called with the mutex held: wait until the lock can be taken for reading / writing."""
        self._waiting += 1
        try:
            while self._writer or (write and self._readers):
                self._cond.wait()
        finally:
            self._waiting -= 1

    def quick(self, write: bool) -> threading.Lock:
        """The mutex, acquired once nothing conflicts; the caller releases it (see the class docstring)."""
        self._mutex.acquire()
        if self._writer or (write and self._readers):
            self._wait(write)
        return self._mutex

    def acquire_read(self) -> None:
        with self._mutex:
            if self._writer:
                self._wait(False)
            self._readers += 1

    def release_read(self) -> None:
        with self._mutex:
            self._readers -= 1
            if not self._readers and self._waiting:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._mutex:
            if self._writer or self._readers:
                self._wait(True)
            self._writer = True

    def release_write(self) -> None:
        with self._mutex:
            self._writer = False
            if self._waiting:
                self._cond.notify_all()

    class _Ctx:
        __slots__ = ("_acquire", "_release")

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

    The bytes stay in the device's allocator (grown when a dynamic-shape buffer receives a larger
    value; an accelerator's executions never copy them through the host).
    """

    def __init__(self, device, spec: BufferSpec, token: int):
        self.device = device
        self._spec = spec
        self._token = token
        self._roles = {(id(pm), d, i) for pm, d, i in spec.roles}
        self._models = list(spec.prepared_models)  # keep the role models alive: ids stay unique
        self.initial_dims: tuple[int, ...] = tuple(spec.dims)
        self._dims: tuple[int, ...] = tuple(spec.dims)
        self._initialized = False
        self._rw = _RWLock()
        self._is_tensor = spec.is_tensor
        self.allocator = device.allocator
        self._storage = None  # the allocator's buffer holding the value's bytes
        self._capacity = 0
        #: dims → allocator view of the first byte_size(dims) bytes of the current storage, for dims that
        #: passed the output checks (an execution's outputs and inputs bind these without recomputing)
        self._views: dict[tuple[int, ...], object] = {}
        if fully_specified(self.initial_dims, spec.is_tensor):
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
                self._write_bytes(raw)
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
        if merge_dims(self.initial_dims, dims) is None:
            raise invalid(f"copyFrom: dimensions {dims} incompatible with the buffer's {list(self.initial_dims)}")
        if byte_size(self._spec.type, dims) > MAX_DRIVER_BUFFER_BYTES:
            raise failure("copyFrom: value too large for a driver buffer")
        return tuple(dims)

    # ---- storage ----------------------------------------------------------------------------------
    def _ensure_capacity(self, nbytes: int) -> None:
        if self._storage is None or nbytes > self._capacity:
            self._storage = self.allocator.alloc(max(nbytes, 1))
            self._capacity = max(nbytes, 1)
            self._views = {}

    def _view(self, dims: tuple[int, ...]):
        """The view of the current storage holding a value of shape ``dims`` (capacity already ensured)."""
        view = self._views.get(dims)
        if view is None:
            if len(self._views) >= 8:  # a dynamic-shape buffer seeing many shapes
                self._views = {}
            view = self._views[dims] = self.allocator.view(self._storage, 0, byte_size(self._spec.type, dims))
        return view

    def _read_bytes(self, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.uint8)
        if size:
            self.allocator.download(self.allocator.view(self._storage, 0, size), out)
        return out

    def _write_bytes(self, raw: np.ndarray) -> None:
        self._ensure_capacity(raw.size)
        if raw.size:
            self.allocator.upload(self.allocator.view(self._storage, 0, raw.size), raw)

    # ---- execution-side access -------------------------------------------------------------------
    def read_value(self) -> np.ndarray:
        """The current value as a numpy array (host copy; counted download on an accelerator)."""
        with self._rw.read():
            if not self._initialized:
                raise failure("driver buffer read while uninitialized")
            raw = self._read_bytes(byte_size(self._spec.type, self._dims))
            return _decode(raw, self._spec.type, self._dims)

    def write_value(self, value) -> None:
        """Store an execution's output value (shape from the value) and mark the buffer initialized."""
        info = OPERAND_TYPE_INFO[self._spec.type]
        arr = np.asarray(value).astype(info.dtype, copy=False)
        dims = tuple(int(d) for d in arr.shape) if self.is_tensor else ()
        self._check_output_dims(dims)
        with self._rw.write():
            self._write_bytes(_encode(arr, self._spec.type))
            self._dims = dims
            self._initialized = True

    def _check_output_dims(self, dims: tuple[int, ...]) -> None:
        if self.is_tensor and merge_dims(self.initial_dims, dims) is None:
            raise failure(f"output shape {list(dims)} does not fit the driver buffer's {list(self.initial_dims)}")
        if byte_size(self._spec.type, dims) > MAX_DRIVER_BUFFER_BYTES:
            raise failure("output value too large for a driver buffer")

    def device_input(self):
        """(allocator buffer, dims) of the current value, for an accelerator to bind without copying."""
        mutex = self._rw.quick(False)
        try:
            if not self._initialized:
                raise failure("driver buffer read while uninitialized")
            dims = self._dims
            return self._view(dims), dims
        finally:
            mutex.release()

    def device_output(self, dims: Sequence[int]):
        """An allocator buffer able to hold a value of shape ``dims`` (the kernels write it in place);
        call :meth:`commit_output` once the execution has succeeded."""
        dims = tuple(map(int, dims)) if self._is_tensor else ()
        view = self._views.get(dims)  # a shape seen before passed the checks
        if view is None:
            self._check_output_dims(dims)
        mutex = self._rw.quick(True)
        try:
            if view is None or self._views.get(dims) is not view:  # the storage may have grown since
                self._ensure_capacity(byte_size(self._spec.type, dims))
                view = self._view(dims)
            return view
        finally:
            mutex.release()

    def commit_output(self, dims: Sequence[int]) -> None:
        """The execution that wrote this buffer as an output succeeded with shape ``dims``."""
        dims = tuple(map(int, dims)) if self._is_tensor else ()
        mutex = self._rw.quick(True)
        self._dims = dims
        self._initialized = True
        mutex.release()

    def set_uninitialized(self) -> None:
        self._initialized = False  # one store: atomic, ordered with nothing else

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
