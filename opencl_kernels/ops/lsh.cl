/* LSH_PROJECTION (operations.md 15), bit-exact with the reference kernel in gpu_driver/ops/lsh.py.
 *
 * STAGE 0: one work item per hash bit (i, j), idx = i*NUM_BITS + j:
 *     seed  = float32(hash[idx])   (F32: its raw bits; F16: converted exactly, NaN payloads as numpy)
 *     key_k = 4 bytes of seed (little-endian) ‖ the ITEM_BYTES raw bytes of input item k
 *     score = Σ_k w_k·double((int64)Fingerprint64(key_k))   (sequential, round-to-nearest, no FMA;
 *             HAS_W 0: w_k = 1, i.e. a plain sum)
 *     bits[idx] = score > 0
 *   DENSE writes bits straight to the output; the sparse kinds write them to a scratch buffer.
 * STAGE 1 (sparse kinds): one work item per hash i packs bits MSB first (sig = sig<<1 | bit, wrapping
 *     int32) and, for SPARSE (LSH_TYPE 3), adds i·2^NUM_BITS (wrapping).
 *
 * The key lives in private memory (KEY_LEN = 4 + ITEM_BYTES bytes, bounded by the lowering); every
 * 64/32-bit load is assembled from bytes (little-endian), so any item size/alignment works.  FarmHash
 * Fingerprint64 (= farmhashna::Hash64) is gpu_driver/farmhash.py transcribed to uint64.
 * Needs fp64 (OpenCL: cl_khr_fp64).
 */
#ifndef GD_HELPERS_LSH
#define GD_HELPERS_LSH

#ifdef GD_CUDA
#define GD_LSH_AS_F64(u) __longlong_as_double((long long)(u))
#define GD_LSH_DADD(a, b) __dadd_rn((a), (b))
#define GD_LSH_DMUL(a, b) __dmul_rn((a), (b))
#else
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GD_LSH_AS_F64(u) as_double((ulong)(u))
#define GD_LSH_DADD(a, b) ((a) + (b))
#define GD_LSH_DMUL(a, b) ((a) * (b))
#endif

#define GD_LSH_K0 ((uint64)0xC3A5C85C97CB3127UL)
#define GD_LSH_K1 ((uint64)0xB492B66FBE98F273UL)
#define GD_LSH_K2 ((uint64)0x9AE16A3B2F90404FUL)

DEVICE_FN uint64 gd_lsh_fetch64(const uchar* s, int i) {
    uint64 r = 0;
    for (int b = 7; b >= 0; --b) r = (r << 8) | (uint64)s[i + b];
    return r;
}

DEVICE_FN uint64 gd_lsh_fetch32(const uchar* s, int i) {
    return (uint64)s[i] | ((uint64)s[i + 1] << 8) | ((uint64)s[i + 2] << 16) | ((uint64)s[i + 3] << 24);
}

/* rotate right, 0 < shift < 64 */
DEVICE_FN uint64 gd_lsh_rotr(uint64 v, int shift) { return (v >> shift) | (v << (64 - shift)); }

DEVICE_FN uint64 gd_lsh_shift_mix(uint64 v) { return v ^ (v >> 47); }

