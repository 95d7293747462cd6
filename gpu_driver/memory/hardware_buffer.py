"""HardwareBuffer: an AHardwareBuffer-like pool that lives where the device computes.

A HardwareBuffer is allocated either on the device of an accelerator backend (its bytes are a device
buffer of that backend; the driver binds them to kernels without any host copy) or, for the reference
device and host-only use, in anonymous shared memory (``os.memfd_create``) that can cross a process
boundary like an AHardwareBuffer handle.

Formats follow ``AHardwareBuffer_Format``: ``BLOB`` (a plain byte buffer: ``width`` = size in bytes,
``height`` = ``layers`` = 1) or a 2-D image format (``R8G8B8A8_UNORM``, ``R8_UNORM``, …) with
width/height/layers and a row ``stride`` in pixels.  HIDL names the two kinds
``"hardware_buffer_blob"`` and ``"hardware_buffer"``.

Rules (interface.md §4, NDK ``ANeuralNetworksMemory_createFromAHardwareBuffer``):

* a BLOB buffer is usable for model constants (CONSTANT_REFERENCE pools) and request data;
* a non-BLOB buffer is usable only as a whole execution input or output (offset 0): it cannot be a
  model pool, cannot be mapped as a byte pool, and cannot be a copy source/destination of a memory-
  domain buffer; any such use is refused with INVALID_ARGUMENT.

CPU access goes through :meth:`HardwareBuffer.lock` / :meth:`HardwareBuffer.unlock`, which follow
AHardwareBuffer_lock: the requested usage must be CPU usage the buffer was allocated with, a buffer is
locked at most once at a time, the array returned by ``lock`` is read-only unless CPU write usage was
requested and stops being writable at ``unlock``, and CPU writes are visible to the device after
``unlock`` (for a device-resident buffer they are copied to the device then, and counted by the
backend's transfer counters).
"""
from __future__ import annotations

import enum
import mmap
import os
import threading
import weakref
from typing import Any

import numpy as np

from .base import Memory, byte_view, log, map_fd, new_memfd, os_error, register_memory_kind


class HardwareBufferFormat(enum.IntEnum):
    """``AHardwareBuffer_Format`` values this driver accepts."""

    R8G8B8A8_UNORM = 1
    R8G8B8X8_UNORM = 2
    R8G8B8_UNORM = 3
    R5G6B5_UNORM = 4
    R16G16B16A16_FLOAT = 0x16
    BLOB = 0x21
    R10G10B10A2_UNORM = 0x2B
    R8_UNORM = 0x38


#: bytes per pixel of each image format (BLOB: bytes per "pixel" of width = 1)
BYTES_PER_PIXEL = {
    HardwareBufferFormat.R8G8B8A8_UNORM: 4,
    HardwareBufferFormat.R8G8B8X8_UNORM: 4,
    HardwareBufferFormat.R8G8B8_UNORM: 3,
    HardwareBufferFormat.R5G6B5_UNORM: 2,
    HardwareBufferFormat.R16G16B16A16_FLOAT: 8,
    HardwareBufferFormat.BLOB: 1,
    HardwareBufferFormat.R10G10B10A2_UNORM: 4,
    HardwareBufferFormat.R8_UNORM: 1,
}


class HardwareBufferUsage(enum.IntFlag):
    """``AHardwareBuffer_UsageFlags`` (the subset that matters here)."""

    CPU_READ_NEVER = 0
    CPU_READ_RARELY = 2
    CPU_READ_OFTEN = 3
    CPU_READ_MASK = 0xF
    CPU_WRITE_NEVER = 0
    CPU_WRITE_RARELY = 0x20
    CPU_WRITE_OFTEN = 0x30
    CPU_WRITE_MASK = 0xF0
    GPU_SAMPLED_IMAGE = 0x100
    GPU_FRAMEBUFFER = 0x200
    GPU_COLOR_OUTPUT = 0x200
    GPU_DATA_BUFFER = 0x1000000


