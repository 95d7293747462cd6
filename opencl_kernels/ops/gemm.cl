/* GEMM with constant packed weights, the kernel of 1x1 CONV_2D (stride 1, no padding: rows = the
 * N*H*W pixels, K = input channels) and FULLY_CONNECTED (rows = batch rows, K = input size):
 *     out[m, n] = act(bias[n] + sum_k a[m, k] * w[n, k]),  a [M][K] float, out [M][N] OUT_T.
 * Two ways to compute it, chosen by the lowering for the device (gpu_driver/ops/gemm.py):
 * GROUP 0 (a CPU): work item (GLOBAL_ID 0, 1) = (block of NV*NB columns, block of MB rows): register
 *    tile acc[MB][NV] of NB-lane FLOATV (NB = 4, 8 or 16; on AVX-512 a 16-lane one is one zmm
 *    register).  w: repacked to [NBLOCKS][K][NV*NB] float, so a work item streams its weights at unit
 *    stride, NV vectors per k, each multiplied by the same MB values of a.  The reduction runs in
 *    order over k (unrolling it measured slower on PoCL); every tile loop has a literal trip count
 *    and is unrolled, so PoCL keeps the accumulators in registers.
 * GROUP 1 (a GPU): a work group of 16 x 16 work items (LOCAL_ID 0 over columns, 1 over rows) computes
 *    the MB x NB block (GROUP_ID(0) * NB, GROUP_ID(1) * MB) of out; work item (tx, ty) holds rows
 *    ty + 16 i (i < MB/16) and columns tx + 16 j (j < NB/16), so neighbouring work items store
 *    neighbouring columns.  The reduction walks K in steps of BK: each step the group copies a MB x BK
 *    slice of a (transposed, padded against bank conflicts) and a BK x NB slice of w into local
 *    memory, every work item loading the next step's slice into registers while it multiplies the
 *    current one; k past K reads zeros.  w: repacked to [K][NBLOCKS * NB] float.
 * Weight columns past N are zeros; bias: [NBLOCKS*NB] ACC_T (float, or int for quant8), added after
 * the sum.  Rows past M read row M-1 (clamped address) and are not stored.
 * QUANT (quant8): a holds the centred inputs (q - zp, conv_centre.cl) and w the centred weights, as
 * floats; every run of KC products sums exactly in float (each partial sum an integer below 2^24),
 * and with CHUNKED (KC < K) the runs' sums are added up in int (GROUP 1: every KC / BK steps, KC >= BK).
 * out (OUT_T = int) receives the int32 sums with the bias; conv_requantize.cl requantizes them.
 * With REQUANT (GROUP 0) the epilogue requantizes itself, as conv_requantize.cl does (qp: CP
 * multipliers, CP shifts, read with PER_CHANNEL), into out (OUT_T = the quant8 type), and with CENTRED
 * writes centred[m][n] = out - ZO as float too (the input of a following convolution).
 * Otherwise OUT_T = float.  RESIDUAL (float): res [M][RES_C] float is added to each sum before the
 * activation (a fused ADD); columns from RES_C on add 0 (a folded zero channel PAD).  SCALE (float):
 * column k of a is multiplied by scale[k] (a fused MUL of a by a channel vector): GROUP 0 scales
 * the weight row k, GROUP 1 the slice of a it copies.  PRELU (float): after the activation, an
 * output x < 0 (not x >= 0: a NaN stays NaN) becomes x * alpha[n] (a fused PRELU of the result by a
 * vector along its columns; alpha [N] float).  DW (float, GROUP 0): a is a depthwise convolution's
 * NHWC input image (multiplier 1, K channels; dww [DW_KH][DW_KW][K], dwb [K]) and the GEMM's rows are
 * that convolution's output pixels: work item GLOBAL_ID 1 = share * MBLOCKS + block of MB pixels (MB
 * divides the output's width; DW_SPLITS shares of DW_SPLIT_BLOCKS column blocks) computes the block's
 * depthwise outputs, activation included, into private memory, then its share's column blocks of the
 * block's rows from them (the depthwise output is never stored; with several shares, each computes
 * it). */
