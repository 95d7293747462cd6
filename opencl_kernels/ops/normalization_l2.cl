/* L2_NORMALIZATION along an axis: tensor [OUTER, AXIS, INNER], one work item per (outer, inner) row.
 * float (${LOAD} / ${STORE}: float or half storage): out = x / max(sqrt(Σx²), EPS).
 * QUANT (exact TFLite integer path): v = q - ZX; (m, s) = GetInvSqrtQuantizedMultiplierExp(Σv²)
 * (fixed_point.h gd_inv_sqrt_multiplier) with its right shift s >= 0; out = clamp(RDBPOT(SRDHM(128·v, m), s) + ZO, QMIN, QMAX). */

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
    gd_inv_sqrt_multiplier(ss, &m, &s);
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
