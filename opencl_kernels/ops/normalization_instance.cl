/* INSTANCE_NORMALIZATION: one work item per (n, c) plane of HW elements, stored NHWC (element k of
 * the plane at n·HW·C + k·C + c) or NCHW (at (n·C + c)·HW + k); ${LOAD} / ${STORE}: float or half
 * storage, computed in float.  out = (x − mean)·GAMMA/sqrt(var + EPS) + BETA, population variance. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int plane = GLOBAL_ID(0);
    if (plane >= ${N} * ${C}) return;
    const int n = plane / ${C};
    const int c = plane - n * ${C};
#if ${NCHW}
    const int base = plane * ${HW};
    const int step = 1;
#else
    const int base = n * ${HW} * ${C} + c;
    const int step = ${C};
#endif
    float mean = 0.0f;
    for (int k = 0; k < ${HW}; ++k) mean += ${LOAD}(in, base + k * step);
    mean /= (float)${HW};
    float var = 0.0f;
    for (int k = 0; k < ${HW}; ++k) {
        const float v = ${LOAD}(in, base + k * step) - mean;
        var += v * v;
    }
    const float sigma = sqrt(var / (float)${HW} + ${EPS});
    for (int k = 0; k < ${HW}; ++k)
        ${STORE}(out, base + k * step, (${LOAD}(in, base + k * step) - mean) * ${GAMMA} / sigma + ${BETA});
}
