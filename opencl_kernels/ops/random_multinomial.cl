/* RANDOM_MULTINOMIAL: one work item per (sample s, row b) of logits [B, C] (${LOAD}: float or half
 * storage).  u = top 24 bits of hash(SEED0 ^ hash(SEED1 ^ hash(b·S + s))) / 2^24; the sample is the
 * first class whose running float sum of exp(logit − max) exceeds u·total (non-finite logits weigh 0). */
#ifndef GD_HELPERS_MULTINOMIAL
#define GD_HELPERS_MULTINOMIAL
DEVICE_FN uint gd_hash32(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}
DEVICE_FN int gd_finite(float v) { return v == v && v - v == 0.0f; }
#endif

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT logits, GLOBAL int* RESTRICT out) {
    const int s = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (s >= ${S} || b >= ${B}) return;
    float top = 0.0f;
    int any = 0;
    for (int c = 0; c < ${C}; ++c) {
        const float v = ${LOAD}(logits, b * ${C} + c);
        if (gd_finite(v) && (!any || v > top)) { top = v; any = 1; }
    }
    float total = 0.0f;
    for (int c = 0; c < ${C}; ++c) {
        const float v = ${LOAD}(logits, b * ${C} + c);
        if (gd_finite(v)) total += exp(v - top);
    }
    const uint bits = gd_hash32(${SEED0} ^ gd_hash32(${SEED1} ^ gd_hash32((uint)(b * ${S} + s))));
    const float target = (float)(bits >> 8) * (1.0f / 16777216.0f) * total;
    float running = 0.0f;
    int pick = ${C} - 1;
    for (int c = 0; c < ${C}; ++c) {
        const float v = ${LOAD}(logits, b * ${C} + c);
        if (gd_finite(v)) running += exp(v - top);
        if (running > target) { pick = c; break; }
    }
    out[b * ${S} + s] = pick;
}
