/* SOFTMAX along one axis: the tensor is [OUTER, AXIS, INNER]; one work item per (outer, inner) row.
 * float: out = exp((x - max)·BETA) / Σ exp((x - max)·BETA).
 * QUANT: the differences q - max(q) ∈ [-255, 0] index a table of exp(d·s_in·β) (float, made at
 * lowering); out = clamp(ZO + round(e / Σe · 256), QMIN, QMAX) (fixed output scale 1/256). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in,
#if ${QUANT}
                           GLOBAL const float* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int r = GLOBAL_ID(0);
    if (r >= ${OUTER} * ${INNER}) return;
    const int base = (r / ${INNER}) * ${AXIS} * ${INNER} + (r % ${INNER});
#if ${QUANT}
    int m = 0;
    for (int k = 0; k < ${AXIS}; ++k) m = max(m, (int)in[base + k * ${INNER}]);
    float sum = 0.0f;
    for (int k = 0; k < ${AXIS}; ++k) sum += table[(int)in[base + k * ${INNER}] - m + 255];
    const float inv = 256.0f / sum;
    for (int k = 0; k < ${AXIS}; ++k) {
        const float p = table[(int)in[base + k * ${INNER}] - m + 255] * inv;
        out[base + k * ${INNER}] = (${T})clamp((int)ROUND(p) + ${ZO}, ${QMIN}, ${QMAX});
    }
#else
    float m = -INFINITY;
    for (int k = 0; k < ${AXIS}; ++k) m = fmax(m, in[base + k * ${INNER}]);
    float sum = 0.0f;
    for (int k = 0; k < ${AXIS}; ++k) {
        const float e = exp((in[base + k * ${INNER}] - m) * ${BETA});
        out[base + k * ${INNER}] = e;
        sum += e;
    }
    for (int k = 0; k < ${AXIS}; ++k) out[base + k * ${INNER}] = out[base + k * ${INNER}] / sum;
#endif
}