/* the store of output (m, n) from its float sum (CHUNKED: its int total) */
#if ${QUANT} && ${REQUANT}
#if ${PER_CHANNEL}
#define ${KERNEL_NAME}_RQ(x, n) gd_requantize(x, qp[n], qp[${CP} + (n)], ${ZO}, ${ACT_MIN}, ${ACT_MAX})
#else
#define ${KERNEL_NAME}_RQ(x, n) gd_requantize(x, ${MULT}, ${SHIFT}, ${ZO}, ${ACT_MIN}, ${ACT_MAX})
#endif
#if ${CHUNKED}
#define ${KERNEL_NAME}_SUM(sum, total) (total)
#else
#define ${KERNEL_NAME}_SUM(sum, total) ((int)(sum))
#endif
#if ${CENTRED}
#define ${KERNEL_NAME}_CENTRED(m, n, q) centred[(m) * ${N} + (n)] = (float)((q) - ${ZO})
#else
#define ${KERNEL_NAME}_CENTRED(m, n, q)
#endif
#define ${KERNEL_NAME}_STORE(m, n, sum, total) { \
        const int q = ${KERNEL_NAME}_RQ(${KERNEL_NAME}_SUM(sum, total) + bias[n], n); \
        out[(m) * ${N} + (n)] = (${OUT_T})q; ${KERNEL_NAME}_CENTRED(m, n, q); }
#elif ${QUANT} && ${CHUNKED}
#define ${KERNEL_NAME}_STORE(m, n, sum, total) out[(m) * ${N} + (n)] = (total) + bias[n]
#elif ${QUANT}
#define ${KERNEL_NAME}_STORE(m, n, sum, total) out[(m) * ${N} + (n)] = (int)(sum) + bias[n]
#else
#if ${HAS_ACT}
#define ${KERNEL_NAME}_CLAMP(v) FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH})
#else
#define ${KERNEL_NAME}_CLAMP(v)
#endif
#if ${PRELU}
#define ${KERNEL_NAME}_ACT(v, n) { ${KERNEL_NAME}_CLAMP(v); (v) = (v) >= 0.0f ? (v) : (v) * alpha[n]; }
#else
#define ${KERNEL_NAME}_ACT(v, n) { ${KERNEL_NAME}_CLAMP(v); }
#endif
#if ${RESIDUAL} && ${RES_C} < ${N}
#define ${KERNEL_NAME}_STORE(m, n, sum, total) { \
        const float r_ = res[(m) * ${RES_C} + min((n), ${RES_C} - 1)]; /* loaded always: no branch */ \
        float v = (sum) + bias[n] + ((n) < ${RES_C} ? r_ : 0.0f); ${KERNEL_NAME}_ACT(v, n); out[(m) * ${N} + (n)] = v; }
#elif ${RESIDUAL}
#define ${KERNEL_NAME}_STORE(m, n, sum, total) { float v = (sum) + bias[n] + res[(m) * ${N} + (n)]; \
        ${KERNEL_NAME}_ACT(v, n); out[(m) * ${N} + (n)] = v; }
#else
#define ${KERNEL_NAME}_STORE(m, n, sum, total) { float v = (sum) + bias[n]; ${KERNEL_NAME}_ACT(v, n); \
        out[(m) * ${N} + (n)] = v; }
#endif
#endif
/* "* scale[k]" where column k of a is scaled (SCALE), else nothing */
#if ${SCALE}
#define ${KERNEL_NAME}_SCALED(k) * scale[k]
#else
#define ${KERNEL_NAME}_SCALED(k)
#endif
/* whether the column block from n0 lies inside the output's columns; inside or past the residual's */
#if ${N} % (${NB} * ${NV})
#define ${KERNEL_NAME}_WHOLE_IN_N(n0) ((n0) + ${NB} <= ${N})
#else
#define ${KERNEL_NAME}_WHOLE_IN_N(n0) 1
#endif
#if ${RESIDUAL} && ${RES_C} % ${NB}
#define ${KERNEL_NAME}_WHOLE_IN_RES(n0) ((n0) + ${NB} <= ${RES_C} || (n0) >= ${RES_C})
#else
#define ${KERNEL_NAME}_WHOLE_IN_RES(n0) 1
#endif
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT a,
#if ${DW}
                           GLOBAL const float* RESTRICT dww, GLOBAL const float* RESTRICT dwb,
#endif
                           GLOBAL const float* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${SCALE}
                           GLOBAL const float* RESTRICT scale,
#endif
#if ${RESIDUAL}
                           GLOBAL const float* RESTRICT res,
#endif
#if ${PRELU}
                           GLOBAL const float* RESTRICT alpha,
#endif
#if ${QUANT} && ${REQUANT}
                           GLOBAL const int* RESTRICT qp,
#endif
                           GLOBAL ${OUT_T}* RESTRICT out
#if ${QUANT} && ${REQUANT} && ${CENTRED}
                           , GLOBAL float* RESTRICT centred
