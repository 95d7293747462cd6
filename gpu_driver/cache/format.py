"""Every byte layout of the compilation cache, with its format version: the envelopes of the model
cache and the data cache, and the msgpack encoding of the launch plan (gpu_driver.compiler.artifact).

Layout of one envelope (little-endian)::

    magic "GDRVCACH" | format u16 | kind u8 (1 model, 2 data) | 0 u8 | meta_len u32 | body_len u64
    | meta (msgpack map, meta_len bytes) | body (body_len bytes: raw sections the meta points into)

Every envelope's meta names who wrote it (driver version incl. a digest of the driver's sources,
backend, device name, device version string) and the SHA-256 of the cache token, so a file made by
another build, device or token is refused.  The model cache holds the model's structure (constants
stripped), the compiled binary, the launch plan (:func:`encode_plan`), the execution preference, and
the SHA-256 and length of the data cache it belongs to; the data cache holds the device constants and
the model's constant pools.

Launch plan (PLAN_VERSION 3): a msgpack map ``version``, ``kernels`` (each
``[name, args, global, local or nil, node, template]``), ``storage`` (key → ``[region, nbytes,
offset]``), ``const_keys``, ``const_bytes``, ``arena_bytes``, ``naive_arena_bytes``, ``inputs`` /
``outputs`` (each ``[key, nbytes, shape]``), ``status`` (nil or ``[key, {code:
message}]``), ``lane`` (the backend lane the binary is for, "" for the device itself); nil for a
device that runs without a launch plan.

Parsing is total: any malformed input raises ``DriverError(GENERAL_FAILURE)`` and nothing else; no
length read from a file is trusted before it is checked against the bytes actually present, so a
forged length cannot cause a large allocation or an out-of-bounds view.
"""
from __future__ import annotations

import functools
import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import msgpack
import numpy as np

from .. import version
from ..compiler.artifact import REGIONS, IOBinding, KernelLaunch, LaunchPlan, StatusWord, StorageSlot
from ..errors import DriverError, failure

MAGIC = b"GDRVCACH"
FORMAT_VERSION = 1
PLAN_VERSION = 3
KIND_MODEL, KIND_DATA = 1, 2
_HEADER = struct.Struct("<8sHBBIQ")
MAX_META_BYTES = 64 << 20
MAX_RANK = 16
ALIGN = 64
_DTYPES = frozenset(np.dtype(t).str for t in (
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64))


