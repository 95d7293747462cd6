/* AVERAGE / MAX / L2 pooling: work item = (channel c, output x, n*OH + oy).
 * Element (n, y, x, c) of the input is in[n*XN + y*XY + x*XX + c*XC], of the output
 * out[n*ON + y*OY + x*OX + c*OC] (the strides encode NHWC or NCHW).
 * KIND 0 average, 1 max, 2 l2.  Only in-bounds cells take part (operands.md §5).
 * QUANT: average = integer sum s of stored values over n cells, rounded half away from zero
 * ((s + n/2) / n, or (s - n/2) / n for s < 0: C division truncates); max = max of stored values;
 * then clamp [ACT_MIN, ACT_MAX].
 * float (LOAD/STORE read and write float16 or float32 storage as float): max is AOSP's
 * acc = std::max(acc, x) = acc < x ? x : acc from -FLT_MAX (NaN cells never win);
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
    GLOBAL const ${T}* xc = in + n * ${XN} + c * ${XC};
    const int o = n * ${ON} + oy * ${OY} + ox * ${OX} + c * ${OC};
#if ${QUANT}
#if ${KIND} == 1
    int acc = -2147483647 - 1;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) acc = max(acc, (int)xc[iy * ${XY} + ix * ${XX}]);
    out[o] = (${T})clamp(acc, ${ACT_MIN}, ${ACT_MAX});
#else
    int acc = 0;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) acc += (int)xc[iy * ${XY} + ix * ${XX}];
    const int cnt = (ye - ys) * (xe - xs);
    const int q = acc >= 0 ? (acc + cnt / 2) / cnt : (acc - cnt / 2) / cnt;
    out[o] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#endif
#else
#if ${KIND} == 1
    float acc = -FLT_MAX;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            const float v = ${LOAD}(xc, iy * ${XY} + ix * ${XX});
            acc = acc < v ? v : acc;
        }
#else
    float acc = 0.0f;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            const float v = ${LOAD}(xc, iy * ${XY} + ix * ${XX});
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
    ${STORE}(out, o, acc);
#endif
}
