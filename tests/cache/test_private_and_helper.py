"""CompilationCache (runtime-side helper), the driver-private blob store, and parsing totality."""
import os
import time

import pytest
from hypothesis import given, settings, strategies as st

import gpu_driver as gd
from gpu_driver import ErrorStatus
from gpu_driver.cache import BlobStore
from gpu_driver.cache import driver as cache_driver
from gpu_driver.cache.format import (CacheIdentity, decode_plan, encode_plan, parse_data_cache, parse_model_cache,
                                     token_digest)
from gpu_driver.cache.integrity import IntegrityStore
from gpu_driver.hal import ExecutionPreference

from .conftest import chain_model, model_input


# ---- CompilationCache -----------------------------------------------------------------------------
def test_compilation_cache_miss_then_hit(device, tmp_path):
    cc = gd.CompilationCache(tmp_path / "cc")
    model = chain_model(3, seed=11)
    cold = cc.prepare(device, model)
    assert cc.last_outcome == "miss"
    warm = cc.prepare(device, model)
    assert cc.last_outcome == "hit"
    assert warm.execute([model_input()])[0].tobytes() == cold.execute([model_input()])[0].tobytes()
    # preference and content are part of the token
    cc.prepare(device, model, preference=ExecutionPreference.SUSTAINED_SPEED)
    assert cc.last_outcome == "miss"
    cc.prepare(device, chain_model(3, seed=12))
    assert cc.last_outcome == "miss"
    assert cc.token(device, model) != cc.token(device, chain_model(3, seed=12))
    assert len(cc.token(device, model)) == 32


def test_compilation_cache_falls_back_on_damage(device, tmp_path):
    cc = gd.CompilationCache(tmp_path / "cc")
    model = chain_model(2, seed=21)
    cold = cc.prepare(device, model)
    for path in (tmp_path / "cc").glob("*.model-0"):
        data = bytearray(path.read_bytes())
        data[-5] ^= 1
        path.write_bytes(bytes(data))
    again = cc.prepare(device, model)
    assert cc.last_outcome == "fallback"
    assert again.execute([model_input()])[0].tobytes() == cold.execute([model_input()])[0].tobytes()
    cc.prepare(device, model)
    assert cc.last_outcome == "hit"  # the fallback rewrote the files


# ---- blob store -----------------------------------------------------------------------------------
def test_blob_store_roundtrip_limit_and_eviction(tmp_path):
    store = BlobStore(tmp_path / "blobs", max_bytes=3000)
    keys = [bytes([i]) * 32 for i in range(6)]
    assert store.put(keys[0], b"a" * 900)
    assert store.get(keys[0]) == b"a" * 900
    assert store.get(keys[1]) is None
    assert not store.put(keys[1], b"x" * 5000)  # alone larger than the limit
    for i, k in enumerate(keys[1:4], start=1):
        future = time.time_ns() + i * 10**12
        os.utime(store._path(keys[0]), ns=(future, future))  # key 0 most recently used
        store.put(k, bytes([i]) * 900)
    assert store.total_bytes() <= 3000
    assert store.get(keys[0]) is not None  # recently used: kept
    assert store.get(keys[1]) is None       # least recently used: evicted
    # a damaged blob is a miss and disappears
    p = store._path(keys[3])
    raw = bytearray(p.read_bytes())
    raw[-1] ^= 1
    p.write_bytes(bytes(raw))
    assert store.get(keys[3]) is None and not p.exists()


def test_blob_store_keeps_its_total_without_listing(tmp_path, monkeypatch):
    """Puts under the limit update the recorded total (blobs.size) instead of listing the directory;
    a replaced blob counts its size difference; a lost size file is recounted by the next put."""
    store = BlobStore(tmp_path / "blobs", max_bytes=10_000)
    header = 8 + 32   # magic + SHA-256
    store.put(bytes(32), b"a" * 1000)
    listings = []
    real_entries = BlobStore.entries
    monkeypatch.setattr(BlobStore, "entries", lambda self: listings.append(1) or real_entries(self))
    for i in range(1, 4):
        store.put(bytes([i]) * 32, b"b" * 1000)
    store.put(bytes([1]) * 32, b"c" * 500)
    assert listings == []
    size_file = tmp_path / "blobs" / "blobs.size"
    assert int(size_file.read_text()) == 3 * (1000 + header) + (500 + header) == store.total_bytes()
    size_file.unlink()
    listings.clear()
    store.put(bytes([9]) * 32, b"d" * 100)
    assert listings and int(size_file.read_text()) == 3 * (1000 + header) + (500 + header) + (100 + header)


@pytest.fixture
def private_device(device, tmp_path, monkeypatch):
    monkeypatch.setattr(device, "private_cache", True, raising=False)
    monkeypatch.setattr(device, "cache_state_dir", tmp_path / "state")
    monkeypatch.delenv("GPU_DRIVER_PRIVATE_CACHE", raising=False)
    return device


