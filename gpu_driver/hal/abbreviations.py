"""The spec's operand-type abbreviations (shared/spec/operands.md, top table), for code that lists
type configurations: upper case for tensor types, lower case for scalars."""
from .types import OperandType

F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
Q8A = OperandType.TENSOR_QUANT8_ASYMM
Q8AS = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
Q8S = OperandType.TENSOR_QUANT8_SYMM
PC8 = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
Q16S = OperandType.TENSOR_QUANT16_SYMM
Q16A = OperandType.TENSOR_QUANT16_ASYMM
B8 = OperandType.TENSOR_BOOL8
f32 = OperandType.FLOAT32
f16 = OperandType.FLOAT16
i32 = OperandType.INT32
u32 = OperandType.UINT32
BOOL = OperandType.BOOL
SUBG = OperandType.SUBGRAPH