CPU_USAGE_MASK = int(HardwareBufferUsage.CPU_READ_MASK | HardwareBufferUsage.CPU_WRITE_MASK)
_KNOWN_USAGE = CPU_USAGE_MASK | int(HardwareBufferUsage.GPU_SAMPLED_IMAGE | HardwareBufferUsage.GPU_FRAMEBUFFER
                                    | HardwareBufferUsage.GPU_DATA_BUFFER)
#: default usage: CPU read/write often, GPU data buffer (BLOB) / sampled image (images)
DEFAULT_BLOB_USAGE = int(HardwareBufferUsage.CPU_READ_OFTEN | HardwareBufferUsage.CPU_WRITE_OFTEN
                         | HardwareBufferUsage.GPU_DATA_BUFFER)
DEFAULT_IMAGE_USAGE = int(HardwareBufferUsage.CPU_READ_OFTEN | HardwareBufferUsage.CPU_WRITE_OFTEN
                          | HardwareBufferUsage.GPU_SAMPLED_IMAGE)
#: image rows are padded to a multiple of this many pixels (what a gralloc would choose)
STRIDE_ALIGNMENT_PIXELS = 16
#: the largest buffer this driver allocates
MAX_HARDWARE_BUFFER_BYTES = 1 << 31


# ---- storage: where the bytes live ----------------------------------------------------------------------
class HostStorage:
    """Bytes in anonymous shared memory (fd-backed): the reference device's "device memory"."""

    backend = None
    handle = None

    def __init__(self, nbytes: int, fd: int | None = None):
        if fd is None:
            fd = new_memfd("gpu_driver-hwbuf", max(nbytes, 1))
        else:
            try:
                fd = os.dup(fd)
            except (OSError, TypeError, OverflowError) as exc:
                raise os_error(f"HardwareBuffer: cannot duplicate fd {fd!r}", exc) from None
        # this object's fd is closed with it, also when it is only garbage-collected
        self._close_fd = weakref.finalize(self, os.close, fd)
        self._fd = fd
        self.nbytes = nbytes
        try:
            self._map = map_fd(f"HardwareBuffer of {nbytes} bytes", fd, max(nbytes, 1),
                               mmap.PROT_READ | mmap.PROT_WRITE)
        except Exception:
            self._close_fd()
            raise

    def _mapping(self) -> mmap.mmap:
        if self._map.closed:
            from ..errors import invalid

            raise invalid("the HardwareBuffer is closed")
        return self._map

    def host_view(self) -> memoryview:
        return memoryview(self._mapping())[:self.nbytes]

    def read(self, offset: int, length: int) -> np.ndarray:
        return np.frombuffer(self._mapping(), dtype=np.uint8, count=length, offset=offset).copy()

    def write(self, offset: int, data) -> None:
        mv = byte_view(data)
        self._mapping()[offset:offset + mv.nbytes] = mv

    def map(self, writable: bool) -> np.ndarray:
        arr = np.frombuffer(self._mapping(), dtype=np.uint8, count=self.nbytes)
        if not writable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def unmap(self, arr: np.ndarray, written: bool) -> None:
        pass

    def fds(self) -> list[int]:
        return [self._fd]

    def close(self) -> None:
        if not self._map.closed:
            try:
                self._map.close()
            except BufferError:  # views still alive: the mapping goes with them
                return
        self._close_fd()  # once: a finalizer runs at most one time
        self._fd = -1


