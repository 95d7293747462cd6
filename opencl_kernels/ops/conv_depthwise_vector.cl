/* Depthwise convolution, NHWC, depth multiplier 1, CO a multiple of VW: work item = (channel
 * block cb of VW consecutive channels, pixel block of PX along x, n*OH + oy).  Inputs, weights and
 * accumulators are VW-lane FLOATV (explicit vectors: PoCL emits full-width AVX-512 code for them, its
 * work-item vectoriser only 256-bit; written lane by lane, the products were re-vectorised 256 bits
 * wide).  Per filter row the RW input columns under the tile are loaded once and shared by the KW
 * taps.  A tile reaching past the image skips the filter rows outside it and reads the columns
 * outside it as 0.
 * w: [KH][KW][CO] float; bias [CO] ACC_T.
 * float32: OUT_T = float, bias float, the activation applied here.  QUANT (quant8): ``in`` is the input
 * centred on its zero point as floats (conv_centre.cl), w the weights minus the filter zero point; the
 * sums are integers below 2^24 (exact in float, see gemm.float_chunk); out (OUT_T = int) receives them
 * with the int32 bias, and conv_requantize.cl requantizes them. */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT in, GLOBAL const float* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias, GLOBAL ${OUT_T}* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${CB} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int ox0 = pb * ${PX};
    FLOATV(${VW}) acc[${PX}];
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) acc[p] = FLOATV_SPLAT(${VW}, 0.0f);
    const int iy0 = oy * ${SH} - ${PT};
    const int ix0 = ox0 * ${SW} - ${PL};
    /* filter row ky: the RW input columns under the tile (MASKED: a row outside the image is skipped,
     * a column outside it reads as 0; col / col_ok computed once per work item), times its KW taps */
#define ${KERNEL_NAME}_ROW(ky, MASKED) { \
        const int iy = iy0 + (ky) * ${DH}; \
        if (!(MASKED) || (iy >= 0 && iy < ${H})) \
            DEPTHWISE_ROW_TAPS(${VW}, ${CB}, ${RW}, ${KW}, ${SW}, ${DW}, ${PX}, in, w, (n * ${H} + iy) * ${W}, ix0, \
                               col, col_ok, cb, ky, acc, MASKED) \
    }
    int col[${RW}], col_ok[${RW}];
#pragma unroll
    for (int t = 0; t < ${RW}; ++t) {
        col_ok[t] = ix0 + t >= 0 && ix0 + t < ${W};
        col[t] = col_ok[t] ? ix0 + t : 0;
    }
    if (iy0 >= 0 && iy0 + (${KH} - 1) * ${DH} < ${H} && ix0 >= 0 && ix0 + ${RW} - 1 < ${W}) {
#pragma unroll
        for (int ky = 0; ky < ${KH}; ++ky) ${KERNEL_NAME}_ROW(ky, 0)
    } else {
#pragma unroll
        for (int ky = 0; ky < ${KH}; ++ky) ${KERNEL_NAME}_ROW(ky, 1)
    }
#undef ${KERNEL_NAME}_ROW
#if !${QUANT}
    const FLOATV(${VW}) b = FLOATV_LOAD(${VW}, bias, cb);
#endif
    const int o0 = (row * ${OW} + ox0) * ${CO} + cb * ${VW};   /* first lane of the first pixel */
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) {
#if !${EXACT}
        if (ox0 + p < ${OW})                     /* partial last pixel block */
#endif
        {
#if ${QUANT}
#pragma unroll
            for (int j = 0; j < ${VW}; ++j)              /* conv_requantize.cl finishes */
                out[o0 + p * ${CO} + j] = (int)acc[p][j] + bias[cb * ${VW} + j];
#else
            FLOATV(${VW}) v = acc[p] + b;
#if ${HAS_ACT}
            FLOATV_ACTIVATION(${VW}, v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
            FLOATV_STORE(${VW}, out + o0 + p * ${CO}, 0, v);
#endif
        }
    }
}