#endif
                           ) {
#if ${GROUP}
    LOCAL float as[${BK}][${MB} + 1];
    LOCAL float ws[${BK}][${NB}];
    const int tx = LOCAL_ID(0), ty = LOCAL_ID(1);
    const int tid = ty * 16 + tx;
    const int n0 = GROUP_ID(0) * ${NB};
    const int m0 = GROUP_ID(1) * ${MB};
    /* the slice elements this work item copies: a's at (row, kk) and w's at (kk, column) */
    GLOBAL const float* RESTRICT arow[(${MB} * ${BK} / 256)];
    int akk[(${MB} * ${BK} / 256)], ar[(${MB} * ${BK} / 256)];
#pragma unroll
    for (int q = 0; q < (${MB} * ${BK} / 256); ++q) {
        const int e = tid + 256 * q;
        ar[q] = e / ${BK};
        akk[q] = e % ${BK};
        const int m = m0 + ar[q] < ${M} ? m0 + ar[q] : ${M} - 1;
        arow[q] = a + m * ${K};
    }
    float anext[(${MB} * ${BK} / 256)], wnext[(${NB} * ${BK} / 256)];
#pragma unroll
    for (int q = 0; q < (${MB} * ${BK} / 256); ++q)
        anext[q] = (${K} % ${BK} == 0 || akk[q] < ${K}) ? arow[q][akk[q]] ${KERNEL_NAME}_SCALED(akk[q]) : 0.0f;
#pragma unroll
    for (int q = 0; q < (${NB} * ${BK} / 256); ++q) {
        const int e = tid + 256 * q, kk = e / ${NB};
        wnext[q] = (${K} % ${BK} == 0 || kk < ${K}) ? w[kk * (${NBLOCKS} * ${NB}) + n0 + e % ${NB}] : 0.0f;
    }
    float acc[(${MB} / 16)][(${NB} / 16)];
#pragma unroll
    for (int i = 0; i < (${MB} / 16); ++i) {
#pragma unroll
        for (int j = 0; j < (${NB} / 16); ++j) acc[i][j] = 0.0f;
    }
#if ${CHUNKED}
    int total[(${MB} / 16)][(${NB} / 16)];
#pragma unroll
    for (int i = 0; i < (${MB} / 16); ++i) {
#pragma unroll
        for (int j = 0; j < (${NB} / 16); ++j) total[i][j] = 0;
    }
#endif
    for (int k0 = 0, step = 0; k0 < ${K}; k0 += ${BK}, ++step) {
#pragma unroll
        for (int q = 0; q < (${MB} * ${BK} / 256); ++q) as[akk[q]][ar[q]] = anext[q];
#pragma unroll
        for (int q = 0; q < (${NB} * ${BK} / 256); ++q) {
            const int e = tid + 256 * q;
            ws[e / ${NB}][e % ${NB}] = wnext[q];
        }
        BARRIER;
        const int k1 = k0 + ${BK};
        if (k1 < ${K}) {                              /* the next slice, in flight during the products */
#pragma unroll
            for (int q = 0; q < (${MB} * ${BK} / 256); ++q)
                anext[q] = (${K} % ${BK} == 0 || k1 + akk[q] < ${K})
                           ? arow[q][k1 + akk[q]] ${KERNEL_NAME}_SCALED(k1 + akk[q]) : 0.0f;
#pragma unroll
            for (int q = 0; q < (${NB} * ${BK} / 256); ++q) {
                const int e = tid + 256 * q, kk = k1 + e / ${NB};
                wnext[q] = (${K} % ${BK} == 0 || kk < ${K}) ? w[kk * (${NBLOCKS} * ${NB}) + n0 + e % ${NB}] : 0.0f;
            }
        }
#pragma unroll
        for (int kk = 0; kk < ${BK}; ++kk) {
            float av[(${MB} / 16)], wv[(${NB} / 16)];
#pragma unroll
            for (int i = 0; i < (${MB} / 16); ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < (${NB} / 16); ++j) wv[j] = ws[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < (${MB} / 16); ++i) {
#pragma unroll
                for (int j = 0; j < (${NB} / 16); ++j) acc[i][j] += av[i] * wv[j];
            }
        }
        BARRIER;
#if ${CHUNKED}
        if ((step + 1) % (${KC} / ${BK}) == 0 || k1 >= ${K}) {
#pragma unroll
            for (int i = 0; i < (${MB} / 16); ++i) {
#pragma unroll
                for (int j = 0; j < (${NB} / 16); ++j) {
                    total[i][j] += (int)acc[i][j];
                    acc[i][j] = 0.0f;
                }
            }
        }
#endif
    }
#pragma unroll
    for (int i = 0; i < (${MB} / 16); ++i) {
        const int m = m0 + ty + 16 * i;
        if (m >= ${M}) break;
#pragma unroll
        for (int j = 0; j < (${NB} / 16); ++j) {
            const int n = n0 + tx + 16 * j;
            if (n >= ${N}) break;
            ${KERNEL_NAME}_STORE(m, n, acc[i][j], total[i][j]);
        }
    }
#else
#if ${DW}
    const int mb = GLOBAL_ID(1) % ${MBLOCKS};
    const int share = GLOBAL_ID(1) / ${MBLOCKS};     /* of the columns: DW_SPLIT_BLOCKS blocks */
    if (GLOBAL_ID(0) >= 1 || share >= ${DW_SPLITS}) return;
    /* the depthwise convolution's outputs at the MB rows (pixels) of this block, every channel, in
     * private memory: at[r * K + k].  MB divides the output's width, so the block is MB consecutive
     * pixels of one image row: per filter row, the RW input columns under it are loaded once and
     * shared by the KW taps; at the image's border (MASKED) a filter row outside it is skipped and
     * a column outside it reads as 0 (col, col_ok computed once). */
    float at[${MB} * ${K}];
    {
        const int t0 = (mb * ${MB}) / ${DW_OW};        /* n * OH + oy */
        const int pbase = (t0 / ${DW_OH}) * ${DW_H};
        const int piy = (t0 % ${DW_OH}) * ${DW_SH} - ${DW_PT};
        const int pix = ((mb * ${MB}) % ${DW_OW}) * ${DW_SW} - ${DW_PL};
        int col[${DW_RW}], col_ok[${DW_RW}];
#pragma unroll
        for (int t = 0; t < ${DW_RW}; ++t) {
            col_ok[t] = pix + t >= 0 && pix + t < ${DW_W};
            col[t] = col_ok[t] ? pix + t : 0;
        }
        const int interior = piy >= 0 && piy + (${DW_KH} - 1) * ${DW_DH} < ${DW_H} && pix >= 0
                             && pix + ${DW_RW} - 1 < ${DW_W};
#define ${KERNEL_NAME}_DW_ROW(ky, MASKED) { \
            const int iy = piy + (ky) * ${DW_DH}; \
            if (!(MASKED) || (iy >= 0 && iy < ${DW_H})) \
                DEPTHWISE_ROW_TAPS(${DW_VW}, ${DW_CB}, ${DW_RW}, ${DW_KW}, ${DW_SW}, ${DW_DW}, ${MB}, a, dww, \
                                   (pbase + iy) * ${DW_W}, pix, col, col_ok, cb, ky, s, MASKED) \
        }
#define ${KERNEL_NAME}_DW_INTERIOR(ky) ${KERNEL_NAME}_DW_ROW(ky, 0)
#define ${KERNEL_NAME}_DW_BORDER(ky) ${KERNEL_NAME}_DW_ROW(ky, 1)
#define ${KERNEL_NAME}_DW_CHANNELS(TAPS) \
        for (int cb = 0; cb < ${DW_CB}; ++cb) { \
            FLOATV(${DW_VW}) s[${MB}]; \
            _Pragma("unroll") for (int r = 0; r < ${MB}; ++r) s[r] = FLOATV_SPLAT(${DW_VW}, 0.0f); \
            _Pragma("unroll") for (int ky = 0; ky < ${DW_KH}; ++ky) TAPS(ky) \
            const FLOATV(${DW_VW}) b = FLOATV_LOAD(${DW_VW}, dwb, cb); \
            _Pragma("unroll") for (int r = 0; r < ${MB}; ++r) { \
                FLOATV(${DW_VW}) y = s[r] + b; \
                ${KERNEL_NAME}_DW_ACT(y); \
                FLOATV_STORE_PRIVATE(${DW_VW}, at, r * ${DW_CB} + cb, y); \
            } \
        }
#if ${DW_HAS_ACT}
#define ${KERNEL_NAME}_DW_ACT(y) FLOATV_ACTIVATION(${DW_VW}, y, ${DW_ACT_FMIN}, ${DW_ACT_FMAX}, ${DW_ACT_NAN_LOW}, ${DW_ACT_HARD_SWISH})
#else
#define ${KERNEL_NAME}_DW_ACT(y)
#endif
        if (interior) {
            ${KERNEL_NAME}_DW_CHANNELS(${KERNEL_NAME}_DW_INTERIOR)
        } else {
            ${KERNEL_NAME}_DW_CHANNELS(${KERNEL_NAME}_DW_BORDER)
        }
#undef ${KERNEL_NAME}_DW_ROW
#undef ${KERNEL_NAME}_DW_INTERIOR
#undef ${KERNEL_NAME}_DW_BORDER
#undef ${KERNEL_NAME}_DW_CHANNELS
#undef ${KERNEL_NAME}_DW_ACT
    }
