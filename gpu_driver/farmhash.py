"""FarmHash ``Fingerprint64`` (= ``farmhashna::Hash64``), bit-exact, in pure Python.

LSH_PROJECTION (operations.md 15) hashes ``seed bytes ‖ item bytes`` with this function and needs
exactly the reference's 64-bit values.  All arithmetic is on unsigned 64-bit integers (``& MASK``
after every multiply/add), bytes are read little-endian, and rotations are to the right — the
conventions of the FarmHash reference implementation.
"""
from __future__ import annotations

MASK = (1 << 64) - 1

K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rotate(v: int, shift: int) -> int:
    """Rotate a 64-bit value right by ``shift`` (0 < shift < 64)."""
    return ((v >> shift) | (v << (64 - shift))) & MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & MASK
    b ^= b >> 47
    return (b * mul) & MASK


def _hash_len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = (K2 + n * 2) & MASK
        a = (_fetch64(s, 0) + K2) & MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & MASK
        d = ((_rotate(a, 25) + b) * mul) & MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = (K2 + n * 2) & MASK
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & MASK, _fetch32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = a + (b << 8)
        z = n + (c << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & MASK) * K2) & MASK
    return K2


def _hash_len17to32(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & MASK
    a = (_fetch64(s, 0) * K1) & MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & MASK
    d = (_fetch64(s, n - 16) * K2) & MASK
    return _hash_len16((_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK,
                       (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)


def _hash_len33to64(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & MASK
    a = (_fetch64(s, 0) * K2) & MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & MASK
    d = (_fetch64(s, n - 16) * K2) & MASK
    y = (_rotate((a + b) & MASK, 43) + _rotate(c, 30) + d) & MASK
    z = _hash_len16(y, (a + _rotate((b + K2) & MASK, 18) + c) & MASK, mul)
    e = (_fetch64(s, 16) * mul) & MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & MASK
    return _hash_len16((_rotate((e + f) & MASK, 43) + _rotate(g, 30) + h) & MASK,
                       (e + _rotate((f + a) & MASK, 18) + g) & MASK, mul)


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16), _fetch64(s, i + 24)
    a = (a + w) & MASK
    b = _rotate((b + a + z) & MASK, 21)
    c = a
    a = (a + x + y) & MASK
    b = (b + _rotate(a, 44)) & MASK
    return (a + z) & MASK, (b + c) & MASK


def fingerprint64(data: bytes) -> int:
    """FarmHash Fingerprint64 of ``data`` as an unsigned 64-bit integer."""
    s = bytes(data)
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s)
    if n <= 32:
        return _hash_len17to32(s)
    if n <= 64:
        return _hash_len33to64(s)

    seed = 81
    x = seed
    y = (seed * K1 + 113) & MASK
    z = (_shift_mix((y * K2 + 113) & MASK) * K2) & MASK
    v0 = v1 = w0 = w1 = 0
    x = (x * K2 + _fetch64(s, 0)) & MASK

    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    pos = 0
    while True:
        x = (_rotate((x + y + v0 + _fetch64(s, pos + 8)) & MASK, 37) * K1) & MASK
        y = (_rotate((y + v1 + _fetch64(s, pos + 48)) & MASK, 42) * K1) & MASK
        x ^= w1
        y = (y + v0 + _fetch64(s, pos + 40)) & MASK
        z = (_rotate((z + w0) & MASK, 33) * K1) & MASK
        v0, v1 = _weak_hash_len32_with_seeds(s, pos, (v1 * K1) & MASK, (x + w0) & MASK)
        w0, w1 = _weak_hash_len32_with_seeds(s, pos + 32, (z + w1) & MASK, (y + _fetch64(s, pos + 16)) & MASK)
        z, x = x, z
        pos += 64
        if pos == end:
            break

    mul = (K1 + ((z & 0xFF) << 1)) & MASK
    pos = last64
    w0 = (w0 + ((n - 1) & 63)) & MASK
    v0 = (v0 + w0) & MASK
    w0 = (w0 + v0) & MASK
    x = (_rotate((x + y + v0 + _fetch64(s, pos + 8)) & MASK, 37) * mul) & MASK
    y = (_rotate((y + v1 + _fetch64(s, pos + 48)) & MASK, 42) * mul) & MASK
    x ^= (w1 * 9) & MASK
    y = (y + v0 * 9 + _fetch64(s, pos + 40)) & MASK
    z = (_rotate((z + w0) & MASK, 33) * mul) & MASK
    v0, v1 = _weak_hash_len32_with_seeds(s, pos, (v1 * mul) & MASK, (x + w0) & MASK)
    w0, w1 = _weak_hash_len32_with_seeds(s, pos + 32, (z + w1) & MASK, (y + _fetch64(s, pos + 16)) & MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * K0 + z) & MASK,
                       (_hash_len16(v1, w1, mul) + x) & MASK, mul)


def fingerprint64_signed(data: bytes) -> int:
    """Fingerprint64 reinterpreted as int64 (what LSH_PROJECTION converts to double)."""
    h = fingerprint64(data)
    return h - (1 << 64) if h >> 63 else h
