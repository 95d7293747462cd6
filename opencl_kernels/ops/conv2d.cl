/* CONV_2D, NHWC, direct convolution with a register tile of PX output pixels x CB output channels.
 * Work item (GLOBAL_ID 0, 1, 2) = (channel block, pixel block, n*OH + oy); with GEMM = 1 (1x1 filter,
 * stride 1, no padding) the pixel block runs over the flattened N*OH*OW pixels (dimension 2 is 1).
 * w: repacked at lowering to [KH][KW][CI][COP] (COP = output channels rounded up to CB, zero padded),
 *    ACC_T = float, or int holding (q_w - zp_w).   bias: [COP] ACC_T.
 * QUANT: qp = [COP multipliers, COP shifts]; out = clamp(ZO + MBQM(acc, m, s), ACT_MIN, ACT_MAX). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${ACC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${QUANT}
                           GLOBAL const int* RESTRICT qp,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${COB} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int co0 = cb * ${CB};
    ${ACC_T} acc[${PX}][${CB}];
    for (int j = 0; j < ${CB}; ++j) {
        const ${ACC_T} b0 = bias[co0 + j];
        for (int p = 0; p < ${PX}; ++p) acc[p][j] = b0;
    }
#if ${GEMM}
    int off[${PX}];
    for (int p = 0; p < ${PX}; ++p) off[p] = min(pb * ${PX} + p, ${NPIX} - 1) * ${CI};
    for (int ci = 0; ci < ${CI}; ++ci) {
        ${ACC_T} wv[${CB}];
        for (int j = 0; j < ${CB}; ++j) wv[j] = w[ci * ${COP} + co0 + j];
        for (int p = 0; p < ${PX}; ++p) {
            const ${ACC_T} x = (${ACC_T})in[off[p] + ci] - (${ACC_T})${ZX};
            for (int j = 0; j < ${CB}; ++j) acc[p][j] += x * wv[j];
        }
    }
#else
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int ox0 = pb * ${PX};
    for (int ky = 0; ky < ${KH}; ++ky) {
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        if (iy < 0 || iy >= ${H}) continue;
        for (int kx = 0; kx < ${KW}; ++kx) {
            int off[${PX}];
            int ok[${PX}];
            for (int p = 0; p < ${PX}; ++p) {
                const int ix = (ox0 + p) * ${SW} - ${PL} + kx * ${DW};
                ok[p] = ix >= 0 && ix < ${W};
                off[p] = ((n * ${H} + iy) * ${W} + (ok[p] ? ix : 0)) * ${CI};
            }
            const int wbase = (ky * ${KW} + kx) * ${CI} * ${COP} + co0;
            for (int ci = 0; ci < ${CI}; ++ci) {
                ${ACC_T} wv[${CB}];
                for (int j = 0; j < ${CB}; ++j) wv[j] = w[wbase + ci * ${COP} + j];
                for (int p = 0; p < ${PX}; ++p) {
                    const ${ACC_T} x = ok[p] ? (${ACC_T})in[off[p] + ci] - (${ACC_T})${ZX} : (${ACC_T})0;
                    for (int j = 0; j < ${CB}; ++j) acc[p][j] += x * wv[j];
                }
            }
        }
    }
#endif
    for (int p = 0; p < ${PX}; ++p) {
#if ${GEMM}
        const int pix = pb * ${PX} + p;
        if (pix >= ${NPIX}) break;
        const int obase = pix * ${CO};
#else
        const int ox = ox0 + p;
        if (ox >= ${OW}) break;
        const int obase = ((n * ${OH} + oy) * ${OW} + ox) * ${CO};
#endif
        for (int j = 0; j < ${CB}; ++j) {
            const int co = co0 + j;
            if (co >= ${CO}) break;
#if ${QUANT}
            const int q = ${ZO} + MBQM(acc[p][j], qp[co], qp[${COP} + co]);
            out[obase + co] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#else
            float v = acc[p][j];
#if ${HAS_ACT}
            v = fmin(fmax(v, ${ACT_FMIN}), ${ACT_FMAX});
#endif
            out[obase + co] = v;
#endif
        }
    }
}
