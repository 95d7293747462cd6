/* SOFTMAX / LOG_SOFTMAX along one axis: the tensor is [OUTER, AXIS, INNER]; one work item per
 * (outer, inner) row (gpu_driver/ops/activation.py SoftmaxParams), or with GROUP one work group of
 * 16 x 16 work items per row (GROUP_ID(0)), each taking every 256th element, the row's max and sum
 * reduced through local memory (a GPU, with too few rows to fill it).
 * float (${LOAD} / ${STORE}: float or half storage), m = max over the row, d = (x - m)·BETA:
 *   LOG 0: out = exp(d) / Σ exp(d) (gd_exp);   LOG 1: out = d - log(Σ exp(d)).
 * QUANT (exact TFLite fixed point): table[q - max(q) + 255] holds the Q0.31 exponential of each
 * difference (-1: below diff_min, takes no part and outputs QMIN);
 * sum = Σ RDBPOT(e, 12) (int32, wrapping); h = clz(sum); s = 1/(1 + x) of (sum << h) - 2^31;
 * out = clamp(RDBPOT(SRDHM(s, e), 35 - h) + ZO, QMIN, QMAX) (fixed output scale 1/256). */
#ifndef GD_HELPERS_SOFTMAX
#define GD_HELPERS_SOFTMAX
/* gemmlowp SaturatingRoundingMultiplyByPOT<e> for e > 0 */
DEVICE_FN int gd_sm_mul_pot(int x, int e) {
    const int threshold = (int)(((int64)1 << (31 - e)) - 1);
    if (x > threshold) return INT_MAX;
    if (x < -threshold) return INT_MIN;
    return (int)((uint)x << e);
}
DEVICE_FN int gd_sm_wrap_add(int a, int b) { return (int)((uint)a + (uint)b); }
DEVICE_FN int gd_sm_wrap_sub(int a, int b) { return (int)((uint)a - (uint)b); }
/* gemmlowp one_over_one_plus_x_for_x_in_0_1 (Q0.31 in and out): Newton-Raphson on the half denominator */
DEVICE_FN int gd_sm_one_over_one_plus_x(int a) {
    const int64 s = (int64)a + (int64)INT_MAX;
    const int half_denominator = (int)((s + (s >= 0 ? 1 : -1)) / 2);
    int x = gd_sm_wrap_add(1515870810, SRDHM(half_denominator, -1010580540));
    for (int k = 0; k < 3; ++k) {
        const int one_minus_dx = gd_sm_wrap_sub(1 << 29, SRDHM(half_denominator, x));
        x = gd_sm_wrap_add(x, gd_sm_mul_pot(SRDHM(x, one_minus_dx), 2));
    }
    return gd_sm_mul_pot(x, 1);
}
DEVICE_FN int gd_sm_clz(int x) {
    int n = 0;
    for (uint v = (uint)x; n < 32 && !(v & 0x80000000u); v <<= 1) ++n;
    return n;
}
#endif

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in,
#if ${QUANT}
                           GLOBAL const int* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out) {
#if ${GROUP}
    /* max and wrapping int sums are exact in any order; float sums round differently from one item's */
    const int k0 = LOCAL_ID(1) * 16 + LOCAL_ID(0), step = 256;
    const int r = GROUP_ID(0);
#if ${QUANT}
    LOCAL int reduced[256];
#else
    LOCAL float reduced[256];
#endif
#define ${KERNEL_NAME}_REDUCE(v, op) { reduced[k0] = (v); BARRIER; \
        for (int s = 128; s > 0; s >>= 1) { if (k0 < s) reduced[k0] = op(reduced[k0], reduced[k0 + s]); BARRIER; } \
        (v) = reduced[0]; BARRIER; }
#else
    const int k0 = 0, step = 1;
    const int r = GLOBAL_ID(0);
    if (r >= ${OUTER} * ${INNER}) return;
#define ${KERNEL_NAME}_REDUCE(v, op)
#endif
#define ${KERNEL_NAME}_ADD(x, y) ((x) + (y))
    const int base = (r / ${INNER}) * ${AXIS} * ${INNER} + (r % ${INNER});
#if ${QUANT}
    int m = INT_MIN;
    for (int k = k0; k < ${AXIS}; k += step) m = max(m, (int)in[base + k * ${INNER}]);
    ${KERNEL_NAME}_REDUCE(m, max)
    int sum = 0;
    for (int k = k0; k < ${AXIS}; k += step) {
        const int e = table[(int)in[base + k * ${INNER}] - m + 255];
        if (e >= 0) sum = gd_sm_wrap_add(sum, RDBPOT(e, 12));
    }
    ${KERNEL_NAME}_REDUCE(sum, gd_sm_wrap_add)
    const int h = gd_sm_clz(sum);
    const int scale = gd_sm_one_over_one_plus_x((int)(((uint)sum << h) - 0x80000000u));
    for (int k = k0; k < ${AXIS}; k += step) {
        const int e = table[(int)in[base + k * ${INNER}] - m + 255];
        const int q = e >= 0 ? clamp(RDBPOT(SRDHM(scale, e), 35 - h) + (${ZO}), ${QMIN}, ${QMAX}) : ${QMIN};
        out[base + k * ${INNER}] = (${T})q;
    }
#else
    float m = -INFINITY;
    for (int k = k0; k < ${AXIS}; k += step) m = fmax(m, ${LOAD}(in, base + k * ${INNER}));
    ${KERNEL_NAME}_REDUCE(m, fmax)
    float sum = 0.0f;
    for (int k = k0; k < ${AXIS}; k += step) sum += gd_exp((${LOAD}(in, base + k * ${INNER}) - m) * ${BETA});
    ${KERNEL_NAME}_REDUCE(sum, ${KERNEL_NAME}_ADD)
#if ${LOG}
    const float log_sum = log(sum);
    for (int k = k0; k < ${AXIS}; k += step)
        ${STORE}(out, base + k * ${INNER}, (${LOAD}(in, base + k * ${INNER}) - m) * ${BETA} - log_sum);
#else
    for (int k = k0; k < ${AXIS}; k += step)
        ${STORE}(out, base + k * ${INNER}, gd_exp((${LOAD}(in, base + k * ${INNER}) - m) * ${BETA}) / sum);
#endif
#endif
}
#undef ${KERNEL_NAME}_REDUCE
#undef ${KERNEL_NAME}_ADD
