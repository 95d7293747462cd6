/* gpu_driver shared kernel dialect: quantised fixed-point helpers (operands.md §8.3), written once for
 * both dialects; code generation appends this file to the dialect prelude (see prelude.h). */
#ifndef GD_FIXED_POINT
#define GD_FIXED_POINT

/* ---- quantised fixed point (operands.md §8.3) ---- */
DEVICE_FN int SRDHM(int a, int b) {
    if (a == INT_MIN && b == INT_MIN) return INT_MAX;
    int64 p = (int64)a * (int64)b;
    int64 nudge = p >= 0 ? ((int64)1 << 30) : ((int64)1 - ((int64)1 << 30));
    return (int)((p + nudge) / ((int64)1 << 31)); /* C division truncates */
}

DEVICE_FN int RDBPOT(int x, int e) {
    int64 mask = ((int64)1 << e) - 1;
    int64 rem = (int64)x & mask;
    int64 thr = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int)(((int64)x >> e) + (rem > thr ? 1 : 0));
}

DEVICE_FN int MBQM(int x, int m, int shift) {
    int l = shift > 0 ? shift : 0;
    int r = shift > 0 ? 0 : -shift;
    int64 xl = (int64)x << l;
    xl = xl > (int64)INT_MAX ? (int64)INT_MAX : (xl < (int64)INT_MIN ? (int64)INT_MIN : xl);
    return RDBPOT(SRDHM((int)xl, m), r);
}

/* a quantized convolution's int32 sum requantized: zo + MBQM(acc, m, shift) clamped to [lo, hi] */
DEVICE_FN int gd_requantize(int acc, int m, int shift, int zo, int lo, int hi) {
    int q = zo + MBQM(acc, m, shift);
    q = q < lo ? lo : q;
    return q > hi ? hi : q;
}

DEVICE_FN int MBQM_LT1(int x, int m, int shift) { return RDBPOT(SRDHM(x, m), -shift); }

DEVICE_FN int MBQM_GT1(int x, int m, int shift) { return SRDHM((int)((int64)x << shift), m); }

/* gemmlowp SaturatingRoundingMultiplyByPOT<e> on int32: e > 0 saturating left shift, e <= 0 rounding
 * right shift */
DEVICE_FN int gd_mul_pot(int x, int e) {
    if (e <= 0) return RDBPOT(x, -e);
    const int threshold = (int)(((int64)1 << (31 - e)) - 1);
    return x > threshold ? INT_MAX : (x < -threshold ? INT_MIN : (int)((uint)x << e));
}

/* TF Lite GetInvSqrtQuantizedMultiplierExp(input, reverse_shift = -1), gemmlowp FixedPoint<int32, 3>
 * Newton steps: 1/sqrt(input) = *m · 2^-*s with *s >= 0 */
DEVICE_FN void gd_inv_sqrt_multiplier(int input, int* m, int* s) {
    if (input <= 1) {
        *m = INT_MAX;
        *s = 0;
        return;
    }
    int shift = 11;
    while (input >= (1 << 29)) {
        input /= 4;
        ++shift;
    }
    int clz = 0;
    for (uint v = (uint)input; !(v & 0x80000000u); v <<= 1) ++clz;
    const int pairs = (clz - 1) / 2 - 1;
    shift -= pairs;
    input <<= 2 * pairs;
    const int half_input = RDBPOT(input >> 1, 1);                 /* Q3.28 input / 2 */
    const int half_three = (1 << 28) + (1 << 27);
    int x = 1 << 28;
    for (int k = 0; k < 5; ++k) {                                 /* x = x·(3/2 - input/2·x²) */
        const int x3 = gd_mul_pot(SRDHM(SRDHM(x, x), x), 6);
        x = gd_mul_pot((int)((uint)SRDHM(half_three, x) - (uint)SRDHM(half_input, x3)), 3);
    }
    x = SRDHM(x, 1518500250);                                    /* · sqrt(2)/2 */
    if (shift < 0) {
        x = (int)((uint)x << -shift);
        shift = 0;
    }
    *m = x;
    *s = shift;
}

#endif /* GD_FIXED_POINT */