class BackendStorage:
    """Bytes in a device buffer of an accelerator backend (gpu_driver.backends.base.BackendDevice).

    Every host↔device byte goes through the backend allocator's counted ``upload`` / ``download``;
    ``handle`` is the allocator's :class:`DeviceBuffer`, bound directly to kernels by the accelerator
    device.  Ranges that do not start on the allocator's view alignment are moved through the
    enclosing aligned window (the extra bytes are counted too).
    """

    def __init__(self, backend, nbytes: int):
        self.backend = backend
        self.allocator = backend.allocator
        self.nbytes = nbytes
        self.handle = self.allocator.alloc(max(nbytes, 1))

    def host_view(self) -> None:
        return None

    def _window(self, offset: int, length: int):
        base = offset - offset % self.allocator.alignment
        return base, self.allocator.view(self.handle, base, offset + length - base)

    def read(self, offset: int, length: int) -> np.ndarray:
        if length <= 0:
            return np.empty(0, dtype=np.uint8)
        base, view = self._window(offset, length)
        out = np.empty(offset + length - base, dtype=np.uint8)
        self.allocator.download(view, out)
        return out[offset - base:] if base != offset else out

    def write(self, offset: int, data) -> None:
        arr = np.frombuffer(byte_view(data), dtype=np.uint8)
        if not arr.size:
            return
        base, view = self._window(offset, arr.size)
        if base != offset:  # read-modify-write of the aligned window's head
            head = np.empty(offset - base + arr.size, dtype=np.uint8)
            self.allocator.download(self.allocator.view(self.handle, base, offset - base), head[:offset - base])
            head[offset - base:] = arr
            arr = head
        self.allocator.upload(view, arr)

    def map(self, writable: bool) -> np.ndarray:
        arr = self.read(0, self.nbytes)
        arr.flags.writeable = writable
        return arr

    def unmap(self, arr: np.ndarray, written: bool) -> None:
        if written:
            self.write(0, arr)

    def fds(self) -> list[int]:
        return []

    def close(self) -> None:
        self.handle = None  # the runtime frees the device memory with its last reference


def backend_of(device) -> Any:
    """The accelerator backend of a device (None for the reference device / host memory)."""
    if device is None:
        return None
    return getattr(device, "backend", None)