DEVICE_FN uint64 gd_lsh_hash_len16(uint64 u, uint64 v, uint64 mul) {
    uint64 a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64 b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

DEVICE_FN uint64 gd_lsh_len0to16(const uchar* s, int n) {
    if (n >= 8) {
        const uint64 mul = GD_LSH_K2 + (uint64)n * 2;
        const uint64 a = gd_lsh_fetch64(s, 0) + GD_LSH_K2;
        const uint64 b = gd_lsh_fetch64(s, n - 8);
        const uint64 c = gd_lsh_rotr(b, 37) * mul + a;
        const uint64 d = (gd_lsh_rotr(a, 25) + b) * mul;
        return gd_lsh_hash_len16(c, d, mul);
    }
    if (n >= 4) {
        const uint64 mul = GD_LSH_K2 + (uint64)n * 2;
        const uint64 a = gd_lsh_fetch32(s, 0);
        return gd_lsh_hash_len16((uint64)n + (a << 3), gd_lsh_fetch32(s, n - 4), mul);
    }
    if (n > 0) {
        const uint64 a = s[0], b = s[n >> 1], c = s[n - 1];
        const uint64 y = a + (b << 8);
        const uint64 z = (uint64)n + (c << 2);
        return gd_lsh_shift_mix((y * GD_LSH_K2) ^ (z * GD_LSH_K0)) * GD_LSH_K2;
    }
    return GD_LSH_K2;
}

DEVICE_FN uint64 gd_lsh_len17to32(const uchar* s, int n) {
    const uint64 mul = GD_LSH_K2 + (uint64)n * 2;
    const uint64 a = gd_lsh_fetch64(s, 0) * GD_LSH_K1;
    const uint64 b = gd_lsh_fetch64(s, 8);
    const uint64 c = gd_lsh_fetch64(s, n - 8) * mul;
    const uint64 d = gd_lsh_fetch64(s, n - 16) * GD_LSH_K2;
    return gd_lsh_hash_len16(gd_lsh_rotr(a + b, 43) + gd_lsh_rotr(c, 30) + d,
                             a + gd_lsh_rotr(b + GD_LSH_K2, 18) + c, mul);
}

DEVICE_FN uint64 gd_lsh_len33to64(const uchar* s, int n) {
    const uint64 mul = GD_LSH_K2 + (uint64)n * 2;
    const uint64 a = gd_lsh_fetch64(s, 0) * GD_LSH_K2;
    const uint64 b = gd_lsh_fetch64(s, 8);
    const uint64 c = gd_lsh_fetch64(s, n - 8) * mul;
    const uint64 d = gd_lsh_fetch64(s, n - 16) * GD_LSH_K2;
    const uint64 y = gd_lsh_rotr(a + b, 43) + gd_lsh_rotr(c, 30) + d;
    const uint64 z = gd_lsh_hash_len16(y, a + gd_lsh_rotr(b + GD_LSH_K2, 18) + c, mul);
    const uint64 e = gd_lsh_fetch64(s, 16) * mul;
    const uint64 f = gd_lsh_fetch64(s, 24);
    const uint64 g = (y + gd_lsh_fetch64(s, n - 32)) * mul;
    const uint64 h = (z + gd_lsh_fetch64(s, n - 24)) * mul;
    return gd_lsh_hash_len16(gd_lsh_rotr(e + f, 43) + gd_lsh_rotr(g, 30) + h,
                             e + gd_lsh_rotr(f + a, 18) + g, mul);
}

DEVICE_FN void gd_lsh_weak32(const uchar* s, int i, uint64 a, uint64 b, uint64* first, uint64* second) {
    const uint64 w = gd_lsh_fetch64(s, i), x = gd_lsh_fetch64(s, i + 8);
    const uint64 y = gd_lsh_fetch64(s, i + 16), z = gd_lsh_fetch64(s, i + 24);
    a += w;
    b = gd_lsh_rotr(b + a + z, 21);
    const uint64 c = a;
    a += x + y;
    b += gd_lsh_rotr(a, 44);
    *first = a + z;
    *second = b + c;
}

/* FarmHash Fingerprint64 of the n bytes at s (private memory). */
DEVICE_FN uint64 gd_lsh_fingerprint64(const uchar* s, int n) {
    if (n <= 16) return gd_lsh_len0to16(s, n);
    if (n <= 32) return gd_lsh_len17to32(s, n);
    if (n <= 64) return gd_lsh_len33to64(s, n);

    const uint64 seed = 81;
    uint64 x = seed;
    uint64 y = seed * GD_LSH_K1 + 113;
    uint64 z = gd_lsh_shift_mix(y * GD_LSH_K2 + 113) * GD_LSH_K2;
    uint64 v0 = 0, v1 = 0, w0 = 0, w1 = 0, t;
    x = x * GD_LSH_K2 + gd_lsh_fetch64(s, 0);

    const int end = ((n - 1) / 64) * 64;
    const int last64 = end + ((n - 1) & 63) - 63;
    int pos = 0;
    do {
        x = gd_lsh_rotr(x + y + v0 + gd_lsh_fetch64(s, pos + 8), 37) * GD_LSH_K1;
        y = gd_lsh_rotr(y + v1 + gd_lsh_fetch64(s, pos + 48), 42) * GD_LSH_K1;
        x ^= w1;
        y += v0 + gd_lsh_fetch64(s, pos + 40);
        z = gd_lsh_rotr(z + w0, 33) * GD_LSH_K1;
        gd_lsh_weak32(s, pos, v1 * GD_LSH_K1, x + w0, &v0, &v1);
        gd_lsh_weak32(s, pos + 32, z + w1, y + gd_lsh_fetch64(s, pos + 16), &w0, &w1);
        t = z; z = x; x = t;
        pos += 64;
    } while (pos != end);

    const uint64 mul = GD_LSH_K1 + ((z & 0xFF) << 1);
    pos = last64;
    w0 += (uint64)((n - 1) & 63);
    v0 += w0;
    w0 += v0;
    x = gd_lsh_rotr(x + y + v0 + gd_lsh_fetch64(s, pos + 8), 37) * mul;
    y = gd_lsh_rotr(y + v1 + gd_lsh_fetch64(s, pos + 48), 42) * mul;
    x ^= w1 * 9;
    y += v0 * 9 + gd_lsh_fetch64(s, pos + 40);
    z = gd_lsh_rotr(z + w0, 33) * mul;
    gd_lsh_weak32(s, pos, v1 * mul, x + w0, &v0, &v1);
    gd_lsh_weak32(s, pos + 32, z + w1, y + gd_lsh_fetch64(s, pos + 16), &w0, &w1);
    t = z; z = x; x = t;
    return gd_lsh_hash_len16(gd_lsh_hash_len16(v0, w0, mul) + gd_lsh_shift_mix(y) * GD_LSH_K0 + z,
                             gd_lsh_hash_len16(v1, w1, mul) + x, mul);
}

/* IEEE half bits -> float bits, exact, NaN payloads kept (numpy's npy_halfbits_to_floatbits). */
DEVICE_FN uint gd_lsh_f16_to_f32_bits(uint h) {
    const uint sign = (h & 0x8000u) << 16;
    uint e = h & 0x7c00u;
    uint m = h & 0x03ffu;
    if (e == 0x7c00u) return sign | 0x7f800000u | (m << 13);
    if (e == 0) {
        if (m == 0) return sign;
        int sh = 0;
        while ((m & 0x0400u) == 0) { m <<= 1; ++sh; }
        return sign | ((uint)(113 - sh) << 23) | ((m & 0x03ffu) << 13);
    }
    return sign | (((h & 0x7fffu) + 0x1c000u) << 13);
}

/* float bits -> double, exact (built from the bits: immune to denormal flushing of float loads). */
DEVICE_FN double gd_lsh_f32_bits_to_f64(uint b) {
    const uint64 sign = (uint64)(b >> 31) << 63;
    const uint e = (b >> 23) & 0xffu;
    uint64 m = (uint64)(b & 0x7fffffu);
    uint64 r;
    if (e == 0xffu) {
        r = sign | ((uint64)0x7ff << 52) | (m << 29);
    } else if (e == 0) {
        if (m == 0) {
            r = sign;
        } else {
            int sh = 0;
            while ((m & 0x800000u) == 0) { m <<= 1; ++sh; }
            r = sign | ((uint64)(897 - sh) << 52) | ((m & 0x7fffffu) << 29);
        }
    } else {
        r = sign | ((uint64)(e + 896u) << 52) | (m << 29);
    }
    return GD_LSH_AS_F64(r);
}

/* score + w·h, the product and the sum each rounded (never contracted to an FMA) */
DEVICE_FN double gd_lsh_weighted_add(double score, double w, double h) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
    const double p = GD_LSH_DMUL(w, h);
    return GD_LSH_DADD(score, p);
}

