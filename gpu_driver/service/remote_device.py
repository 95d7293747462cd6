"""RemoteDevice and RemoteBuffer: a server's device and its driver-managed buffers, seen from a client.

:class:`RemoteDevice` is a :class:`~gpu_driver.runtime.device.Device`: queries answer from what the
server sent at connection; ``get_supported_operations``, ``prepare_model``,
``prepare_model_from_cache`` and ``allocate`` run on the server.  Models travel through
:mod:`gpu_driver.hal.serialize` (their pools as descriptors), cache files as descriptors.
"""
from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np

from ..cache.files import handle_fd
from ..errors import invalid
from ..hal import serialize
from ..hal.model import BufferDesc, BufferRole, Model
from ..hal.types import (Capabilities, DeviceStatus, DeviceType, ExecutionPreference, Priority)
from ..memory import Memory
from ..runtime.device import Device, check_cache_arguments, check_preference_priority
from . import codec
from .remote_prepared_model import RemotePreparedModel


def _pack_model(model: Model) -> tuple[bytes, list[int]]:
    if not isinstance(model, Model):
        raise invalid(f"expected a Model, got {type(model).__name__}")
    try:
        return serialize.pack(model)
    except (TypeError, ValueError, OverflowError) as exc:
        raise invalid(f"the model cannot be sent to the driver service: {exc}") from None


class RemoteDevice(Device):
    """A device of a driver service (see the module docstring)."""

    def __init__(self, connection, index: int, info: tuple) -> None:
        super().__init__(allocator=None)
        self.connection = connection
        self.index = index
        name, device_type, version, feature_level, capabilities, cache_files, rank = info
        self.name = name
        self.rank = rank
        self._type = DeviceType(device_type)
        self._version = version
        self._feature_level = feature_level
        self._capabilities: Capabilities = codec.decode_capabilities(capabilities)
        self._cache_files = tuple(cache_files)
        self.caches_compilations = self._cache_files != (0, 0)

    # ---- queries ------------------------------------------------------------------------------------------
    def get_capabilities(self) -> Capabilities:
        """HAL ``getCapabilities_1_3`` of the server's device."""
        return self._capabilities

    def get_type(self) -> DeviceType:
        """HAL ``getType``."""
        return self._type

    def get_version_string(self) -> str:
        """HAL ``getVersionString``."""
        return self._version

    def get_feature_level(self) -> int:
        """HAL ``getFeatureLevel``."""
        return self._feature_level

    def get_status(self) -> DeviceStatus:
        """HAL ``getStatus``: AVAILABLE while connected (DEAD_OBJECT once the service is gone)."""
        self.connection.check_alive()
        return DeviceStatus.AVAILABLE

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """HAL ``getNumberOfCacheFilesNeeded``."""
        return self._cache_files

    def get_supported_operations(self, model: Model) -> list[bool]:
        """HAL ``getSupportedOperations_1_3``, answered by the server."""
        data, fds = _pack_model(model)
        return list(self.connection.call("supported", lambda out: (self.index, data, _attach(out, fds))))

    def _support_list(self, model: Model) -> list[bool]:
        return self.get_supported_operations(model)

    # ---- preparation ----------------------------------------------------------------------------------------
    def prepare_model(self, model: Model, preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority = Priority.MEDIUM, deadline: int | None = None,
                      model_cache: Sequence = (), data_cache: Sequence = (),
                      token: bytes | None = None) -> RemotePreparedModel:
        """HAL ``prepareModel_1_3`` on the server's device; cache files are sent as descriptors."""
        preference, priority = check_preference_priority(preference, priority)
        check_cache_arguments(self, model_cache, data_cache, token, exact=False)
        cache_fds = [handle_fd(h) for h in (*model_cache, *data_cache)]
        data, fds = _pack_model(model)

        def args(out):
            n = _attach(out, fds)
            out.fds.extend(cache_fds)
            return (self.index, data, n, int(preference), int(priority), deadline, len(model_cache), len(data_cache),
                    bytes(token) if token is not None else None)

        return self._prepared(self.connection.call("prepare", args), model)

    def prepare_model_from_cache(self, model_cache: Sequence, data_cache: Sequence, token: bytes,
                                 deadline: int | None = None) -> RemotePreparedModel:
        """HAL ``prepareModelFromCache_1_3`` on the server's device, from the client's cache files.  The
        prepared model's ``model`` holds the inputs and outputs only (what requests need): the
        operations and constants stay on the server."""
        check_cache_arguments(self, model_cache, data_cache, token, exact=True)
        cache_fds = [handle_fd(h) for h in (*model_cache, *data_cache)]

        def args(out):
            out.fds.extend(cache_fds)
            return self.index, len(model_cache), len(data_cache), bytes(token), deadline

        return self._prepared(self.connection.call("prepare_from_cache", args), None)

    def _prepared(self, reply, model: Model | None) -> RemotePreparedModel:
        handle, io_model, known_shapes, preference, priority = reply
        prepared = RemotePreparedModel(self, model if model is not None else serialize.unpack(io_model), handle,
                                       [None if s is None else tuple(s) for s in known_shapes])
        prepared.preference = ExecutionPreference(preference)
        prepared.priority = Priority(priority)
        return prepared

    def _prepare(self, *args):  # pragma: no cover - prepare_model is served remotely
        raise NotImplementedError

    # ---- memory domains ------------------------------------------------------------------------------------
    def allocate(self, desc: BufferDesc, prepared_models: Sequence, input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]):
        """HAL ``allocate`` on the server's device → (RemoteBuffer, token)."""
        if not isinstance(desc, BufferDesc):
            raise invalid("allocate: desc must be a BufferDesc")
        if not isinstance(prepared_models, (list, tuple)):
            raise invalid("allocate: prepared_models must be a list")
        handles = []
        for pm in prepared_models:
            if not isinstance(pm, RemotePreparedModel) or pm.device.connection is not self.connection:
                raise invalid(f"allocate: {pm!r} is not a prepared model of this driver service connection")
            handles.append(pm.handle)

        def roles(rs, what):
            if not isinstance(rs, (list, tuple)) or not all(isinstance(r, BufferRole) for r in rs):
                raise invalid(f"allocate: {what} must be a list of BufferRole")
            return tuple((r.model_index, r.io_index, r.probability) for r in rs)

        handle, token = self.connection.call("allocate", (self.index, tuple(desc.dimensions), tuple(handles),
                                                          roles(input_roles, "input_roles"),
                                                          roles(output_roles, "output_roles")))
        buffer = RemoteBuffer(self, handle, token)
        self.buffers.add(buffer)  # resolve_buffer_token answers while the client holds it, as locally
        return buffer, token


