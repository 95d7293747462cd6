/* LOCAL_RESPONSE_NORMALIZATION (float; ${LOAD} / ${STORE}: float or half storage): tensor
 * [OUTER, AXIS, INNER], one work item per element;
 * out[i] = x[i] · (BIAS + ALPHA · Σ_{|j-i| <= RADIUS, in range} x[j]²)^(-BETA). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    const int a = (idx / ${INNER}) % ${AXIS};
    const int base = idx - a * ${INNER};
    const int lo = max(a - ${RADIUS}, 0);
    const int hi = min(a + ${RADIUS}, ${AXIS} - 1);
    float s = 0.0f;
    for (int j = lo; j <= hi; ++j) {
        const float v = ${LOAD}(in, base + j * ${INNER});
        s += v * v;
    }
    ${STORE}(out, idx, ${LOAD}(in, idx) * pow(${BIAS} + ${ALPHA} * s, -(${BETA})));
}
