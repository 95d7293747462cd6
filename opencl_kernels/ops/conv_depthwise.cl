/* DEPTHWISE_CONV_2D, NHWC: work item = (output channel co, pixel block of PX along x, n*OH + oy).
 * Consecutive work items are consecutive channels (unit-stride loads and stores), and the body is
 * straight-line (KH, KW, PX are literals; out-of-image taps are masked, never branched around, and
 * the epilogue uses selects rather than fmin/fmax calls), so PoCL vectorises the work-item loop
 * across channels.  Per filter row the RW input columns under the tile are loaded (and masked) once
 * and shared by its KW taps (fewer loads: 1.2x on stride 2).  Input channel = co / M.
 * w: [KH][KW][CO] MAC_T (the type of the products and their sum: float, or for quant8 int holding
 * q_w - zp_w, or float holding it where every partial sum is an integer below 2^24: exact);
 * bias [CO] ACC_T (float or int), added after the sum.
 * QUANT: qp = [CO multipliers, CO shifts]. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${MAC_T}* RESTRICT w,
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
    ${MAC_T} acc[${PX}];
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) acc[p] = (${MAC_T})0;
#pragma unroll
    for (int ky = 0; ky < ${KH}; ++ky) {
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        const int oky = iy >= 0 && iy < ${H};
        const int rbase = (n * ${H} + (oky ? iy : 0)) * ${W};
        /* the input row under the tile, loaded once: RW = (PX - 1) * SW + (KW - 1) * DW + 1 columns */
        ${MAC_T} xr[${RW}];
#pragma unroll
        for (int t = 0; t < ${RW}; ++t) {
            const int ix = ox0 * ${SW} - ${PL} + t;
            const int ok = oky && ix >= 0 && ix < ${W};
            const ${MAC_T} v = (${MAC_T})in[(rbase + (ok ? ix : 0)) * ${CI} + ci] - (${MAC_T})${ZX};
            xr[t] = ok ? v : (${MAC_T})0;
        }
#pragma unroll
        for (int kx = 0; kx < ${KW}; ++kx) {
            const ${MAC_T} wv = w[(ky * ${KW} + kx) * ${CO} + co];
#pragma unroll
            for (int p = 0; p < ${PX}; ++p) acc[p] += xr[p * ${SW} + kx * ${DW}] * wv;
        }
    }
    const ${ACC_T} b0 = bias[co];
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
        out[o] = (${T})gd_requantize((int)acc[p] + b0, qm, qs, ${ZO}, ${ACT_MIN}, ${ACT_MAX});
#else
        float v = acc[p] + b0;
#if ${HAS_ACT}
        FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
        out[o] = v;
#endif
    }
}