def _attach(out, fds: list[int]) -> int:
    """Append a serialized model's descriptors (they come first in the call's descriptors); their count."""
    out.fds.extend(fds)
    return len(fds)


def _pool_or_none(out, memory):
    """The number of a pool that crosses; None for anything else (the server's rules refuse it)."""
    return out.pool(memory) if isinstance(memory, Memory) else None


class RemoteBuffer:
    """A driver-managed buffer (HAL ``IBuffer``) on the server; requests name it by :attr:`token`."""

    def __init__(self, device: RemoteDevice, handle: int, token: int) -> None:
        self.device = device
        self.handle = handle
        self._token = token
        weakref.finalize(self, device.connection.release_handle, handle)

    def get_token(self) -> int:
        """HAL ``IBuffer`` token."""
        return self._token

    @property
    def token(self) -> int:
        return self._token

    def _info(self) -> tuple:
        return self.device.connection.call("buffer_info", (self.handle,))

    @property
    def initialized(self) -> bool:
        """Whether the buffer holds a value (asked of the server, as the next three)."""
        return self._info()[0]

    @property
    def dimensions(self) -> tuple[int, ...]:
        """The current dimensions."""
        return tuple(self._info()[1])

    @property
    def nbytes(self) -> int | None:
        """Byte size of the current value (None while its shape is unknown)."""
        return self._info()[2]

    @property
    def is_tensor(self) -> bool:
        return self._info()[3]

    def copy_to(self, dst: Memory) -> None:
        """HAL ``IBuffer::copyTo``: the whole value into ``dst`` (mapped by the server, no copy through the
        socket).  The server applies every rule (a ``dst`` that is no pool: GENERAL_FAILURE)."""
        self.device.connection.call("copy_to", lambda out: (self.handle, out.new_pools, _pool_or_none(out, dst)))

    def copy_from(self, src: Memory, dimensions: Sequence[int] = ()) -> None:
        """HAL ``IBuffer::copyFrom``: replace the value with ``src``'s bytes, of shape ``dimensions``; the
        server applies every rule (and leaves the buffer uninitialized when one fails)."""
        dims = [int(d) if isinstance(d, np.integer) else d for d in dimensions] \
            if isinstance(dimensions, (list, tuple)) else None
        self.device.connection.call("copy_from", lambda out: (self.handle, out.new_pools, _pool_or_none(out, src),
                                                              dims))

    def __repr__(self) -> str:
        return f"<RemoteBuffer token={self._token} on {self.device.name}>"
