"""msgpack round trip of models and requests (gpu_driver.hal.serialize)."""
from __future__ import annotations

import os
import tempfile

import msgpack
import numpy as np
import pytest

from gpu_driver.errors import DriverError
from gpu_driver.hal import (DataLocation, ErrorStatus, Model, Operand, OperandLifeTime, Request, RequestArgument)
from gpu_driver.validation import validate_model

from gpu_driver.hal.serialize import FORMAT_VERSION, pack, unpack
from gpu_driver.memory import MmapFd, SharedMemory

from . import validation_seeds as seeds


def _strip_pools(model: Model):
    """The model's records without pools (Memory objects compare by identity)."""
    import copy

    m = copy.deepcopy(model, memo={id(p): None for p in model.pools})
    m.pools = []
    return m


def _round_trip(obj):
    data, fds = pack(obj)
    assert isinstance(data, bytes)
    return unpack(data, fds)


@pytest.mark.parametrize("name", ["conv_f32", "conv_pc8", "if_model", "while_model", "lstm_f32"])
def test_model_round_trip(name):
    model = seeds.SEEDS[name]()
    back = _round_trip(model)
    assert _strip_pools(back) == _strip_pools(model)
    assert len(back.pools) == len(model.pools)
    for a, b in zip(model.pools, back.pools):
        assert a.kind == b.kind and a.size == b.size and a.read(0, a.size) == b.read(0, b.size)
    validate_model(back)
    if name == "conv_pc8":
        w = back.main.operands[back.main.operations[0].inputs[1]]
        assert w.extra_params.scales == [0.1, 0.2] and w.extra_params.channel_dim == 0
    if name in ("if_model", "while_model"):
        assert len(back.referenced) == 2 and back.referenced == model.referenced


def test_mmap_fd_pool_round_trip():
    model = seeds.conv_f32()
    payload = model.pools[0].read(0, model.pools[0].size)
    with tempfile.TemporaryFile() as f:
        f.write(b"\0" * 4096 + payload)
        f.flush()
        mem = MmapFd(f.fileno(), len(payload), offset=4096)
        model.pools = [mem]
        validate_model(model)
        back = _round_trip(model)
        assert isinstance(back.pools[0], MmapFd)
        assert back.pools[0].offset == 4096 and back.pools[0].size == len(payload)
        assert back.pools[0].read(0, len(payload)) == payload
        assert _strip_pools(back) == _strip_pools(model)
        back.pools[0].close()
        mem.close()


def test_request_round_trip():
    pool = SharedMemory(64)
    pool.write(0, np.arange(4, dtype=np.float32).tobytes())
    req = Request([RequestArgument(DataLocation(0, 0, 16), [4]), RequestArgument(has_no_value=True)],
                  [RequestArgument(DataLocation(1, 0, 0), [])], [pool, 5])
    back = _round_trip(req)
    assert back.inputs == req.inputs and back.outputs == req.outputs
    assert back.pools[1] == 5 and back.pools[0].read(0, 16) == pool.read(0, 16)


def test_bytes_extra_params_and_enums_survive():
    op = Operand(3, [2], extra_params=b"\x01\x02", lifetime=OperandLifeTime.NO_VALUE)
    back = _round_trip(op)
    assert back == op and isinstance(back.lifetime, OperandLifeTime)


@pytest.mark.parametrize("data", [
    b"", b"\xc1", b"\x92\x01", msgpack.packb({"version": FORMAT_VERSION + 1, "body": None}),
    msgpack.packb([1, 2, 3]), msgpack.packb({"version": FORMAT_VERSION}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__record__": "NoSuchRecord"}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__record__": "Operand", "bogus": 1}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__record__": "Operand", "type": 77}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"no_record": 1}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__memory__": {"kind": "ashmem", "size": 8, "fds": [0]}}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__memory__": {"kind": "nope", "size": 8, "fds": []}}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__memory__": 5}}),
    msgpack.packb({"version": FORMAT_VERSION, "body": {"__memory__": {"kind": "ashmem", "size": -1, "fds": []}}}),
])
def test_malformed_payloads(data):
    with pytest.raises(DriverError) as info:
        unpack(data, [])
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT


def test_bad_fd_is_invalid():
    data = msgpack.packb({"version": FORMAT_VERSION,
                          "body": {"__memory__": {"kind": "ashmem", "size": 8, "fds": [0]}}})
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(DriverError) as info:
        unpack(data, [r])  # a closed descriptor
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
