/* AVERAGE / MAX / L2 pooling: work item = (channel block cb, output x, n*OH + oy), the CB channels
 * cb*CB .. cb*CB + CB - 1 (CB divides C) accumulated side by side: the window loops are outside the
 * fixed-length channel loop, which PoCL vectorises (NHWC: consecutive channels are contiguous).
 * Element (n, y, x, c) of the input is in[n*XN + y*XY + x*XX + c*XC], of the output
 * out[n*ON + y*OY + x*OX + c*OC] (the strides encode NHWC or NCHW).
 * KIND 0 average, 1 max, 2 l2.  Only in-bounds cells take part (operands.md §5).
 * QUANT: average = integer sum s of stored values over n cells, rounded half away from zero
 * ((s + n/2) / n, or (s - n/2) / n for s < 0: C division truncates); max = max of stored values;
 * then clamp [ACT_MIN, ACT_MAX].
 * float (LOAD/STORE read and write float16 or float32 storage as float): max is AOSP's
 * acc = std::max(acc, x) = acc < x ? x : acc from -FLT_MAX (NaN cells never win);
 * the fused clamp is FUSED_CLAMP (activations.h; a NaN goes through). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int ox = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${C} / ${CB} || ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int y0 = oy * ${SH} - ${PT};
    const int x0 = ox * ${SW} - ${PL};
    const int ys = max(y0, 0), ye = min(y0 + ${KH}, ${H});
    const int xs = max(x0, 0), xe = min(x0 + ${KW}, ${W});
    GLOBAL const ${T}* xc = in + n * ${XN} + cb * ${CB} * ${XC};
    const int o = n * ${ON} + oy * ${OY} + ox * ${OX} + cb * ${CB} * ${OC};
#if ${QUANT}
#if ${KIND} == 1
    int acc[${CB}];
    for (int j = 0; j < ${CB}; ++j) acc[j] = -2147483647 - 1;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            GLOBAL const ${T}* p = xc + iy * ${XY} + ix * ${XX};
            for (int j = 0; j < ${CB}; ++j) {
                const int v = p[j * ${XC}];
                acc[j] = acc[j] < v ? v : acc[j];
            }
        }
    for (int j = 0; j < ${CB}; ++j) out[o + j * ${OC}] = (${T})clamp(acc[j], ${ACT_MIN}, ${ACT_MAX});
#else
    int acc[${CB}];
    for (int j = 0; j < ${CB}; ++j) acc[j] = 0;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            GLOBAL const ${T}* p = xc + iy * ${XY} + ix * ${XX};
            for (int j = 0; j < ${CB}; ++j) acc[j] += (int)p[j * ${XC}];
        }
    const int cnt = (ye - ys) * (xe - xs);
    for (int j = 0; j < ${CB}; ++j) {
        const int s = acc[j];
        const int q = s >= 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt;
        out[o + j * ${OC}] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
    }
#endif
#else
    float acc[${CB}];
    for (int j = 0; j < ${CB}; ++j) acc[j] = ${KIND} == 1 ? -FLT_MAX : 0.0f;
    for (int iy = ys; iy < ye; ++iy)
        for (int ix = xs; ix < xe; ++ix) {
            const int p = iy * ${XY} + ix * ${XX};
            for (int j = 0; j < ${CB}; ++j) {
                const float v = ${LOAD}(xc, p + j * ${XC});
                POOL_ACCUMULATE(${KIND}, acc[j], v);
            }
        }
#if ${KIND} != 1
    const float cnt = (float)((ye - ys) * (xe - xs));
#endif
    for (int j = 0; j < ${CB}; ++j) {
#if ${KIND} == 2
        float r = sqrt(acc[j] / cnt);
#elif ${KIND} == 0
        float r = acc[j] / cnt;
#else
        float r = acc[j];
#endif
#if ${HAS_ACT}
        FUSED_CLAMP(r, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW});
#endif
        ${STORE}(out, o + j * ${OC}, r);
    }
#endif
}
