/* DEPTHWISE_CONV_2D, NHWC: work item = (output channel co, pixel block of PX along x, n*OH + oy).
 * Consecutive work items are consecutive channels (unit-stride loads and stores), and the body is
 * straight-line (KH, KW, PX are literals; out-of-image taps are masked, never branched around, and
 * the epilogue uses selects rather than fmin/fmax calls), so PoCL vectorises the work-item loop
 * across channels.  Input channel = co / M.
 * w: [KH][KW][CO] ACC_T (float, or int q_w - zp_w); bias [CO] ACC_T.
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
    const ${ACC_T} b0 = bias[co];
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) acc[p] = b0;
#pragma unroll
    for (int ky = 0; ky < ${KH}; ++ky) {
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        const int oky = iy >= 0 && iy < ${H};
        const int rbase = (n * ${H} + (oky ? iy : 0)) * ${W};
#pragma unroll
        for (int kx = 0; kx < ${KW}; ++kx) {
            const ${ACC_T} wv = w[(ky * ${KW} + kx) * ${CO} + co];
#pragma unroll
            for (int p = 0; p < ${PX}; ++p) {
                const int ix = (ox0 + p) * ${SW} - ${PL} + kx * ${DW};
                const int ok = oky && ix >= 0 && ix < ${W};
                const ${ACC_T} v = (${ACC_T})in[(rbase + (ok ? ix : 0)) * ${CI} + ci] - (${ACC_T})${ZX};
                acc[p] += (ok ? v : (${ACC_T})0) * wv;
            }
        }
    }
#if ${QUANT}
    const int qm = qp[co];
    const int qs = qp[${CO} + co];
#endif
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) {
        const int ox = ox0 + p;
#if !${EXACT}
        if (ox >= ${OW}) break;                  /* partial last pixel block */
#endif
        const int o = ((n * ${OH} + oy) * ${OW} + ox) * ${CO} + co;
#if ${QUANT}
        int q = ${ZO} + MBQM(acc[p], qm, qs);
        q = q < ${ACT_MIN} ? ${ACT_MIN} : q;
        q = q > ${ACT_MAX} ? ${ACT_MAX} : q;
        out[o] = (${T})q;
#else
        float v = acc[p];
#if ${HAS_ACT}
        v = v < ${ACT_FMIN} ? ${ACT_FMIN} : v;   /* std::min(std::max(v, lo), hi): a NaN goes through */
        v = ${ACT_FMAX} < v ? ${ACT_FMAX} : v;
#endif
        out[o] = v;
#endif
    }
}