#define ${KERNEL_NAME}_A(r, k) at[(r) * ${K} + (k)]
    const int nb_end = (share + 1) * ${DW_SPLIT_BLOCKS} < ${NBLOCKS} ? (share + 1) * ${DW_SPLIT_BLOCKS} : ${NBLOCKS};
    for (int nb = share * ${DW_SPLIT_BLOCKS}; nb < nb_end; ++nb) {
    GLOBAL const float* RESTRICT wb = w + nb * (${K} * ${NB} * ${NV});
#else
    const int nb = GLOBAL_ID(0);
    const int mb = GLOBAL_ID(1);
    if (nb >= ${NBLOCKS} || mb >= ${MBLOCKS}) return;
    GLOBAL const float* RESTRICT wb = w + nb * (${K} * ${NB} * ${NV});
    GLOBAL const float* RESTRICT ar[${MB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
        const int m = mb * ${MB} + r;
        ar[r] = a + (m < ${M} ? m : ${M} - 1) * ${K};
    }
#define ${KERNEL_NAME}_A(r, k) ar[r][k]
    {
#endif
    FLOATV(${NB}) acc[${MB}][${NV}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
#pragma unroll
        for (int c = 0; c < ${NV}; ++c) acc[r][c] = FLOATV_SPLAT(${NB}, 0.0f);
    }
#if ${CHUNKED}
    int total[${MB}][${NV}][${NB}];
#pragma unroll
    for (int r = 0; r < ${MB}; ++r) {
#pragma unroll
        for (int c = 0; c < ${NV}; ++c) {
#pragma unroll
            for (int j = 0; j < ${NB}; ++j) total[r][c][j] = 0;
        }
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
            FLOATV(${NB}) wv[${NV}];
#pragma unroll
            for (int c = 0; c < ${NV}; ++c) wv[c] = FLOATV_LOAD(${NB}, wb, k * ${NV} + c) ${KERNEL_NAME}_SCALED(k);
#pragma unroll
            for (int r = 0; r < ${MB}; ++r) {
                const float x = ${KERNEL_NAME}_A(r, k);
#pragma unroll
                for (int c = 0; c < ${NV}; ++c) acc[r][c] += x * wv[c];
            }
        }
#if ${CHUNKED}
#pragma unroll
        for (int r = 0; r < ${MB}; ++r) {
#pragma unroll
            for (int c = 0; c < ${NV}; ++c) {
#pragma unroll
                for (int j = 0; j < ${NB}; ++j) total[r][c][j] += (int)acc[r][c][j];
                acc[r][c] = FLOATV_SPLAT(${NB}, 0.0f);
            }
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
        for (int c = 0; c < ${NV}; ++c) {
            const int n0 = (nb * ${NV} + c) * ${NB};
            /* float: a block inside the output's columns, and inside or past the residual's, as one
             * vector (bias and residual loads, activation, store); the others output by output */
#if !${QUANT}
            if (${KERNEL_NAME}_WHOLE_IN_N(n0) && ${KERNEL_NAME}_WHOLE_IN_RES(n0)) {
                FLOATV(${NB}) y = acc[r][c] + FLOATV_LOAD(${NB}, bias, nb * ${NV} + c);
#if ${RESIDUAL}
                if (n0 < ${RES_C}) y += FLOATV_LOAD(${NB}, res + m * ${RES_C} + n0, 0);
#endif
#if ${HAS_ACT}
                FLOATV_ACTIVATION(${NB}, y, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
#if ${PRELU}
                FLOATV_PRELU(${NB}, y, FLOATV_LOAD(${NB}, alpha + n0, 0));
#endif
                FLOATV_STORE(${NB}, out + m * ${N} + n0, 0, y);
                continue;
            }
#endif
#pragma unroll
            for (int j = 0; j < ${NB}; ++j) {
                const int n = n0 + j;
#if ${N} % (${NB} * ${NV})
                if (n >= ${N}) break;            /* partial (or, of NV, past the) last column block */
#endif
                ${KERNEL_NAME}_STORE(m, n, acc[r][c][j], total[r][c][j]);
            }
        }
    }
    }
#undef ${KERNEL_NAME}_A
#endif
}
#undef ${KERNEL_NAME}_STORE
#undef ${KERNEL_NAME}_ACT
#undef ${KERNEL_NAME}_CLAMP
#undef ${KERNEL_NAME}_WHOLE_IN_N
#undef ${KERNEL_NAME}_WHOLE_IN_RES
#undef ${KERNEL_NAME}_SCALED