# ---- identity ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the driver's sources and kernels: a rebuilt driver never trusts an older cache.

    ``GPU_DRIVER_BUILD_ID`` replaces it (packaged builds, or processes that must agree on purpose).
    """
    override = os.environ.get("GPU_DRIVER_BUILD_ID")
    if override:
        return override
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for sub in ("gpu_driver", "opencl_kernels", "cuda_kernels"):
        base = root / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix in (".py", ".cl", ".h", ".cu", ".cuh") and path.is_file():
                h.update(str(path.relative_to(root)).encode())
                try:
                    h.update(path.read_bytes())
                except OSError:
                    pass
    return h.hexdigest()[:16]


def driver_version() -> str:
    """``<package version>+<source digest>``; read on every call (tests monkeypatch the version)."""
    return f"{version.__version__}+{source_digest()}"


@dataclass(frozen=True)
class CacheIdentity:
    """Who may read a cache: the driver build, the backend and the exact device."""

    driver: str
    backend: str
    device: str
    version: str

    @classmethod
    def of(cls, device) -> "CacheIdentity":
        name = device.get_name()
        return cls(driver_version(), name.split(":")[0], name, device.get_version_string())

    def namespace(self) -> bytes:
        return "\0".join((self.driver, self.backend, self.device, self.version)).encode()

    def as_meta(self) -> dict:
        return {"driver": self.driver, "backend": self.backend, "device": self.device, "version": self.version}


_CHUNK = 4 << 20
_POOL = None


def bulk_digest(data) -> bytes:
    """SHA-256 tree digest of a large buffer: 4 MiB chunks hashed in parallel (hashlib drops the GIL),
    then the chunk digests and the length hashed together.  Used to bind the data cache."""
    global _POOL
    view = memoryview(data).cast("B")
    chunks = [view[i:i + _CHUNK] for i in range(0, view.nbytes, _CHUNK)]
    if len(chunks) > 2 and (os.cpu_count() or 1) > 1:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="gd-cache-hash")
        digests = list(_POOL.map(lambda c: hashlib.sha256(c).digest(), chunks))
    else:
        digests = [hashlib.sha256(c).digest() for c in chunks]
    return hashlib.sha256(struct.pack("<Q", view.nbytes) + b"".join(digests)).digest()


def token_digest(token: bytes) -> bytes:
    return hashlib.sha256(b"gpu_driver-cache-token\0" + bytes(token)).digest()


# ---- contents ------------------------------------------------------------------------------------------
@dataclass
class ModelCacheContent:
    model: bytes            # hal.serialize.pack of the model without its pools
    binary: bytes           # the device binary (backend-defined)
    plan: LaunchPlan | None
    preference: int
    pool_sizes: list[int]
    data_digest: bytes      # SHA-256 of the data cache bytes
    data_len: int


@dataclass
class DataCacheContent:
    constants: list[np.ndarray]
    pools: list[memoryview]


# ---- writing -------------------------------------------------------------------------------------------
def _pack_envelope(kind: int, meta: dict, sections: Sequence) -> bytes:
    """Envelope with ``sections`` (bytes-like) laid out ALIGN-aligned in the body; meta gets their spans."""
    spans, offset = [], 0
    for s in sections:
        n = memoryview(s).nbytes
        spans.append([offset, n])
        offset += n + (-n) % ALIGN
    meta = dict(meta, spans=spans)
    meta_bytes = msgpack.packb(meta, use_bin_type=True)
    out = bytearray(_HEADER.pack(MAGIC, FORMAT_VERSION, kind, 0, len(meta_bytes), offset))
    out += meta_bytes
    body_start = len(out)
    out += bytes(offset)
    for (off, n), s in zip(spans, sections):
        out[body_start + off:body_start + off + n] = memoryview(s).cast("B")
    return bytes(out)


def pack_data_cache(identity: CacheIdentity, tdigest: bytes, constants: Sequence[np.ndarray],
                    pools: Sequence) -> bytes:
    arrays = [np.ascontiguousarray(c) for c in constants]
    for a in arrays:
        if a.dtype.str not in _DTYPES:
            raise failure(f"cannot cache a constant of dtype {a.dtype}")
    meta = dict(identity.as_meta(), token=tdigest,
                constants=[[a.dtype.str, list(a.shape)] for a in arrays], n_pools=len(pools))
    return _pack_envelope(KIND_DATA, meta, [a.reshape(-1).view(np.uint8) for a in arrays] + list(pools))


def pack_model_cache(identity: CacheIdentity, tdigest: bytes, model_bytes: bytes, binary: bytes,
                     plan: LaunchPlan | None, preference: int, pool_sizes: Sequence[int], data_bytes: bytes) -> bytes:
    plan_bytes = encode_plan(plan)
    meta = dict(identity.as_meta(), token=tdigest, preference=int(preference), pool_sizes=[int(s) for s in pool_sizes],
                data_digest=bulk_digest(data_bytes), data_len=len(data_bytes))
    return _pack_envelope(KIND_MODEL, meta, [model_bytes, bytes(binary), plan_bytes])


# ---- reading (total) -----------------------------------------------------------------------------------
def _bad(what: str) -> DriverError:
    return failure(f"cache file is corrupt or not ours: {what}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---- the launch plan -----------------------------------------------------------------------------------
def encode_plan(plan: LaunchPlan | None) -> bytes:
    """The launch plan as msgpack (layout in the module docstring)."""
    if plan is None:
        return msgpack.packb(None)
    encoded = {
        "version": PLAN_VERSION,
        "kernels": [[k.name, list(k.args), list(k.global_size), None if k.local_size is None else list(k.local_size),
                     k.node, k.template] for k in plan.kernels],
        "storage": {key: [s.region, s.nbytes, s.offset] for key, s in plan.storage.items()},
        "const_keys": list(plan.const_keys), "const_bytes": plan.const_bytes, "arena_bytes": plan.arena_bytes,
        "naive_arena_bytes": plan.naive_arena_bytes,
        "inputs": [[b.key, b.nbytes, list(b.shape)] for b in plan.inputs],
        "outputs": [[b.key, b.nbytes, list(b.shape)] for b in plan.outputs],
        "status": None if plan.status is None else [plan.status.key, dict(plan.status.messages)],
        "lane": plan.lane,
    }
    try:
        return msgpack.packb(encoded, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise failure(f"launch plan is not serialisable: {exc}") from None


def _text(v) -> str:
    if not isinstance(v, str):
        raise ValueError("not a string")
    return v


def _count(v) -> int:
    if not _is_int(v) or v < 0:
        raise ValueError("not a non-negative integer")
    return v


def _counts(v) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_RANK:
        raise ValueError("not a list of sizes")
    return tuple(_count(d) for d in v)


def _binding(v) -> IOBinding:
    key, nbytes, shape = v
    return IOBinding(_text(key), _count(nbytes), _counts(shape))


def _kernel(v) -> KernelLaunch:
    name, args, global_size, local_size, node, template = v
    if not isinstance(args, list) or not _is_int(node):
        raise ValueError("bad kernel launch")
    return KernelLaunch(_text(name), tuple(_text(a) for a in args), _counts(global_size),
                        None if local_size is None else _counts(local_size), node, _text(template))


def _slot(v) -> StorageSlot:
    region, nbytes, offset = v
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}")
    return StorageSlot(region, _count(nbytes), _count(offset))


def _status(v) -> StatusWord | None:
    if v is None:
        return None
    key, messages = v
    if not isinstance(messages, dict) or not all(_is_int(c) for c in messages):
        raise ValueError("bad status messages")
    return StatusWord(_text(key), {c: _text(m) for c, m in messages.items()})


def decode_plan(data) -> LaunchPlan | None:
    """The launch plan :func:`encode_plan` wrote; GENERAL_FAILURE for anything else (total)."""
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except Exception as exc:
        raise _bad(f"unreadable launch plan ({type(exc).__name__})") from None
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("version") != PLAN_VERSION:
        got = raw.get("version") if isinstance(raw, dict) else None
        raise _bad(f"launch plan version {got!r}, this driver reads {PLAN_VERSION}")
    try:
        storage, const_keys = raw["storage"], raw["const_keys"]
        if not isinstance(storage, dict) or not isinstance(const_keys, list):
            raise ValueError("bad tables")
        plan = LaunchPlan(
            kernels=[_kernel(k) for k in raw["kernels"]],
            storage={_text(key): _slot(s) for key, s in storage.items()}, const_keys=[_text(k) for k in const_keys],
            const_bytes=_count(raw["const_bytes"]), arena_bytes=_count(raw["arena_bytes"]),
            naive_arena_bytes=_count(raw["naive_arena_bytes"]), inputs=[_binding(b) for b in raw["inputs"]],
            outputs=[_binding(b) for b in raw["outputs"]], status=_status(raw["status"]), lane=_text(raw["lane"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(f"malformed launch plan ({exc})") from None
    named = {a for k in plan.kernels for a in k.args} | {b.key for b in (*plan.inputs, *plan.outputs)}
    named |= set(plan.const_keys) | ({plan.status.key} if plan.status else set())
    if not named <= plan.storage.keys():
        raise _bad("the launch plan names storage it does not lay out")
    return plan


def _parse_envelope(data, kind: int, identity: CacheIdentity, tdigest: bytes) -> tuple[dict, memoryview, list]:
    view = memoryview(data).cast("B")
    if view.nbytes < _HEADER.size:
        raise _bad("shorter than the header")
    magic, version, got_kind, _, meta_len, body_len = _HEADER.unpack_from(view, 0)
    if magic != MAGIC:
        raise _bad("bad magic")
    if version != FORMAT_VERSION:
        raise _bad(f"format version {version}, this driver reads {FORMAT_VERSION}")
    if got_kind != kind:
        raise _bad("a data cache where a model cache belongs (or the reverse)")
    if meta_len > MAX_META_BYTES or _HEADER.size + meta_len + body_len != view.nbytes:
        raise _bad("lengths do not match the file size")
    try:
        meta = msgpack.unpackb(view[_HEADER.size:_HEADER.size + meta_len], raw=False, strict_map_key=False,
                               use_list=True)
    except Exception as exc:  # msgpack raises many kinds on garbage; all mean "corrupt"
        raise _bad(f"unreadable metadata ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise _bad("metadata is not a map")
    for key, want in identity.as_meta().items():
        if meta.get(key) != want:
            raise _bad(f"written by another {key} ({meta.get(key)!r}, this is {want!r})")
    if meta.get("token") != tdigest:
        raise _bad("written for another token")
    body = view[_HEADER.size + meta_len:]
    spans = meta.get("spans")
    if not isinstance(spans, list):
        raise _bad("no section table")
    sections = []
    for span in spans:
        if (not isinstance(span, list) or len(span) != 2 or not all(_is_int(v) for v in span)
                or span[0] < 0 or span[1] < 0 or span[0] + span[1] > body.nbytes):
            raise _bad("a section lies outside the file")
        sections.append(body[span[0]:span[0] + span[1]])
    return meta, body, sections


def parse_model_cache(data, identity: CacheIdentity, tdigest: bytes) -> ModelCacheContent:
    try:
        return _parse_model_cache(data, identity, tdigest)
    except DriverError:
        raise
    except Exception as exc:  # belt and braces: parsing never raises anything but DriverError
        raise _bad(f"{type(exc).__name__}: {exc}") from None


def _parse_model_cache(data, identity, tdigest) -> ModelCacheContent:
    meta, _, sections = _parse_envelope(data, KIND_MODEL, identity, tdigest)
    if len(sections) != 3:
        raise _bad("model cache needs 3 sections")
    preference, pool_sizes = meta.get("preference"), meta.get("pool_sizes")
    digest, data_len = meta.get("data_digest"), meta.get("data_len")
    if (not _is_int(preference) or not isinstance(pool_sizes, list)
            or not all(_is_int(s) and 0 <= s <= 1 << 40 for s in pool_sizes)
            or not isinstance(digest, bytes) or len(digest) != 32 or not _is_int(data_len) or data_len < 0):
        raise _bad("bad model-cache fields")
    plan = decode_plan(sections[2])
    return ModelCacheContent(bytes(sections[0]), bytes(sections[1]), plan, preference, pool_sizes, digest, data_len)


def parse_data_cache(data, identity: CacheIdentity, tdigest: bytes) -> DataCacheContent:
    try:
        return _parse_data_cache(data, identity, tdigest)
    except DriverError:
        raise
    except Exception as exc:
        raise _bad(f"{type(exc).__name__}: {exc}") from None


def _parse_data_cache(data, identity, tdigest) -> DataCacheContent:
    meta, _, sections = _parse_envelope(data, KIND_DATA, identity, tdigest)
    consts, n_pools = meta.get("constants"), meta.get("n_pools")
    if not isinstance(consts, list) or not _is_int(n_pools) or n_pools < 0 or len(consts) + n_pools != len(sections):
        raise _bad("data-cache section count does not match")
    arrays = []
    for desc, raw in zip(consts, sections):
        if not isinstance(desc, list) or len(desc) != 2:
            raise _bad("bad constant descriptor")
        dtype_str, shape = desc
        if dtype_str not in _DTYPES or not isinstance(shape, list) or len(shape) > MAX_RANK:
            raise _bad("bad constant dtype or rank")
        if not all(_is_int(d) and 0 <= d <= raw.nbytes for d in shape):
            raise _bad("bad constant shape")
        dtype = np.dtype(dtype_str)
        count = 1
        for d in shape:
            count *= d
        if count * dtype.itemsize != raw.nbytes:
            raise _bad("constant shape does not match its bytes")
        arr = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
        arrays.append(arr)
    return DataCacheContent(arrays, list(sections[len(consts):]))
