/* GEMM with constant weights staged through local memory, for GPUs: the same product, operands and
 * epilogue as gemm.cl (1x1 CONV_2D and FULLY_CONNECTED; QUANT, CHUNKED, RESIDUAL and the fused
 * activation mean the same there), computed by work groups instead of lone work items.
 *     out[m, n] = act(bias[n] + sum_k a[m, k] * w[n, k]),  a [M][K] float, out [M][N] OUT_T.
 * A work group of 16 x 16 work items (LOCAL_ID 0 over columns, 1 over rows) computes the BM x BN block
 * (GROUP_ID(0) * BN, GROUP_ID(1) * BM) of out; work item (tx, ty) holds rows ty + 16 i (i < TM = BM/16)
 * and columns tx + 16 j (j < TN = BN/16) in registers, so neighbouring work items store neighbouring
 * columns.  The reduction walks K in steps of BK: each step the group copies a BM x BK slice of a
 * (transposed, padded against bank conflicts) and a BK x BN slice of w into local memory, every work
 * item loading the next step's slice into registers while it multiplies the current one.
 * w: repacked at lowering to [K][NP] float, NP = N rounded up to a multiple of BN (zero columns);
 *    bias: [NP] ACC_T.  Rows past M read row M-1 and are not stored; k past K reads zeros.
 * QUANT with CHUNKED: the float sums are added into int totals every KT steps (KT * BK <= KC products,
 * each run exact in float) and after the last.
 * AL = BM * BK / 256 and WL = BN * BK / 256: the slice elements each work item copies. */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT a, GLOBAL const float* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${RESIDUAL}
                           GLOBAL const float* RESTRICT res,
#endif
                           GLOBAL ${OUT_T}* RESTRICT out) {
    LOCAL float as[${BK}][${BM} + 1];
    LOCAL float ws[${BK}][${BN}];
    const int tx = LOCAL_ID(0), ty = LOCAL_ID(1);
    const int tid = ty * 16 + tx;
    const int n0 = GROUP_ID(0) * ${BN};
    const int m0 = GROUP_ID(1) * ${BM};
    /* the slice elements this work item copies: a's at (row, kk) and w's at (kk, column) */
    GLOBAL const float* RESTRICT arow[${AL}];
    int akk[${AL}], ar[${AL}];
#pragma unroll
    for (int q = 0; q < ${AL}; ++q) {
        const int e = tid + 256 * q;
        ar[q] = e / ${BK};
        akk[q] = e % ${BK};
        const int m = m0 + ar[q] < ${M} ? m0 + ar[q] : ${M} - 1;
        arow[q] = a + m * ${K};
    }
    float anext[${AL}], wnext[${WL}];
#pragma unroll
    for (int q = 0; q < ${AL}; ++q)
        anext[q] = (${K} % ${BK} == 0 || akk[q] < ${K}) ? arow[q][akk[q]] : 0.0f;
#pragma unroll
    for (int q = 0; q < ${WL}; ++q) {
        const int e = tid + 256 * q, kk = e / ${BN};
        wnext[q] = (${K} % ${BK} == 0 || kk < ${K}) ? w[kk * ${NP} + n0 + e % ${BN}] : 0.0f;
    }
    float acc[${TM}][${TN}];
#pragma unroll
    for (int i = 0; i < ${TM}; ++i) {
#pragma unroll
        for (int j = 0; j < ${TN}; ++j) acc[i][j] = 0.0f;
    }
#if ${CHUNKED}
    int total[${TM}][${TN}];
#pragma unroll
    for (int i = 0; i < ${TM}; ++i) {
#pragma unroll
        for (int j = 0; j < ${TN}; ++j) total[i][j] = 0;
    }
#endif
    for (int k0 = 0, step = 0; k0 < ${K}; k0 += ${BK}, ++step) {
#pragma unroll
        for (int q = 0; q < ${AL}; ++q) as[akk[q]][ar[q]] = anext[q];
#pragma unroll
        for (int q = 0; q < ${WL}; ++q) {
            const int e = tid + 256 * q;
            ws[e / ${BN}][e % ${BN}] = wnext[q];
        }
        BARRIER;
        const int k1 = k0 + ${BK};
        if (k1 < ${K}) {                              /* the next slice, in flight during the products */
#pragma unroll
            for (int q = 0; q < ${AL}; ++q)
                anext[q] = (${K} % ${BK} == 0 || k1 + akk[q] < ${K}) ? arow[q][k1 + akk[q]] : 0.0f;
#pragma unroll
            for (int q = 0; q < ${WL}; ++q) {
                const int e = tid + 256 * q, kk = k1 + e / ${BN};
                wnext[q] = (${K} % ${BK} == 0 || kk < ${K}) ? w[kk * ${NP} + n0 + e % ${BN}] : 0.0f;
            }
        }
#pragma unroll
        for (int kk = 0; kk < ${BK}; ++kk) {
            float av[${TM}], wv[${TN}];
#pragma unroll
            for (int i = 0; i < ${TM}; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < ${TN}; ++j) wv[j] = ws[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < ${TM}; ++i) {
#pragma unroll
                for (int j = 0; j < ${TN}; ++j) acc[i][j] += av[i] * wv[j];
            }
        }
        BARRIER;
#if ${CHUNKED}
        if ((step + 1) % ${KT} == 0 || k1 >= ${K}) {
#pragma unroll
            for (int i = 0; i < ${TM}; ++i) {
#pragma unroll
                for (int j = 0; j < ${TN}; ++j) {
                    total[i][j] += (int)acc[i][j];
                    acc[i][j] = 0.0f;
                }
            }
        }
#endif
    }
#pragma unroll
    for (int i = 0; i < ${TM}; ++i) {
        const int m = m0 + ty + 16 * i;
        if (m >= ${M}) break;
#pragma unroll
        for (int j = 0; j < ${TN}; ++j) {
            const int n = n0 + tx + 16 * j;
            if (n >= ${N}) break;
#if ${QUANT}
#if ${CHUNKED}
            out[m * ${N} + n] = total[i][j] + bias[n];
#else
            out[m * ${N} + n] = (int)acc[i][j] + bias[n];
#endif
#else
            float v = acc[i][j] + bias[n];
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
