/* GEMM with constant packed weights, the kernel of 1x1 CONV_2D (stride 1, no padding: rows = the
 * N*H*W pixels, K = input channels) and FULLY_CONNECTED (rows = batch rows, K = input size):
 *     out[m, n] = act(bias[n] + sum_k (a[m, k] - ZX) * w[n, k]),  a [M][K] T, out [M][N] OUT_T.
 * Work item (GLOBAL_ID 0, 1) = (block of NB columns, block of MB rows): register tile acc[MB][NB].
 * w: repacked at lowering to [NBLOCKS][K][NB] (columns padded to NBLOCKS*NB with zeros), so a work
 *    item streams its weights at unit stride and the NB-wide weight row is one vector (SLP); MAC_T
 *    (the type of the products and their sum) = float, or for quant8 int holding (q_w - zp_w), or
 *    float holding it where every partial sum is an integer below 2^24 (exact; faster on CPUs).
 *    bias: [NBLOCKS*NB] ACC_T (float or int), added after the sum.
 * The reduction runs in order over k (unrolling it measured slower on PoCL); every tile loop has a
 * literal trip count and is unrolled, so PoCL keeps the accumulators in registers.  Rows past M
 * read row M-1 (clamped address) and are not stored.
 * QUANT: out (OUT_T = int) receives the int32 sums with the bias; conv_requantize.cl requantizes them.
 * Otherwise OUT_T = T = float. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT a, GLOBAL const ${MAC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias, GLOBAL ${OUT_T}* RESTRICT out) {
    const int nb = GLOBAL_ID(0);
    const int mb = GLOBAL_ID(1);
    if (nb >= ${NBLOCKS} || mb >= ${MBLOCKS}) return;
    const int n0 = nb * ${NB};
    GLOBAL const ${MAC_T}* RESTRICT wb = w + nb * (${K} * ${NB});
    GLOBAL const ${T}* RESTRICT ar[${MB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
        const int m = mb * ${MB} + r;
        ar[r] = a + (m < ${M} ? m : ${M} - 1) * ${K};
    }
    ${MAC_T} acc[${MB}][${NB}];
#pragma unroll
    for (int j = 0; j < ${NB}; ++j) {
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) acc[r][j] = (${MAC_T})0;
    }
    for (int k = 0; k < ${K}; ++k) {
        ${MAC_T} wv[${NB}];
#pragma unroll
        for (int j = 0; j < ${NB}; ++j) wv[j] = wb[k * ${NB} + j];
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) {
            const ${MAC_T} x = (${MAC_T})ar[r][k] - (${MAC_T})${ZX};
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
            out[m * ${N} + n] = (int)acc[r][j] + bias[n];   /* conv_requantize.cl finishes */
#else
            float v = acc[r][j] + bias[n];
#if ${HAS_ACT}
            v = v < ${ACT_FMIN} ? ${ACT_FMIN} : v;   /* std::min(std::max(v, lo), hi): a NaN goes through */
            v = ${ACT_FMAX} < v ? ${ACT_FMAX} : v;
#endif
            out[m * ${N} + n] = v;
#endif
        }
    }
}
