/* Float AVERAGE / MAX / L2 pooling whose one window is the whole image (no padding), in two launches:
 * STAGE 1: work item = (channel block cb, chunk g, n): the CB channels cb*CB .. cb*CB + CB - 1 (CB
 *    divides C) over image rows g*RC .. min(g*RC + RC, H) - 1, accumulated side by side (the
 *    fixed-length channel loop inside the pixel loops, which PoCL vectorises; NHWC: consecutive
 *    channels contiguous), into part[(n*G + g)*C + c]: the sum (KIND 0), the largest value (1: AOSP's
 *    acc < x ? x : acc from -FLT_MAX, NaN cells never win) or the sum of squares (2).
 * STAGE 2: work item = (c, n): the G chunks' partials combined in chunk order, then the sum / H*W
 *    (average), the maximum, or sqrt(sum / H*W) (l2); FUSED_CLAMP (activations.h; a NaN goes
 *    through) and out[n*ON + c*OC] (STORE writes float16 or float32 storage).
 * One work item per image and channel block would read the whole image alone (pooling.cl); the chunks
 * spread it over the compute units.  Input element (n, y, x, c) is in[n*XN + y*XY + x*XX + c]. */
#if ${STAGE} == 1
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL float* RESTRICT part) {
    const int cb = GLOBAL_ID(0);
    const int g = GLOBAL_ID(1);
    const int n = GLOBAL_ID(2);
    if (cb >= ${C} / ${CB} || g >= ${G} || n >= ${N}) return;
    const int ys = g * ${RC}, ye = min(ys + ${RC}, ${H});
    GLOBAL const ${T}* xc = in + n * ${XN} + cb * ${CB};
    float acc[${CB}];
    for (int j = 0; j < ${CB}; ++j) acc[j] = ${KIND} == 1 ? -FLT_MAX : 0.0f;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = 0; ix < ${W}; ++ix) {
            const int p = iy * ${XY} + ix * ${XX};
            for (int j = 0; j < ${CB}; ++j) {
                const float v = ${LOAD}(xc, p + j);
                POOL_ACCUMULATE(${KIND}, acc[j], v);
            }
        }
    GLOBAL float* o = part + (n * ${G} + g) * ${C} + cb * ${CB};
    for (int j = 0; j < ${CB}; ++j) o[j] = acc[j];
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT part, GLOBAL ${T}* RESTRICT out) {
    const int c = GLOBAL_ID(0);
    const int n = GLOBAL_ID(1);
    if (c >= ${C} || n >= ${N}) return;
    GLOBAL const float* p = part + n * ${G} * ${C} + c;
    float acc = ${KIND} == 1 ? -FLT_MAX : 0.0f;
    for (int g = 0; g < ${G}; ++g) {
        const float v = p[g * ${C}];
#if ${KIND} == 1
        acc = acc < v ? v : acc;
#else
        acc += v;
#endif
    }
#if ${KIND} == 2
    float r = sqrt(acc / (float)(${H} * ${W}));
#elif ${KIND} == 0
    float r = acc / (float)(${H} * ${W});
#else
    float r = acc;
#endif
#if ${HAS_ACT}
    FUSED_CLAMP(r, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW});
#endif
    ${STORE}(out, n * ${ON} + c * ${OC}, r);
}
#endif
