"""Allocation checks of ``IDevice::allocate``: every rule of interface.md §6.1, shared by all devices."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import failure, invalid
from ..hal.model import BufferDesc, BufferRole, SymmPerChannelQuantParams
from ..hal.types import OPERAND_TYPE_INFO, OperandType
from ..validation import byte_size
from .buffer_spec import MAX_DRIVER_BUFFER_BYTES, BufferSpec, fully_specified, merge_dims
from .prepared_model import PreparedModel


def _same_extra(a, b) -> bool:
    if isinstance(a, SymmPerChannelQuantParams) or isinstance(b, SymmPerChannelQuantParams):
        if not (isinstance(a, SymmPerChannelQuantParams) and isinstance(b, SymmPerChannelQuantParams)):
            return False
        return a.channel_dim == b.channel_dim and list(a.scales) == list(b.scales)
    return True  # extension params (bytes) are not compared; None == None


def validate_allocation(device, desc: BufferDesc, prepared_models: Sequence[PreparedModel],
                        input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]) -> BufferSpec:
    """Apply every allocate rule of interface.md §6.1; INVALID_ARGUMENT for a violation, GENERAL_FAILURE
    for a property this driver cannot honour (extension/OEM types, a buffer too large)."""
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
            dims = merge_dims(dims, operand.dimensions)
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
