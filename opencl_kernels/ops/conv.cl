/* CONV_2D, NHWC, direct convolution with a register tile of PX output pixels x CB output channels
 * (1x1 filters with stride 1 and no padding take gemm.cl instead).
 * Work item (GLOBAL_ID 0, 1, 2) = (channel block, pixel block along x, n*OH + oy).
 * w: repacked at lowering to [COB][KH][KW][CI][CB] (output channels rounded up to COB*CB, zero
 *    padded), so each work item streams its own weights at unit stride; MAC_T (the type of the
 *    products and their sum) = float, or for quant8 int holding (q_w - zp_w), or float holding it where
 *    every partial sum is an integer below 2^24 (exact; faster on CPUs).  bias: [COB*CB] ACC_T (float
 *    or int), added after the sum.
 * The tile loops are fully unrolled (#pragma unroll, literal trip counts): PoCL keeps the PX x CB
 * accumulators in registers and the CB-wide weight row becomes one vector (SLP); only the reduction
 * loops remain (with UNROLL_TAPS, few input channels, the filter taps are unrolled too).  Out-of-image taps are masked (clamped address, value selected to 0), not branched.
 * QUANT: out (OUT_T = int) receives the int32 sums with the bias; conv_requantize.cl requantizes them.
 * Otherwise OUT_T = T = float. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${MAC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias, GLOBAL ${OUT_T}* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${COB} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int co0 = cb * ${CB};
    GLOBAL const ${MAC_T}* RESTRICT wb = w + cb * (${KH} * ${KW} * ${CI} * ${CB});
    ${MAC_T} acc[${PX}][${CB}];
#pragma unroll
    for (int j = 0; j < ${CB}; ++j) {
#pragma unroll
        for (int p = 0; p < ${PX}; ++p) acc[p][j] = (${MAC_T})0;
    }
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int ox0 = pb * ${PX};
#if ${UNROLL_TAPS}
#pragma unroll
#endif
    for (int ky = 0; ky < ${KH}; ++ky) {
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        const int oky = iy >= 0 && iy < ${H};
#if ${UNROLL_TAPS}
#pragma unroll
#endif
        for (int kx = 0; kx < ${KW}; ++kx) {
            int off[${PX}];
            int ok[${PX}];
#pragma unroll
            for (int p = 0; p < ${PX}; ++p) {
                const int ix = (ox0 + p) * ${SW} - ${PL} + kx * ${DW};
                ok[p] = oky && ix >= 0 && ix < ${W};
                off[p] = ok[p] ? ((n * ${H} + iy) * ${W} + ix) * ${CI} : 0;
            }
            GLOBAL const ${MAC_T}* RESTRICT wk = wb + (ky * ${KW} + kx) * (${CI} * ${CB});
#if ${UNROLL_TAPS}
#pragma unroll
#endif
            for (int ci = 0; ci < ${CI}; ++ci) {
                ${MAC_T} wv[${CB}];
#pragma unroll
                for (int j = 0; j < ${CB}; ++j) wv[j] = wk[ci * ${CB} + j];
#pragma unroll
                for (int p = 0; p < ${PX}; ++p) {
                    const ${MAC_T} v = (${MAC_T})in[off[p] + ci] - (${MAC_T})${ZX};
                    const ${MAC_T} x = ok[p] ? v : (${MAC_T})0;
#pragma unroll
                    for (int j = 0; j < ${CB}; ++j) acc[p][j] += x * wv[j];
                }
            }
        }
    }
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) {
        const int ox = ox0 + p;
#if !${EXACT}
        if (ox >= ${OW}) break;
#endif
        const int obase = ((n * ${OH} + oy) * ${OW} + ox) * ${CO};
#pragma unroll
        for (int j = 0; j < ${CB}; ++j) {
            const int co = co0 + j;
#if ${CO} % ${CB}
            if (co >= ${CO}) break;              /* partial last channel block */
#endif
#if ${QUANT}
            out[obase + co] = (int)acc[p][j] + bias[co];   /* conv_requantize.cl finishes */
#else
            float v = acc[p][j] + bias[co];
#if ${HAS_ACT}
            FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
            out[obase + co] = v;
#endif
        }
    }
}