#endif /* GD_HELPERS_LSH */

#if ${STAGE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const ${TH}* RESTRICT hash, GLOBAL const ${TX}* RESTRICT input,
#if ${HAS_W}
                           GLOBAL const ${TH}* RESTRICT weight,
#endif
                           GLOBAL int* RESTRICT bits) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${NUM_HASH} * ${NUM_BITS}) return;
    uchar key[${KEY_LEN}];
#if ${HASH_F16}
    const uint seed = gd_lsh_f16_to_f32_bits((uint)((GLOBAL const ushort*)hash)[idx]);
#else
    const uint seed = ((GLOBAL const uint*)hash)[idx];
#endif
    key[0] = (uchar)(seed & 0xffu);
    key[1] = (uchar)((seed >> 8) & 0xffu);
    key[2] = (uchar)((seed >> 16) & 0xffu);
    key[3] = (uchar)(seed >> 24);
    GLOBAL const uchar* items = (GLOBAL const uchar*)input;
    double score = 0.0;
    for (int k = 0; k < ${NUM_ITEMS}; ++k) {
        GLOBAL const uchar* item = items + (int64)k * ${ITEM_BYTES};
        for (int b = 0; b < ${ITEM_BYTES}; ++b) key[4 + b] = item[b];
        const double h = (double)(int64)gd_lsh_fingerprint64(key, ${KEY_LEN});
#if ${HAS_W}
#if ${HASH_F16}
        const double w = gd_lsh_f32_bits_to_f64(gd_lsh_f16_to_f32_bits((uint)((GLOBAL const ushort*)weight)[k]));
#else
        const double w = gd_lsh_f32_bits_to_f64(((GLOBAL const uint*)weight)[k]);
#endif
        score = gd_lsh_weighted_add(score, w, h);
#else
        score = GD_LSH_DADD(score, h);
#endif
    }
    bits[idx] = score > 0.0 ? 1 : 0;
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT bits, GLOBAL int* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${NUM_HASH}) return;
    uint sig = 0;
    for (int j = 0; j < ${NUM_BITS}; ++j) sig = (sig << 1) | (uint)(bits[i * ${NUM_BITS} + j] & 1);
#if ${LSH_TYPE} == 3
    sig += (uint)((uint64)i << ${NUM_BITS});
#endif
    out[i] = (int)sig;
}
#endif
