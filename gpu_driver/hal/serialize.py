"""Lossless msgpack encoding of models and requests (for the out-of-process driver service).

``pack(obj) -> (bytes, fds)``: memory pools are written as descriptions whose file descriptors are
listed out of band in ``fds`` (to travel over a Unix socket with SCM_RIGHTS); ``unpack(data, fds)``
rebuilds the objects, mapping the given descriptors.  Version-tagged: a payload of another format
version is refused with INVALID_ARGUMENT.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

import msgpack

from . import model as m
from .types import OperandLifeTime, OperandType, OperationType

FORMAT_VERSION = 1

_RECORDS = {cls.__name__: cls for cls in (
    m.DataLocation, m.SymmPerChannelQuantParams, m.Operand, m.Operation, m.Subgraph,
    m.ExtensionNameAndPrefix, m.Model, m.RequestArgument, m.Request, m.BufferDesc, m.BufferRole)}
_ENUM_FIELDS = {("Operand", "type"): OperandType, ("Operand", "lifetime"): OperandLifeTime,
                ("Operation", "type"): OperationType}


def _encode(obj: Any, fds: list[int]) -> Any:
    from ..memory import Memory

    if isinstance(obj, Memory):
        desc = obj.describe()
        desc["fds"] = [len(fds) + i for i in range(len(obj.fds()))]
        fds.extend(obj.fds())
        return {"__memory__": desc}
    if is_dataclass(obj):
        out = {"__record__": type(obj).__name__}
        for f in fields(obj):
            out[f.name] = _encode(getattr(obj, f.name), fds)
        return out
    if isinstance(obj, (list, tuple)):
        return [_encode(v, fds) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, float)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__}")


_PLAIN = (int, float, str, bytes, bool, type(None))
#: record name -> {field: enum type} for the fields that hold enums
_ENUMS_OF = {}
for (_record, _field), _enum in _ENUM_FIELDS.items():
    _ENUMS_OF.setdefault(_record, {})[_field] = _enum


def _decode(obj: Any, fds: list[int], memory_from_description) -> Any:
    if isinstance(obj, list):
        if not obj or isinstance(obj[0], _PLAIN):
            return obj  # a list of plain values (dimensions, indexes, scales): nothing to rebuild
        return [_decode(v, fds, memory_from_description) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__memory__" in obj:
        desc = dict(obj["__memory__"])
        desc["fds"] = [fds[i] for i in desc["fds"]]
        return memory_from_description(desc)
    name = obj["__record__"]
    cls = _RECORDS[name]
    enums = _ENUMS_OF.get(name, {})
    kwargs = {}
    for k, v in obj.items():
        if k == "__record__":
            continue
        if not isinstance(v, _PLAIN):
            v = _decode(v, fds, memory_from_description)
        enum_type = enums.get(k)
        kwargs[k] = enum_type(v) if enum_type is not None else v
    return cls(**kwargs)


def pack(obj: Any) -> tuple[bytes, list[int]]:
    """Encode a HAL record (Model, Request, …) to msgpack bytes plus the pools' file descriptors."""
    fds: list[int] = []
    payload = {"version": FORMAT_VERSION, "body": _encode(obj, fds)}
    return msgpack.packb(payload, use_bin_type=True), fds


def unpack(data: bytes, fds: list[int] | tuple[int, ...] = ()) -> Any:
    """Decode what :func:`pack` produced; malformed input raises DriverError(INVALID_ARGUMENT)."""
    from ..errors import invalid

    try:
        payload = msgpack.unpackb(data, raw=False, strict_map_key=False)
        if not isinstance(payload, dict) or payload.get("version") != FORMAT_VERSION:
            raise invalid(f"serialized payload is not format version {FORMAT_VERSION}")
        from ..memory import memory_from_description

        return _decode(payload["body"], list(fds), memory_from_description)
    except (ValueError, KeyError, TypeError, IndexError, OSError, msgpack.ExtraData, msgpack.FormatError,
            msgpack.StackError) as exc:
        raise invalid(f"malformed serialized payload: {exc}") from None
