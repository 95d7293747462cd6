/* GEMM with constant packed weights, the kernel of 1x1 CONV_2D (stride 1, no padding: rows = the
 * N*H*W pixels, K = input channels) and FULLY_CONNECTED (rows = batch rows, K = input size):
 *     out[m, n] = act(bias[n] + sum_k a[m, k] * w[n, k]),  a [M][K] float, out [M][N] OUT_T.
 * Work item (GLOBAL_ID 0, 1) = (block of NB columns, block of MB rows): register tile acc[MB][NB].
 * w: repacked at lowering to [NBLOCKS][K][NB] float (columns padded to NBLOCKS*NB with zeros), so a
 *    work item streams its weights at unit stride and the NB-wide weight row is one FLOATV (NB = 4, 8
 *    or 16 lanes): each row's accumulators are one vector, on AVX-512 one zmm register.
 *    bias: [NBLOCKS*NB] ACC_T (float, or int for quant8), added after the sum.
 * The reduction runs in order over k (unrolling it measured slower on PoCL); every tile loop has a
 * literal trip count and is unrolled, so PoCL keeps the accumulators in registers.  Rows past M
 * read row M-1 (clamped address) and are not stored.
 * QUANT (quant8): a holds the centred inputs (q - zp, conv_centre.cl) and w the centred weights, as
 * floats; every run of KC products sums exactly in float (each partial sum an integer below 2^24),
 * and with CHUNKED (KC < K) the runs' sums are added up in int.  out (OUT_T = int) receives the
 * int32 sums with the bias; conv_requantize.cl requantizes them.  Otherwise OUT_T = float.
 * RESIDUAL (float): res [M][N] float is added to each sum before the activation (a fused ADD). */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT a, GLOBAL const float* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${RESIDUAL}
                           GLOBAL const float* RESTRICT res,
#endif
                           GLOBAL ${OUT_T}* RESTRICT out) {
    const int nb = GLOBAL_ID(0);
    const int mb = GLOBAL_ID(1);
    if (nb >= ${NBLOCKS} || mb >= ${MBLOCKS}) return;
    const int n0 = nb * ${NB};
    GLOBAL const float* RESTRICT wb = w + nb * (${K} * ${NB});
    GLOBAL const float* RESTRICT ar[${MB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
        const int m = mb * ${MB} + r;
        ar[r] = a + (m < ${M} ? m : ${M} - 1) * ${K};
    }
    FLOATV(${NB}) acc[${MB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) acc[r] = FLOATV_SPLAT(${NB}, 0.0f);
#if ${CHUNKED}
    int total[${MB}][${NB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
#pragma unroll
        for (int j = 0; j < ${NB}; ++j) total[r][j] = 0;
    }
#endif
#if ${CHUNKED}
    for (int k0 = 0; k0 < ${K}; k0 += ${KC}) {
        const int k1 = k0 + ${KC} < ${K} ? k0 + ${KC} : ${K};
#else
    {
        const int k0 = 0, k1 = ${K};
#endif
        for (int k = k0; k < k1; ++k) {
            const FLOATV(${NB}) wv = FLOATV_LOAD(${NB}, wb, k);
#pragma unroll
            for (int r = 0; r < ${MB}; ++r) acc[r] += ar[r][k] * wv;
        }
#if ${CHUNKED}
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) {
#pragma unroll
            for (int j = 0; j < ${NB}; ++j) total[r][j] += (int)acc[r][j];
            acc[r] = FLOATV_SPLAT(${NB}, 0.0f);
        }
#endif
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
#if ${CHUNKED}
            out[m * ${N} + n] = total[r][j] + bias[n];
#else
            out[m * ${N} + n] = (int)acc[r][j] + bias[n];
#endif
#else
            float v = acc[r][j] + bias[n];
#if ${RESIDUAL}
            v += res[m * ${N} + n];
#endif
#if ${HAS_ACT}
            FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
            out[m * ${N} + n] = v;
#endif
        }
    }
}
