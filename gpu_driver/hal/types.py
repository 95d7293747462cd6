"""NN HAL 1.3 vocabulary: enums with NNAPI's numeric codes, constants, and the small result records.

Names follow the canonical (``nn::``) form of the HAL; see shared/spec/interface.md §1 and
operands.md §1.  Model- and request-shaped records live in :mod:`gpu_driver.hal.model`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

BYTE_SIZE_OF_CACHE_TOKEN = 32
MAX_NUMBER_OF_CACHE_FILES = 32
UINT64_MAX = 2**64 - 1
UINT32_MAX = 2**32 - 1
FLT_MAX = float(np.finfo(np.float32).max)
LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000
INVALID_BUFFER_TOKEN = 0


class OperandType(enum.IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15
    OEM = 10000
    TENSOR_OEM_BYTE = 10001


@dataclass(frozen=True)
class OperandTypeInfo:
    """Static facts about an operand type (operands.md §1)."""

    byte_size: int
    is_tensor: bool
    dtype: np.dtype | None
    feature_level: int
    quant_range: tuple[int, int] | None = None  # (qmin, qmax) for quantized tensor types


OPERAND_TYPE_INFO: dict[OperandType, OperandTypeInfo] = {
    OperandType.FLOAT32: OperandTypeInfo(4, False, np.dtype(np.float32), 1),
    OperandType.INT32: OperandTypeInfo(4, False, np.dtype(np.int32), 1),
    OperandType.UINT32: OperandTypeInfo(4, False, np.dtype(np.uint32), 1),
    OperandType.TENSOR_FLOAT32: OperandTypeInfo(4, True, np.dtype(np.float32), 1),
    OperandType.TENSOR_INT32: OperandTypeInfo(4, True, np.dtype(np.int32), 1),
    OperandType.TENSOR_QUANT8_ASYMM: OperandTypeInfo(1, True, np.dtype(np.uint8), 1, (0, 255)),
    OperandType.BOOL: OperandTypeInfo(1, False, np.dtype(np.bool_), 3),
    OperandType.TENSOR_QUANT16_SYMM: OperandTypeInfo(2, True, np.dtype(np.int16), 3, (-32768, 32767)),
    OperandType.TENSOR_FLOAT16: OperandTypeInfo(2, True, np.dtype(np.float16), 3),
    OperandType.TENSOR_BOOL8: OperandTypeInfo(1, True, np.dtype(np.bool_), 3),
    OperandType.FLOAT16: OperandTypeInfo(2, False, np.dtype(np.float16), 3),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: OperandTypeInfo(1, True, np.dtype(np.int8), 3, (-128, 127)),
    OperandType.TENSOR_QUANT16_ASYMM: OperandTypeInfo(2, True, np.dtype(np.uint16), 3, (0, 65535)),
    OperandType.TENSOR_QUANT8_SYMM: OperandTypeInfo(1, True, np.dtype(np.int8), 3, (-128, 127)),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: OperandTypeInfo(1, True, np.dtype(np.int8), 4, (-128, 127)),
    OperandType.SUBGRAPH: OperandTypeInfo(0, False, None, 4),
    OperandType.OEM: OperandTypeInfo(0, False, None, 1),
    OperandType.TENSOR_OEM_BYTE: OperandTypeInfo(1, True, np.dtype(np.uint8), 1),
}


def type_info(t: int) -> OperandTypeInfo:
    return OPERAND_TYPE_INFO[OperandType(t)]


class OperationType(enum.IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102
    PACK = 103
    MIRROR_PAD = 104
    REVERSE = 105
    OEM_OPERATION = 10000
    DENSIFY = 20000  # experimental (operations.md App. A): only with GPU_DRIVER_EXPERIMENTAL=1


#: the level of experimental operation codes (AOSP's ANEURALNETWORKS_FEATURE_LEVEL_EXPERIMENTAL):
#: above every released level, never reported by the driver; validation admits them only when
#: experimental features are switched on (gpu_driver.validation)
FEATURE_LEVEL_EXPERIMENTAL = 0x7FFFFFFF


def operation_feature_level(op: OperationType) -> int:
    """Feature level at which an operation code first appeared (operations.md index)."""
    code = int(op)
    if op == OperationType.DENSIFY:
        return FEATURE_LEVEL_EXPERIMENTAL
    if code <= 28:
        return 1
    if code <= 37:
        return 2
    if code <= 94:
        return 3
    if code <= 101:
        return 4
    if code <= 103:
        return 6
    if code <= 105:
        return 7
    return 1  # OEM_OPERATION


class OperandLifeTime(enum.IntEnum):
    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6
    POINTER = 7


class ErrorStatus(enum.IntEnum):
    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8
    DEAD_OBJECT = 10000


class ExecutionPreference(enum.IntEnum):
    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class Priority(enum.IntEnum):
    LOW = 0
    MEDIUM = 1
    HIGH = 2


class DeviceType(enum.IntEnum):
    UNKNOWN = 0
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class DeviceStatus(enum.IntEnum):
    AVAILABLE = 0
    BUSY = 1
    OFFLINE = 2
    UNKNOWN = 3


class MeasureTiming(enum.IntEnum):
    NO = 0
    YES = 1


class FusedActivationFunc(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingCode(enum.IntEnum):
    SAME = 1
    VALID = 2


@dataclass
class OutputShape:
    """HAL 1.2 OutputShape: the actual dimensions of one output and whether its buffer sufficed."""

    dimensions: list[int]
    is_sufficient: bool = True


@dataclass
class Timing:
    """HAL 1.2 Timing, in microseconds; ``UINT64_MAX`` means not available.

    Shown with units: ``Timing(time_on_device=812 µs, time_in_driver=unavailable)``; ``str`` gives
    ``on device 812 µs, in driver unavailable``.
    """

    time_on_device: int = UINT64_MAX
    time_in_driver: int = UINT64_MAX

    @staticmethod
    def _show(us: int) -> str:
        return "unavailable" if us == UINT64_MAX else f"{us} µs"

    def __repr__(self) -> str:
        return (f"Timing(time_on_device={self._show(self.time_on_device)}, "
                f"time_in_driver={self._show(self.time_in_driver)})")

    def __str__(self) -> str:
        return f"on device {self._show(self.time_on_device)}, in driver {self._show(self.time_in_driver)}"


NO_TIMING = Timing()


@dataclass(frozen=True)
class PerformanceInfo:
    """Ratio to the CPU reference doing the same work; lower is better, both > 0."""

    exec_time: float = FLT_MAX
    power_usage: float = FLT_MAX


@dataclass(frozen=True)
class OperandPerformance:
    type: OperandType
    info: PerformanceInfo


@dataclass
class Capabilities:
    """HAL 1.3 Capabilities (interface.md §3.1)."""

    relaxed_float32_to_float16_performance_scalar: PerformanceInfo
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo
    operand_performance: list[OperandPerformance]
    if_performance: PerformanceInfo
    while_performance: PerformanceInfo

    def performance_of(self, t: OperandType) -> PerformanceInfo:
        for entry in self.operand_performance:
            if entry.type == t:
                return entry.info
        return PerformanceInfo()


@dataclass(frozen=True)
class ExtensionOperandTypeInformation:
    type: int
    is_tensor: bool
    byte_size: int


@dataclass(frozen=True)
class Extension:
    name: str
    operand_types: tuple[ExtensionOperandTypeInformation, ...] = field(default_factory=tuple)


def boot_time_ns() -> int:
    """Now on the boot clock, the epoch of HAL deadlines (OptionalTimePoint, ns)."""
    import time

    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)
