/* L2_NORMALIZATION along an axis: tensor [OUTER, AXIS, INNER], one work item per (outer, inner) row.
 * float: out = x / max(sqrt(Σx²), EPS).
 * QUANT: v = q - ZX; out = clamp(ZO + round(128·v / sqrt(Σv²)), QMIN, QMAX) (fp32; ±1 of the
 * reference's fixed-point inverse square root); Σv² <= 1 gives ZO + 128·v saturated like the reference. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int r = GLOBAL_ID(0);
    if (r >= ${OUTER} * ${INNER}) return;
    const int base = (r / ${INNER}) * ${AXIS} * ${INNER} + (r % ${INNER});
#if ${QUANT}
    int ss = 0;
    for (int k = 0; k < ${AXIS}; ++k) {
        const int v = (int)in[base + k * ${INNER}] - ${ZX};
        ss += v * v;
    }
    const float inv = ss > 1 ? 128.0f / sqrt((float)ss) : 128.0f;
    for (int k = 0; k < ${AXIS}; ++k) {
        const int v = (int)in[base + k * ${INNER}] - ${ZX};
        out[base + k * ${INNER}] = (${T})clamp((int)ROUND((float)v * inv) + ${ZO}, ${QMIN}, ${QMAX});
    }
#else
    float ss = 0.0f;
    for (int k = 0; k < ${AXIS}; ++k) {
        const float v = in[base + k * ${INNER}];
        ss += v * v;
    }
    const float norm = fmax(sqrt(ss), ${EPS});
    for (int k = 0; k < ${AXIS}; ++k) out[base + k * ${INNER}] = in[base + k * ${INNER}] / norm;
#endif
}