# ---- the pool ---------------------------------------------------------------------------------------
class HardwareBuffer(Memory):
    """An AHardwareBuffer-like pool; see the module docstring.

    ``HardwareBuffer(width, height=1, layers=1, format=BLOB, usage=…, device=None)``; a BLOB of
    ``n`` bytes is ``HardwareBuffer.blob(n, device=…)``.  With ``device`` an accelerator device (or
    ``backend`` a backend) the bytes live in that backend's device memory; otherwise in host shared
    memory.
    """

    def __init__(self, width: int, height: int = 1, layers: int = 1,
                 format: HardwareBufferFormat | int = HardwareBufferFormat.BLOB, usage: int | None = None, *,
                 device=None, backend=None, stride: int | None = None, _fd: int | None = None):
        from ..errors import DriverError, invalid

        try:
            fmt = HardwareBufferFormat(format)
        except (ValueError, TypeError):
            raise invalid(f"unsupported AHardwareBuffer format {format!r}") from None
        for name, v in (("width", width), ("height", height), ("layers", layers)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise invalid(f"HardwareBuffer {name} must be a positive integer, got {v!r}")
        width, height, layers = int(width), int(height), int(layers)
        if usage is None:
            usage = DEFAULT_BLOB_USAGE if fmt == HardwareBufferFormat.BLOB else DEFAULT_IMAGE_USAGE
        if isinstance(usage, bool) or not isinstance(usage, (int, np.integer)) or usage < 0 or usage & ~_KNOWN_USAGE:
            raise invalid(f"unsupported AHardwareBuffer usage flags {usage!r}")
        usage = int(usage)
        bpp = BYTES_PER_PIXEL[fmt]
        if fmt == HardwareBufferFormat.BLOB:
            if height != 1 or layers != 1:
                raise invalid("a BLOB HardwareBuffer has height 1 and layers 1 (width = size in bytes)")
            stride = width
        else:
            if usage & HardwareBufferUsage.GPU_DATA_BUFFER:
                raise invalid("GPU_DATA_BUFFER usage is only valid for the BLOB format")
            if stride is None:
                stride = -(-width // STRIDE_ALIGNMENT_PIXELS) * STRIDE_ALIGNMENT_PIXELS
            elif isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < width:
                raise invalid(f"HardwareBuffer stride must be >= width ({width}), got {stride!r}")
        nbytes = int(stride) * height * layers * bpp
        if nbytes > MAX_HARDWARE_BUFFER_BYTES:
            raise DriverError(2, f"HardwareBuffer of {nbytes} bytes exceeds the {MAX_HARDWARE_BUFFER_BYTES} limit")
        self._format = fmt
        self._width, self._height, self._layers, self._stride = width, height, layers, int(stride)
        self._usage = usage
        self._nbytes = nbytes
        self._device = device
        if backend is None:
            backend = backend_of(device)
        try:
            self._storage = BackendStorage(backend, nbytes) if backend is not None else HostStorage(nbytes, _fd)
        except DriverError:
            raise
        except Exception as exc:  # allocation failures are device trouble
            raise DriverError(2, f"HardwareBuffer allocation of {nbytes} bytes failed: {exc}") from None
        self._lock_state = threading.Lock()
        self._locked: tuple[int, np.ndarray] | None = None
        log.debug("HardwareBuffer: %s %dx%dx%d (stride %d), %d bytes in %s", fmt.name, width, height, layers,
                  self._stride, nbytes, "host shared memory" if backend is None else f"{type(backend).__name__} memory")

    @classmethod
    def blob(cls, size: int, usage: int | None = None, *, device=None, backend=None) -> "HardwareBuffer":
        """A BLOB buffer of ``size`` bytes (AHardwareBuffer_Desc{width=size, height=1, layers=1})."""
        return cls(size, 1, 1, HardwareBufferFormat.BLOB, usage, device=device, backend=backend)

    @classmethod
    def from_bytes(cls, data, *, device=None, backend=None) -> "HardwareBuffer":
        """A BLOB holding ``data`` (written through the allocator, counted for device buffers)."""
        mv = byte_view(data)
        hb = cls.blob(max(mv.nbytes, 1), device=device, backend=backend)
        if mv.nbytes:
            hb._storage.write(0, mv)
        return hb

    # ---- description ------------------------------------------------------------------------------
    @property
    def kind(self) -> str:  # type: ignore[override]
        return "hardware_buffer_blob" if self.is_blob else "hardware_buffer"

    @property
    def is_blob(self) -> bool:
        return self._format == HardwareBufferFormat.BLOB

    @property
    def format(self) -> HardwareBufferFormat:
        return self._format

    @property
    def width(self) -> int:
        return self._width

    @property
    def height(self) -> int:
        return self._height

    @property
    def layers(self) -> int:
        return self._layers

    @property
    def stride(self) -> int:
        """Row stride in pixels (BLOB: the width)."""
        return self._stride

    @property
    def usage(self) -> int:
        return self._usage

    @property
    def size(self) -> int:
        return self._nbytes

    @property
    def backend(self):
        """The backend whose device memory holds the bytes (None = host shared memory)."""
        return self._storage.backend

    @property
    def device_buffer(self):
        """The backend's device buffer (None for host storage): what an accelerator binds to kernels."""
        return self._storage.handle

    def resides_on(self, backend) -> bool:
        return backend is not None and self._storage.backend is backend

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "size": self._nbytes, "width": self._width, "height": self._height,
                "layers": self._layers, "format": int(self._format), "usage": self._usage, "stride": self._stride}

    def fds(self) -> list[int]:
        return self._storage.fds()

    @property
    def writable(self) -> bool:
        return True

    # ---- driver-side access (the device reading/writing its own memory) ----------------------------
    def view(self) -> memoryview:
        """The bytes as a pool (BLOB only).  Host storage: a live view; device storage: a read-only
        snapshot read through the backend (counted).  Non-BLOB buffers cannot be mapped as pools."""
        from ..errors import invalid

        if not self.is_blob:
            raise invalid("a non-BLOB AHardwareBuffer can only be a whole execution input or output, "
                          "not a mapped pool (model constants, copies)")
        hv = self._storage.host_view()
        if hv is not None:
            return hv
        return memoryview(self._storage.read(0, self._nbytes)).toreadonly()

    def read(self, offset: int, length: int) -> bytes:
        self.check_range(offset, length)
        hv = self._storage.host_view()
        if hv is not None:
            return bytes(hv[offset:offset + length])
        return self._storage.read(offset, length).tobytes()

    def array(self, dtype, offset: int = 0, count: int = -1) -> np.ndarray:
        dtype, count = self._array_range(dtype, offset, count)
        hv = self._storage.host_view()
        if hv is not None:
            return np.frombuffer(hv, dtype=dtype, count=count, offset=offset)
        return np.frombuffer(self.read(offset, count * dtype.itemsize), dtype=dtype)

    def write(self, offset: int, data) -> None:
        mv = byte_view(data)
        self.check_range(offset, mv.nbytes)
        self._storage.write(offset, mv)

    # ---- CPU access -------------------------------------------------------------------------------
    def lock(self, usage: int = int(HardwareBufferUsage.CPU_READ_OFTEN | HardwareBufferUsage.CPU_WRITE_OFTEN)
             ) -> np.ndarray:
        """AHardwareBuffer_lock: a numpy uint8 view of the contents for CPU access.

        ``usage`` holds only CPU read/write flags, each allowed by the buffer's usage.  BLOB: shape
        ``(width,)``; images: ``(height, stride, bytes_per_pixel)`` (``(layers, …)`` first when
        layers > 1).  Read-only unless CPU write usage is requested.  INVALID_ARGUMENT for a bad usage
        or a buffer that is already locked.
        """
        from ..errors import invalid

        if isinstance(usage, bool) or not isinstance(usage, (int, np.integer)) or usage < 0:
            raise invalid(f"lock usage must be CPU usage flags, got {usage!r}")
        usage = int(usage)
        if usage & ~CPU_USAGE_MASK:
            raise invalid("lock usage may hold only CPU_READ_* / CPU_WRITE_* flags")
        if usage == 0:
            raise invalid("lock usage must request CPU read and/or write access")
        if usage & HardwareBufferUsage.CPU_READ_MASK and not self._usage & HardwareBufferUsage.CPU_READ_MASK:
            raise invalid("the buffer was not allocated with CPU read usage")
        if usage & HardwareBufferUsage.CPU_WRITE_MASK and not self._usage & HardwareBufferUsage.CPU_WRITE_MASK:
            raise invalid("the buffer was not allocated with CPU write usage")
        writable = bool(usage & HardwareBufferUsage.CPU_WRITE_MASK)
        with self._lock_state:
            if self._locked is not None:
                raise invalid("the HardwareBuffer is already locked")
            raw = self._storage.map(writable)
            self._locked = (usage, raw)
        arr = raw if self.is_blob else self._shape_image(raw)
        return arr

    def _shape_image(self, raw: np.ndarray) -> np.ndarray:
        bpp = BYTES_PER_PIXEL[self._format]
        shape = (self._height, self._stride, bpp)
        if self._layers > 1:
            shape = (self._layers, *shape)
        return raw.reshape(shape)

    def unlock(self) -> None:
        """AHardwareBuffer_unlock: CPU writes become visible to the device; the locked array stops
        being writable.  INVALID_ARGUMENT when the buffer is not locked."""
        from ..errors import invalid

        with self._lock_state:
            if self._locked is None:
                raise invalid("the HardwareBuffer is not locked")
            usage, raw = self._locked
            self._locked = None
            written = bool(usage & HardwareBufferUsage.CPU_WRITE_MASK)
            self._storage.unmap(raw, written)
            raw.flags.writeable = False

    @property
    def locked(self) -> bool:
        return self._locked is not None

    def close(self) -> None:
        self._storage.close()


def _from_description(d: dict) -> HardwareBuffer:
    fds = d.get("fds") or []
    if not fds:
        from ..errors import invalid

        raise invalid("a device-resident HardwareBuffer cannot cross a process boundary")
    return HardwareBuffer(int(d["width"]), int(d.get("height", 1)), int(d.get("layers", 1)),
                          int(d.get("format", HardwareBufferFormat.BLOB)), int(d.get("usage", DEFAULT_BLOB_USAGE)),
                          stride=int(d["stride"]) if int(d.get("format", 0x21)) != 0x21 else None, _fd=fds[0])


register_memory_kind("hardware_buffer_blob", _from_description)
register_memory_kind("hardware_buffer", _from_description)
