/* DEPTHWISE_CONV_2D, NHWC: work item = (output channel co, pixel block of PX along x, n*OH + oy).
 * Input channel = co / M.  w: [KH][KW][CO] ACC_T (float, or int q_w - zp_w); bias [CO] ACC_T.
 * QUANT: qp = [CO multipliers, CO shifts]. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${ACC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${QUANT}
                           GLOBAL const int* RESTRICT qp,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int co = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (co >= ${CO} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int ci = co / ${M};
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int ox0 = pb * ${PX};
    ${ACC_T} acc[${PX}];
    for (int p = 0; p < ${PX}; ++p) acc[p] = bias[co];
    for (int ky = 0; ky < ${KH}; ++ky) {
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        if (iy < 0 || iy >= ${H}) continue;
        const int rbase = (n * ${H} + iy) * ${W};
        for (int kx = 0; kx < ${KW}; ++kx) {
            const ${ACC_T} wv = w[(ky * ${KW} + kx) * ${CO} + co];
            for (int p = 0; p < ${PX}; ++p) {
                const int ix = (ox0 + p) * ${SW} - ${PL} + kx * ${DW};
                const int ok = ix >= 0 && ix < ${W};
                const ${ACC_T} x = ok ? (${ACC_T})in[(rbase + (ok ? ix : 0)) * ${CI} + ci] - (${ACC_T})${ZX}
                                      : (${ACC_T})0;
                acc[p] += x * wv;
            }
        }
    }
    for (int p = 0; p < ${PX}; ++p) {
        const int ox = ox0 + p;
        if (ox >= ${OW}) break;
        const int o = ((n * ${OH} + oy) * ${OW} + ox) * ${CO} + co;
#if ${QUANT}
        const int q = ${ZO} + MBQM(acc[p], qp[co], qp[${CO} + co]);
        out[o] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#else
        float v = acc[p];
#if ${HAS_ACT}
        v = fmin(fmax(v, ${ACT_FMIN}), ${ACT_FMAX});
#endif
        out[o] = v;
#endif
    }
}
