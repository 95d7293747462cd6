/* AVERAGE / MAX / L2 pooling, NHWC: work item = (channel c, output x, n*OH + oy).
 * KIND 0 average, 1 max, 2 l2.  Only in-bounds cells take part (operands.md §5).
 * QUANT: average = integer sum s of stored values over n cells, (s + n/2) / n (s >= 0 for uchar);
 * max = max of stored values; then clamp [ACT_MIN, ACT_MAX].
 * float: max is AOSP's acc = std::max(acc, x) = acc < x ? x : acc from -FLT_MAX (NaN cells never win);
 * the fused clamp is std::min(std::max(acc, ACT_FMIN), ACT_FMAX) (a NaN goes through). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int c = GLOBAL_ID(0);
    const int ox = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (c >= ${C} || ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int y0 = oy * ${SH} - ${PT};
    const int x0 = ox * ${SW} - ${PL};
    const int ys = max(y0, 0), ye = min(y0 + ${KH}, ${H});
    const int xs = max(x0, 0), xe = min(x0 + ${KW}, ${W});
    const int o = ((n * ${OH} + oy) * ${OW} + ox) * ${C} + c;
#if ${QUANT}
#if ${KIND} == 1
    int acc = 0;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) acc = max(acc, (int)in[((n * ${H} + iy) * ${W} + ix) * ${C} + c]);
    out[o] = (${T})clamp(acc, ${ACT_MIN}, ${ACT_MAX});
#else
    int acc = 0;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) acc += (int)in[((n * ${H} + iy) * ${W} + ix) * ${C} + c];
    const int cnt = (ye - ys) * (xe - xs);
    const int q = (acc + cnt / 2) / cnt;
    out[o] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#endif
#else
#if ${KIND} == 1
    float acc = -FLT_MAX;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            const float v = in[((n * ${H} + iy) * ${W} + ix) * ${C} + c];
            acc = acc < v ? v : acc;
        }
#else
    float acc = 0.0f;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            const float v = in[((n * ${H} + iy) * ${W} + ix) * ${C} + c];
#if ${KIND} == 2
            acc += v * v;
#else
            acc += v;
#endif
        }
    const float cnt = (float)((ye - ys) * (xe - xs));
#if ${KIND} == 2
    acc = sqrt(acc / cnt);
#else
    acc = acc / cnt;
#endif
#endif
#if ${HAS_ACT}
    acc = acc < ${ACT_FMIN} ? ${ACT_FMIN} : acc;
    acc = ${ACT_FMAX} < acc ? ${ACT_FMAX} : acc;
#endif
    out[o] = acc;
#endif
}
