"""The NN HAL 1.3 vocabulary: types, records and serialization (validation: gpu_driver.validation)."""
from .model import (BufferDesc, BufferRole, DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation,
                    Request, RequestArgument, Subgraph, SymmPerChannelQuantParams)
from .types import (BYTE_SIZE_OF_CACHE_TOKEN, FLT_MAX, LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS,
                    MAX_NUMBER_OF_CACHE_FILES, NO_TIMING, OPERAND_TYPE_INFO, UINT64_MAX, Capabilities, DeviceStatus,
                    DeviceType, ErrorStatus, ExecutionPreference, Extension, ExtensionOperandTypeInformation,
                    FusedActivationFunc, MeasureTiming, OperandLifeTime, OperandPerformance, OperandType,
                    OperandTypeInfo, OperationType, OutputShape, PaddingCode, PerformanceInfo, Priority, Timing,
                    boot_time_ns, type_info)

__all__ = [name for name in dir() if not name.startswith("_")]
