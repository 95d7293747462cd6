"""The operation registry: one :class:`OperationDef` per operation code, filled by the family modules.

Everything the driver knows about an operation is reached from here: validation applies
``signature``, every consumer calls ``define`` for the decoded parameters, the reference device runs
``reference``, and the compiler lowers with ``lower`` where ``supports`` agrees.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..hal.types import OperationType
from .definition import OpParams, TensorInfo
from .signature import OpSignature

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.ir import DataDependentKernel
    from ..compiler.lowering import LoweringContext

Definition = Callable[[list[TensorInfo], list[TensorInfo]], OpParams]
#: ``fn(params, inputs, outputs) -> one array per output``: ``inputs`` carry the actual data in
#: ``value`` (None for an omitted input); raises DriverError(GENERAL_FAILURE) for bad data
ReferenceKernel = Callable[[OpParams, list[TensorInfo], list[TensorInfo]], list[np.ndarray]]
#: ``fn(ctx)``: emits the node's kernel launches through ``ctx.emit`` (gpu_driver.compiler.lowering)
Lowering = Callable[["LoweringContext"], None]
#: ``fn(ctx) -> bool``: whether the lowering runs this node exactly as stated (must be truthful)
SupportPredicate = Callable[["LoweringContext"], bool]
#: ``fn(inputs, outputs) -> DataDependentKernel | None``: the launch of an operation whose output sizes
#: depend on the data, for these operands (shapes known, scalars constant); None when its kernel does
#: not run them (accelerators run such an operation as a step of its own, accelerator.control_flow)
DataDependentLowering = Callable[[list[TensorInfo], list[TensorInfo]], "DataDependentKernel | None"]
#: ``fn(ctx) -> bool``: whether the lowering can add a float tensor of the output's shape, given as the
#: node's last input, to its result before the fused activation (compiler/fusion.py fuses an ADD)
ResidualPredicate = Callable[["LoweringContext"], bool]
#: ``fn(inputs) -> index``: the input holding the fused activation code, None when there is none
FusedActivationInput = Callable[[list[TensorInfo]], "int | None"]
#: (inputs, outputs) -> the multiply-adds of one execution, for operations whose arithmetic outgrows
#: the elements they move (compiler/cost.py); called with every shape known
MultiplyAdds = Callable[[list[TensorInfo], list[TensorInfo]], int]


@dataclass(frozen=True)
class OperationDef:
    """Everything about one operation."""

    type: OperationType
    signature: OpSignature
    define: Definition
    reference: ReferenceKernel
    lower: Lowering | None = None
    supports: SupportPredicate | None = None
    #: device features the lowering's kernels need (e.g. "fp64"; see the backends' ``features``)
    requires: frozenset = frozenset()
    fused_activation_input: FusedActivationInput | None = None
    #: inputs whose *values* (not only shapes) the definition reads: tensor arguments such as paddings,
    #: axes, a target shape or slice bounds; when one is a model input, accelerators specialise the
    #: kernels on its value at execution
    value_inputs: tuple[int, ...] = ()
    data_dependent: DataDependentLowering | None = None
    multiply_adds: MultiplyAdds | None = None
    accepts_residual: ResidualPredicate | None = None
    #: the node can scale its input 0's channels by a vector (compiler/fusion.py fuse_input_scales)
    accepts_input_scale: ResidualPredicate | None = None
    #: the node can apply a PRELU by a vector along its output's channels after its activation
    #: (compiler/fusion.py fuse_prelus)
    accepts_prelu: ResidualPredicate | None = None
    #: the node can read its NHWC input 0 without a PAD of zero rows and columns in front of it, the
    #: PAD's amounts added to its own explicit padding (compiler/fusion.py fold_spatial_pads)
    accepts_zero_pad: ResidualPredicate | None = None
    #: the node (a GEMM) can compute a depthwise convolution producing its input 0 itself
    #: (compiler/fusion.py fuse_depthwise_inputs)
    accepts_depthwise_input: ResidualPredicate | None = None
    #: the node (a depthwise convolution) can be computed by a GEMM reading its output
    fuses_into_gemm: ResidualPredicate | None = None


REGISTRY: dict[OperationType, OperationDef] = {}


def operation(op_type: OperationType, *, signature: OpSignature, reference: ReferenceKernel,
              lower: Lowering | None = None, supports: SupportPredicate | None = None,
              requires: Sequence[str] = (), fused_activation_input: FusedActivationInput | None = None,
              value_inputs: Sequence[int] = (), data_dependent: DataDependentLowering | None = None,
              multiply_adds: MultiplyAdds | None = None, accepts_residual: ResidualPredicate | None = None,
              accepts_input_scale: ResidualPredicate | None = None, accepts_prelu: ResidualPredicate | None = None,
              accepts_zero_pad: ResidualPredicate | None = None,
              accepts_depthwise_input: ResidualPredicate | None = None,
              fuses_into_gemm: ResidualPredicate | None = None):
    """Register the decorated definition of ``op_type`` with the rest of what the driver knows of it.

    Stack one decorator per operation code when several share a definition."""

    def register(define: Definition) -> Definition:
        if op_type in REGISTRY:
            raise ValueError(f"{op_type.name} is registered twice")
        REGISTRY[op_type] = OperationDef(op_type, signature, define, reference, lower, supports,
                                         frozenset(requires), fused_activation_input, tuple(value_inputs),
                                         data_dependent, multiply_adds, accepts_residual, accepts_input_scale,
                                         accepts_prelu, accepts_zero_pad, accepts_depthwise_input,
                                         fuses_into_gemm)
        return define

    return register
