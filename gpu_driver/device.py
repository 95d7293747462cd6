"""Device: the HAL IDevice, and device discovery (``get_devices`` / ``get_device``).

The base class performs the argument checks every device shares and delegates the work to a few
hooks (``_prepare``, ``_supports_operation``, ``_capabilities``).  Devices register a factory with
:func:`register_device_provider`; the reference device is always present, accelerator backends add
themselves when their runtime (PyOpenCL, CuPy) is importable and finds hardware.
"""
from __future__ import annotations

import abc
import threading
from typing import Callable, Iterable, Sequence

from .errors import DriverError, invalid, not_supported_yet
from .hal.model import BufferDesc, BufferRole, Model, Operation, Subgraph
from .hal.types import (BYTE_SIZE_OF_CACHE_TOKEN, MAX_NUMBER_OF_CACHE_FILES, Capabilities, DeviceStatus, DeviceType,
                        ErrorStatus, ExecutionPreference, Extension, OperationType, Priority, boot_time_ns)
from .hal.validation import validate_model
from .prepared_model import PreparedModel, check_deadline_argument

#: Our HAL interface version: feature level 4 (NN HAL 1.3).
FEATURE_LEVEL = 4


class Device(abc.ABC):
    """A HAL device.  Public methods carry the HAL name of the call they implement."""

    #: device name as used by get_device(): "reference", "opencl:0", "cuda:0", …
    name: str = ""
    #: sort key for choosing the default device (higher is preferred)
    rank: int = 0

    def __init__(self) -> None:
        self._lock = threading.Lock()

    # ---- queries -------------------------------------------------------------------------------------
    def get_name(self) -> str:
        """HAL ``getName``."""
        return self.name

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities:
        """HAL ``getCapabilities_1_3``: performance relative to the CPU reference (lower is better)."""

    @abc.abstractmethod
    def get_type(self) -> DeviceType:
        """HAL ``getType``."""

    @abc.abstractmethod
    def get_version_string(self) -> str:
        """HAL ``getVersionString``: unique per driver build and backend."""

    def get_feature_level(self) -> int:
        """HAL ``getFeatureLevel``: 4 (NN HAL 1.3)."""
        return FEATURE_LEVEL

    def get_status(self) -> DeviceStatus:
        """HAL 1.0 ``getStatus``."""
        return DeviceStatus.AVAILABLE

    def get_supported_extensions(self) -> list[Extension]:
        """HAL ``getSupportedExtensions``: none."""
        return []

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """HAL ``getNumberOfCacheFilesNeeded``: (numModelCache, numDataCache); (0, 0) = no caching.

        A device caches when it implements ``load_prepared`` (and its prepared models
        ``cache_payload``, see gpu_driver.cache.driver): one model-cache file (model structure, binary,
        launch plan) and one data-cache file (packed constants).
        """
        from .cache.driver import supports_caching

        return (1, 1) if supports_caching(self) else (0, 0)

    def get_supported_operations(self, model: Model) -> list[bool]:
        """HAL ``getSupportedOperations_1_3``: one bool per operation of the main subgraph."""
        validate_model(model, FEATURE_LEVEL)
        return self._support_list(model)

    def _support_list(self, model: Model) -> list[bool]:
        return [self._supports(model, model.main, op) for op in model.main.operations]

    def _supports(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        if op.type in (OperationType.IF, OperationType.WHILE):
            inputs = [subgraph.operands[i] for i in op.inputs]
            branches = [inputs[1], inputs[2]] if op.type == OperationType.IF else [inputs[0], inputs[1]]
            if not self.supports_control_flow():
                return False
            for b in branches:
                sg = model.referenced[b.location.offset]
                if not all(self._supports(model, sg, inner) for inner in sg.operations):
                    return False
            return True
        try:
            return bool(self._supports_operation(model, subgraph, op))
        except DriverError:
            return False

    def supports_control_flow(self) -> bool:
        return True

    @abc.abstractmethod
    def _supports_operation(self, model: Model, subgraph: Subgraph, op: Operation) -> bool:
        """Whether this device runs ``op`` exactly as the model states it (types, ranks, params)."""

    # ---- preparation ---------------------------------------------------------------------------------
    def prepare_model(self, model: Model, preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority = Priority.MEDIUM, deadline: int | None = None,
                      model_cache: Sequence = (), data_cache: Sequence = (),
                      token: bytes | None = None) -> PreparedModel:
        """HAL ``prepareModel_1_3``: validate, plan, compile; return a PreparedModel.

        ``deadline`` is ns on the boot clock (hal.boot_time_ns); ``model_cache``/``data_cache`` are
        empty or exactly get_number_of_cache_files_needed() open files; ``token`` is 32 bytes.
        """
        preference, priority = check_preference_priority(preference, priority)
        deadline_ns = check_deadline_argument(deadline)
        check_cache_arguments(self, model_cache, data_cache, token, exact=False)
        validate_model(model, FEATURE_LEVEL)
        if deadline_ns is not None and boot_time_ns() > deadline_ns:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "the deadline had passed before preparation")
        unsupported = [i for i, ok in enumerate(self._support_list(model)) if not ok]
        if unsupported:
            names = ", ".join(f"{i} ({model.main.operations[i].type.name})" for i in unsupported[:8])
            raise invalid(f"device {self.name} cannot run operation(s) {names}")
        from .cache import driver as cache

        prepare = lambda: self._prepare(model, preference, priority, deadline_ns, model_cache, data_cache, token)
        if model_cache or data_cache:  # HAL cache files: prepare, then save (a failed save is ignored)
            prepared = prepare()
            if cache.supports_caching(self):
                cache.save_to_cache(self, prepared, model, preference, model_cache, data_cache, token)
        elif cache.private_cache_enabled(self):  # no client cache: the driver-private blob store
            prepared = cache.private_prepare(self, model, preference, prepare)
        else:
            prepared = prepare()
        prepared.preference = preference
        return prepared

    @abc.abstractmethod
    def _prepare(self, model: Model, preference: ExecutionPreference, priority: Priority, deadline_ns: int | None,
                 model_cache: Sequence, data_cache: Sequence, token: bytes | None) -> PreparedModel:
        """Do the device-specific preparation of a validated, supported model."""

    def prepare_model_from_cache(self, model_cache: Sequence, data_cache: Sequence, token: bytes,
                                 deadline: int | None = None) -> PreparedModel:
        """HAL ``prepareModelFromCache_1_3``: rebuild a prepared model from the cache files, no compiling.

        INVALID_ARGUMENT for malformed arguments (counts, token, handles); GENERAL_FAILURE when the
        device does not cache or the cache is missing, tampered, swapped or stale (gpu_driver.cache.driver).
        """
        from .cache import driver as cache

        deadline_ns = check_deadline_argument(deadline)
        if not cache.supports_caching(self):
            raise not_supported_yet(f"prepare_model_from_cache on {self.name}")
        check_cache_arguments(self, model_cache, data_cache, token, exact=True)
        if deadline_ns is not None and boot_time_ns() > deadline_ns:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "the deadline had passed before preparation")
        return cache.load_from_cache(self, model_cache, data_cache, bytes(token))

    # ---- memory domains ------------------------------------------------------------------------------
    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel],
                 input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]):
        """HAL ``allocate``: a driver-managed buffer for the given roles → (buffer, token).

        Validation of interface.md §6.1 (gpu_driver.memory_domain); the buffer lives on this device
        (a backend device buffer for an accelerator, host memory for the reference device).
        """
        from . import memory_domain

        return memory_domain.allocate(self, desc, prepared_models, input_roles, output_roles)

    def resolve_buffer_token(self, token: int):
        """The live driver buffer a request pool token names (INVALID_ARGUMENT if none)."""
        from . import memory_domain

        return memory_domain.resolve(self, token)

    def read_buffer_token(self, token: int):
        """The current value of the driver buffer ``token`` names, as a host array."""
        return self.resolve_buffer_token(token).read_value()

    def write_buffer_token(self, token: int, value) -> None:
        """Store an execution output into the driver buffer ``token`` names (marks it initialized)."""
        self.resolve_buffer_token(token).write_value(value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def check_preference_priority(preference, priority) -> tuple[ExecutionPreference, Priority]:
    try:
        preference = ExecutionPreference(preference)
    except (ValueError, TypeError):
        raise invalid(f"unknown execution preference {preference!r}") from None
    try:
        priority = Priority(priority)
    except (ValueError, TypeError):
        raise invalid(f"unknown priority {priority!r}") from None
    return preference, priority


def check_cache_arguments(device: Device, model_cache: Sequence, data_cache: Sequence, token,
                          exact: bool) -> None:
    """Cache handle vectors: empty or the advertised count (exact=True: always the count)."""
    if not isinstance(model_cache, (list, tuple)) or not isinstance(data_cache, (list, tuple)):
        raise invalid("model_cache and data_cache must be sequences of open files or descriptors")
    n_model, n_data = device.get_number_of_cache_files_needed()
    for what, files, needed in (("model_cache", model_cache, n_model), ("data_cache", data_cache, n_data)):
        if len(files) > MAX_NUMBER_OF_CACHE_FILES:
            raise invalid(f"{what}: {len(files)} files exceed the maximum {MAX_NUMBER_OF_CACHE_FILES}")
        if (exact or files) and len(files) != needed:
            raise invalid(f"{what}: {len(files)} files given, the device needs {needed}")
    if model_cache or data_cache or exact:
        if not isinstance(token, (bytes, bytearray)) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            raise invalid(f"token must be {BYTE_SIZE_OF_CACHE_TOKEN} bytes")


# ---- discovery ---------------------------------------------------------------------------------------
_PROVIDERS: list[Callable[[], Iterable[Device]]] = []
_DEVICES: list[Device] | None = None
_DISCOVERY_LOCK = threading.Lock()


def register_device_provider(provider: Callable[[], Iterable[Device]]) -> None:
    """Add a function that returns the devices of one backend (called once, lazily)."""
    global _DEVICES
    _PROVIDERS.append(provider)
    _DEVICES = None


def get_devices() -> list[Device]:
    """All devices this driver exposes, best first (the NNAPI runtime's device list)."""
    global _DEVICES
    with _DISCOVERY_LOCK:
        if _DEVICES is None:
            found: list[Device] = []
            for provider in _PROVIDERS:
                try:
                    found.extend(provider())
                except Exception:  # a backend whose runtime is missing or broken contributes nothing
                    continue
            found.sort(key=lambda d: -d.rank)
            _DEVICES = found
        return list(_DEVICES)


def get_device(name: str | None = None) -> Device:
    """A device by name ("reference", "opencl", "opencl:1", "cuda", "cuda:0"); default: the best one.

    A bare backend name ("opencl", "cuda") picks that backend's best device.
    """
    devices = get_devices()
    if name is None:
        return devices[0]
    if not isinstance(name, str):
        raise invalid(f"device name must be a string, got {name!r}")
    for d in devices:
        if d.name == name:
            return d
    if ":" not in name:
        for d in devices:
            if d.name.split(":")[0] == name:
                return d
    raise DriverError(ErrorStatus.DEVICE_UNAVAILABLE,
                      f"no device named {name!r}; available: {', '.join(d.name for d in devices)}")
