/* L2_NORMALIZATION along an axis: tensor [OUTER, AXIS, INNER], one work item per (outer, inner) row.
 * float (${LOAD} / ${STORE}: float or half storage): out = x / max(sqrt(Σx²), EPS).
 * QUANT (exact TFLite integer path): v = q - ZX; (m, s) = GetInvSqrtQuantizedMultiplierExp(Σv²) with
 * its right shift s >= 0; out = clamp(RDBPOT(SRDHM(128·v, m), s) + ZO, QMIN, QMAX). */
#ifndef GD_HELPERS_L2NORM
#define GD_HELPERS_L2NORM
/* gemmlowp SaturatingRoundingMultiplyByPOT<e>: e > 0 saturating left shift, e < 0 rounding right shift */
DEVICE_FN int gd_l2_mul_pot(int x, int e) {
    if (e < 0) return RDBPOT(x, -e);
    const int threshold = (int)(((int64)1 << (31 - e)) - 1);
    if (x > threshold) return INT_MAX;
    if (x < -threshold) return INT_MIN;
    return (int)((uint)x << e);
}
/* GetInvSqrtQuantizedMultiplierExp(input, reverse_shift = -1): 1/sqrt(input) = m·2^(-s) */
DEVICE_FN void gd_l2_inv_sqrt(int input, int* m, int* s) {
    if (input <= 1) { *m = INT_MAX; *s = 0; return; }
    int shift = 11;
    while (input >= (1 << 29)) { input /= 4; ++shift; }
    int clz = 0;
    for (uint v = (uint)input; !(v & 0x80000000u); v <<= 1) ++clz;
    const int pairs = (clz - 1) / 2 - 1;
    shift -= pairs;
    input <<= 2 * pairs;
    const int half_input = RDBPOT(input >> 1, 1);                 /* Q3.28 input / 2 */
    const int half_three = (1 << 28) + (1 << 27);
    int x = 1 << 28;
    for (int k = 0; k < 5; ++k) {
        const int x3 = gd_l2_mul_pot(SRDHM(SRDHM(x, x), x), 6);
        x = gd_l2_mul_pot((int)((uint)SRDHM(half_three, x) - (uint)SRDHM(half_input, x3)), 3);
    }
    x = SRDHM(x, 1518500250);                                    /* · sqrt(2)/2 */
    if (shift < 0) { x = (int)((uint)x << -shift); shift = 0; }
    *m = x;
    *s = shift;
}
#endif

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int r = GLOBAL_ID(0);
    if (r >= ${OUTER} * ${INNER}) return;
    const int base = (r / ${INNER}) * ${AXIS} * ${INNER} + (r % ${INNER});
#if ${QUANT}
    int ss = 0;
    for (int k = 0; k < ${AXIS}; ++k) {
        const int v = (int)in[base + k * ${INNER}] - (${ZX});
        ss += v * v;
    }
    int m, s;
    gd_l2_inv_sqrt(ss, &m, &s);
    for (int k = 0; k < ${AXIS}; ++k) {
        const int v = (int)in[base + k * ${INNER}] - (${ZX});
        out[base + k * ${INNER}] = (${T})clamp(RDBPOT(SRDHM(128 * v, m), s) + (${ZO}), ${QMIN}, ${QMAX});
    }
#else
    float ss = 0.0f;
    for (int k = 0; k < ${AXIS}; ++k) {
        const float v = ${LOAD}(in, base + k * ${INNER});
        ss += v * v;
    }
    const float norm = fmax(sqrt(ss), ${EPS});
    for (int k = 0; k < ${AXIS}; ++k) ${STORE}(out, base + k * ${INNER}, ${LOAD}(in, base + k * ${INNER}) / norm);
#endif
}
