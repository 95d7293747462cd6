/* GEMM with constant packed weights, the kernel of 1x1 CONV_2D (stride 1, no padding: rows = the
 * N*H*W pixels, K = input channels) and FULLY_CONNECTED (rows = batch rows, K = input size):
 *     out[m, n] = act(bias[n] + sum_k (a[m, k] - ZX) * w[n, k]),  a [M][K] ${T}, out [M][N] ${T}.
 * Work item (GLOBAL_ID 0, 1) = (block of NB columns, block of MB rows): register tile acc[MB][NB].
 * w: repacked at lowering to [NBLOCKS][K][NB] (columns padded to NBLOCKS*NB with zeros), so a work
 *    item streams its weights at unit stride and the NB-wide weight row is one vector (SLP); ACC_T =
 *    float, or int holding (q_w - zp_w).  bias: [NBLOCKS*NB] ACC_T.
 * The reduction runs in order over k (unrolling it measured slower on PoCL); every tile loop has a
 * literal trip count and is unrolled, so PoCL keeps the accumulators in registers.  Rows past M
 * read row M-1 (clamped address) and are not stored.
 * QUANT: qp = [NBLOCKS*NB multipliers, NBLOCKS*NB shifts];
 *        out = clamp(ZO + MBQM(acc, m, s), ACT_MIN, ACT_MAX). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT a, GLOBAL const ${ACC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${QUANT}
                           GLOBAL const int* RESTRICT qp,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int nb = GLOBAL_ID(0);
    const int mb = GLOBAL_ID(1);
    if (nb >= ${NBLOCKS} || mb >= ${MBLOCKS}) return;
    const int n0 = nb * ${NB};
    GLOBAL const ${ACC_T}* RESTRICT wb = w + nb * (${K} * ${NB});
    GLOBAL const ${T}* RESTRICT ar[${MB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
        const int m = mb * ${MB} + r;
        ar[r] = a + (m < ${M} ? m : ${M} - 1) * ${K};
    }
    ${ACC_T} acc[${MB}][${NB}];
#pragma unroll
    for (int j = 0; j < ${NB}; ++j) {
        const ${ACC_T} b0 = bias[n0 + j];
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) acc[r][j] = b0;
    }
    for (int k = 0; k < ${K}; ++k) {
        ${ACC_T} wv[${NB}];
#pragma unroll
        for (int j = 0; j < ${NB}; ++j) wv[j] = wb[k * ${NB} + j];
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) {
            const ${ACC_T} x = (${ACC_T})ar[r][k] - (${ACC_T})${ZX};
#pragma unroll
            for (int j = 0; j < ${NB}; ++j) acc[r][j] += x * wv[j];
        }
    }
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
        const int m = mb * ${MB} + r;
#if ${M} % ${MB}
        if (m >= ${M}) break;                    /* partial last row block */
#endif
#pragma unroll
        for (int j = 0; j < ${NB}; ++j) {
            const int n = n0 + j;
#if ${N} % ${NB}
            if (n >= ${N}) break;                /* partial last column block */
#endif
#if ${QUANT}
            int q = ${ZO} + MBQM(acc[r][j], qp[n], qp[${NBLOCKS} * ${NB} + n]);
            q = q < ${ACT_MIN} ? ${ACT_MIN} : q;
            q = q > ${ACT_MAX} ? ${ACT_MAX} : q;
            out[m * ${N} + n] = (${T})q;
#else
            float v = acc[r][j];
#if ${HAS_ACT}
            v = v < ${ACT_FMIN} ? ${ACT_FMIN} : v;   /* std::min(std::max(v, lo), hi): a NaN goes through */
            v = ${ACT_FMAX} < v ? ${ACT_FMAX} : v;
#endif
            out[m * ${N} + n] = v;
#endif
        }
    }
}
