"""Device: the HAL IDevice base class and its argument checks.

The base class performs the argument checks every device shares and delegates the work to a few
hooks (``_prepare``, ``_support_list``, ``get_capabilities``).  Each device owns an allocator
(the storage of its driver-managed buffers) and the registry of those buffers' tokens.  Which
devices exist is gpu_driver.runtime.discovery's business.
"""
from __future__ import annotations

import abc
import threading
from typing import TYPE_CHECKING, Sequence

from ..cache import driver as cache
from ..errors import DriverError, failure, invalid, not_supported_yet
from ..hal.model import BufferDesc, BufferRole, Model
from ..ops.catalog import implemented_feature_level
from ..hal.types import (BYTE_SIZE_OF_CACHE_TOKEN, MAX_NUMBER_OF_CACHE_FILES, Capabilities, DeviceStatus, DeviceType,
                         ErrorStatus, ExecutionPreference, Extension, Priority, boot_time_ns)
from ..validation import validate_model
from .buffer_allocation import validate_allocation
from .buffer_registry import BufferRegistry
from .driver_buffer import DriverBuffer
from .execution_limits import check_deadline_argument
from .prepared_model import PreparedModel
from .scheduler import ExecutionScheduler

if TYPE_CHECKING:
    from ..compiler.artifact import CompiledModel

#: The feature level this driver reports and validates against: the highest one whose operations are
#: all implemented (ops.catalog.implemented_feature_level); 4 is NN HAL 1.3, 6 and 7 the AIDL v2/v3
#: operation sets.  Validation refuses whatever needs more.
FEATURE_LEVEL = implemented_feature_level()


class Device(abc.ABC):
    """A HAL device.  Public methods carry the HAL name of the call they implement."""

    #: device name as used by get_device(): "reference", "opencl:0", "cuda:0", …
    name: str = ""
    #: sort key for choosing the default device (higher is preferred)
    rank: int = 0
    #: whether prepared models go through the compilation cache: their ``cache_payload`` and this
    #: device's ``load_prepared`` (gpu_driver.cache.driver)
    caches_compilations: bool = False

    def __init__(self, allocator) -> None:
        """``allocator``: where this device's driver-managed buffers keep their bytes (a
        gpu_driver.backends.base.Allocator: alloc / view / upload / download / copy)."""
        self._lock = threading.Lock()
        self.allocator = allocator
        #: tokens of this device's live driver-managed buffers
        self.buffers = BufferRegistry()
        #: asynchronous work of this device's prepared models, by priority
        self.scheduler = ExecutionScheduler(self.name or type(self).__name__)

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
        """HAL ``getFeatureLevel``: :data:`FEATURE_LEVEL`."""
        return FEATURE_LEVEL

    def get_status(self) -> DeviceStatus:
        """HAL 1.0 ``getStatus``."""
        return DeviceStatus.AVAILABLE

    def get_supported_extensions(self) -> list[Extension]:
        """HAL ``getSupportedExtensions``: none."""
        return []

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """HAL ``getNumberOfCacheFilesNeeded``: (numModelCache, numDataCache); (0, 0) = no caching.

        A device that ``caches_compilations`` needs one model-cache file (model structure, binary,
        launch plan) and one data-cache file (packed constants).
        """
        return (1, 1) if self.caches_compilations else (0, 0)

    def get_supported_operations(self, model: Model) -> list[bool]:
        """HAL ``getSupportedOperations_1_3``: one bool per operation of the main subgraph."""
        validate_model(model, FEATURE_LEVEL)
        return self._support_list(model)

    @abc.abstractmethod
    def _support_list(self, model: Model) -> list[bool]:
        """For each operation of the validated ``model``'s main subgraph: whether this device runs it
        exactly as the model states it (types, ranks, params)."""

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
        prepare = lambda: self._prepare(model, preference, priority, deadline_ns, model_cache, data_cache, token)
        if model_cache or data_cache:  # HAL cache files: prepare, then save (a failed save is ignored)
            prepared = prepare()
            if self.caches_compilations:
                cache.save_to_cache(self, prepared, model, preference, model_cache, data_cache, token)
        elif cache.private_cache_enabled(self):  # no client cache: the driver-private blob store
            prepared = cache.private_prepare(self, model, preference, prepare)
        else:
            prepared = prepare()
        prepared.preference = preference
        prepared.priority = priority
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
        deadline_ns = check_deadline_argument(deadline)
        if not self.caches_compilations:
            raise not_supported_yet(f"prepare_model_from_cache on {self.name}")
        check_cache_arguments(self, model_cache, data_cache, token, exact=True)
        if deadline_ns is not None and boot_time_ns() > deadline_ns:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "the deadline had passed before preparation")
        return cache.load_from_cache(self, model_cache, data_cache, bytes(token))

    def load_prepared(self, compiled: CompiledModel, model: Model) -> PreparedModel:
        """Compilation cache (``prepareModelFromCache_1_3``): a prepared model of ``model`` from what a
        prepared model's ``cache_payload`` returned, without compiling.  Devices that
        ``caches_compilations`` implement it."""
        raise not_supported_yet(f"prepare_model_from_cache on {self.name}")

    # ---- memory domains ------------------------------------------------------------------------------
    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel],
                 input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]):
        """HAL ``allocate``: a driver-managed buffer for the given roles → (buffer, token).

        Validation of interface.md §6.1 (gpu_driver.runtime.buffer_allocation); the buffer's bytes live
        in this device's allocator (a backend device buffer for an accelerator, host memory for the
        reference device).
        """
        spec = validate_allocation(self, desc, prepared_models, input_roles, output_roles)
        token = self.buffers.new_token()
        try:
            buffer = DriverBuffer(self, spec, token)
        except DriverError:
            raise
        except Exception as exc:  # device allocation trouble
            raise failure(f"allocate: could not allocate the buffer on {self.name}: {exc}") from None
        self.buffers.add(buffer)
        return buffer, token

    def resolve_buffer_token(self, token: int) -> DriverBuffer:
        """The live driver buffer a request pool token names (INVALID_ARGUMENT if none)."""
        buffer = self.buffers.get(token)
        if buffer is None:
            raise invalid(f"memory-domain token {token!r} is not a live buffer of device {self.name}")
        return buffer

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