def test_private_cache_hit_and_disable(private_device, monkeypatch):
    dev = private_device
    model = chain_model(3, seed=31)
    calls = []
    real = type(dev)._prepare

    def counting(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(type(dev), "_prepare", counting)
    cold = dev.prepare_model(model)
    warm = dev.prepare_model(model)
    assert len(calls) == 1  # the second preparation came from the blob store
    assert warm.execute([model_input()])[0].tobytes() == cold.execute([model_input()])[0].tobytes()
    dev.prepare_model(model, preference=ExecutionPreference.LOW_POWER)
    assert len(calls) == 2  # preference is part of the key
    monkeypatch.setenv("GPU_DRIVER_PRIVATE_CACHE", "0")
    dev.prepare_model(model)
    assert len(calls) == 3
    assert cache_driver.private_store(dev).total_bytes() > 0


def test_private_cache_damage_is_a_miss(private_device):
    dev = private_device
    model = chain_model(2, seed=41)
    cold = dev.prepare_model(model).execute([model_input()])[0]
    store = cache_driver.private_store(dev)
    for path, _, _ in store.entries():
        raw = bytearray(path.read_bytes())
        raw[60] ^= 0xFF
        path.write_bytes(bytes(raw))
    assert dev.prepare_model(model).execute([model_input()])[0].tobytes() == cold.tobytes()


def test_private_cache_is_bounded(private_device, monkeypatch):
    private_device.prepare_model(chain_model(2, seed=100))
    one = cache_driver.private_store(private_device).total_bytes()
    limit = int(2.5 * one)
    monkeypatch.setattr(private_device, "private_cache_bytes", limit, raising=False)
    for seed in range(1, 6):
        private_device.prepare_model(chain_model(2, seed=100 + seed))
    store = cache_driver.private_store(private_device)
    assert 0 < store.total_bytes() <= limit and len(store.entries()) == 2


# ---- integrity store ------------------------------------------------------------------------------
def test_integrity_store_lru_bound_and_damage(tmp_path):
    store = IntegrityStore(tmp_path, max_entries=3)
    for i in range(5):
        store.record(bytes([i]) * 32, bytes([i]) * 32)
    assert len(store) == 3
    assert store.lookup(bytes([0]) * 32) is None and store.lookup(bytes([4]) * 32) == bytes([4]) * 32
    (tmp_path / "cache-integrity.msgpack").write_bytes(b"\xc1garbage")
    assert IntegrityStore(tmp_path).lookup(bytes([4]) * 32) is None  # damaged map: every cache misses


# ---- parsing is total -----------------------------------------------------------------------------
_ID = CacheIdentity("v", "reference", "reference", "x")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_parsers_raise_only_general_failure(blob):
    for parse in (parse_model_cache, parse_data_cache):
        with pytest.raises(gd.DriverError) as err:
            parse(blob, _ID, token_digest(bytes(32)))
        assert err.value.status == ErrorStatus.GENERAL_FAILURE


def _encoded_plan() -> dict:
    import msgpack

    from gpu_driver.backends.opencl import OpenCLTuning
    from gpu_driver.compiler.pipeline import build_plan, lower, prepare_graph

    graph = prepare_graph(chain_model(3, seed=2))
    plan, _ = build_plan(graph, lower(graph), OpenCLTuning())
    assert decode_plan(encode_plan(plan)) == plan
    return msgpack.unpackb(encode_plan(plan), strict_map_key=False)


@pytest.mark.parametrize("damage", [
    lambda p: p.update(version=1), lambda p: p.pop("kernels"), lambda p: p.update(storage=[]),
    lambda p: p["kernels"][0].pop(), lambda p: p["kernels"][0].__setitem__(2, [-1]),
    lambda p: p["kernels"][0].__setitem__(1, "o0"), lambda p: p["storage"].update(o0=["heap", 4, 0]),
    lambda p: p.update(status=["st", {"1": "bad"}]), lambda p: p["inputs"][0].__setitem__(0, 7),
    lambda p: p["kernels"][0][1].append("s99"), lambda p: p.update(arena_bytes=True),
])
def test_plan_decoder_refuses_damaged_plans(damage):
    import msgpack

    encoded = _encoded_plan()
    damage(encoded)
    with pytest.raises(gd.DriverError) as err:
        decode_plan(msgpack.packb(encoded, use_bin_type=True))
    assert err.value.status == ErrorStatus.GENERAL_FAILURE and "launch plan" in err.value.message


def test_plan_decoder_reads_no_plan_and_refuses_garbage():
    assert decode_plan(encode_plan(None)) is None
    for blob in (b"\xc1", b"\x93\x01\x02\x03"):
        with pytest.raises(gd.DriverError) as err:
            decode_plan(blob)
        assert err.value.status == ErrorStatus.GENERAL_FAILURE


def test_forged_lengths_do_not_allocate(tmp_path):
    """A header claiming huge sections, or a constant with a huge shape, is refused before allocating."""
    import struct

    import msgpack

    from gpu_driver.cache import format as f

    tdig = token_digest(bytes(32))
    meta = dict(_ID.as_meta(), token=tdig, constants=[["<f4", [1 << 40, 1 << 40]]], n_pools=0, spans=[[0, 16]])
    mb = msgpack.packb(meta, use_bin_type=True)
    good = struct.pack("<8sHBBIQ", f.MAGIC, f.FORMAT_VERSION, f.KIND_DATA, 0, len(mb), 16) + mb + bytes(16)
    with pytest.raises(gd.DriverError):
        parse_data_cache(good, _ID, tdig)
    huge = struct.pack("<8sHBBIQ", f.MAGIC, f.FORMAT_VERSION, f.KIND_DATA, 0, 2**32 - 1, 2**63) + mb
    with pytest.raises(gd.DriverError):
        parse_data_cache(huge, _ID, tdig)
    meta["spans"] = [[2**62, 2**62]]
    mb = msgpack.packb(meta, use_bin_type=True)
    span = struct.pack("<8sHBBIQ", f.MAGIC, f.FORMAT_VERSION, f.KIND_DATA, 0, len(mb), 16) + mb + bytes(16)
    with pytest.raises(gd.DriverError):
        parse_data_cache(span, _ID, tdig)
