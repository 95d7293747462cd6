/* CONV_2D, NHWC, direct convolution with a register tile of PX output pixels x CB output channels
 * (1x1 filters with stride 1 and no padding take gemm.cl instead).
 * Work item (GLOBAL_ID 0, 1, 2) = (channel block, pixel block along x, n*OH + oy).
 * w: repacked at lowering to [COB][KH][KW][CI][CB] (output channels rounded up to COB*CB, zero
 *    padded), so each work item streams its own weights at unit stride; MAC_T (the type of the
 *    products and their sum) = float, or for quant8 int holding (q_w - zp_w), or float holding it where
 *    every partial sum is an integer below 2^24 (exact; faster on CPUs).  bias: [COB*CB] ACC_T (float
 *    or int), added after the sum.
 * VECTOR (float MAC_T, CB = CV * VW, VW = 4, 8 or 16): each pixel's accumulators are CV FLOATV(VW)
 * and a weight row CV vector loads, so every input value loaded feeds CV products; otherwise CB
 * scalars (PoCL's SLP makes the row one vector where it can; CV = 1, VW = CB).
 * VECTOR: a tile whose whole receptive field lies inside the image (nearly all of them) takes the
 * interior path: taps unrolled, addresses literal offsets from one base, no masks (on PoCL 1.4-2.3x
 * on 3-channel first layers, 2x on 3x3 layers of 16-128 channels); UNROLL_CHANNELS (few input
 * channels) unrolls its input-channel loop too; with ROW_CACHE as well, per filter row and input
 * channel the RW input values under the tile are broadcast into vectors once and shared by the KW
 * taps (the compiler otherwise kept them across taps in spilled registers).  Other tiles, and every
 * tile of the scalar kernel, mask their out-of-image taps (clamped address, value selected to 0);
 * UNROLL_TAPS unrolls those loops.
 * QUANT: out (OUT_T = int) receives the int32 sums with the bias; conv_requantize.cl requantizes them.
 * Otherwise OUT_T = T = float; with PRELU an output x < 0 (not x >= 0: a NaN stays NaN) becomes
 * x * alpha[co] after the activation (a fused PRELU by a vector along the channels; alpha [CO]). */
/* WEIGHTS(wrow): wv = the CB weights of one tap and input channel; MAC(p, x): acc[p] += x * wv;
 * ACC(p, j): pixel p's accumulator of channel co0 + j */
#if ${VECTOR}
#define ${KERNEL_NAME}_WEIGHTS(wrow) FLOATV(${VW}) wv[${CV}]; \
    _Pragma("unroll") for (int c_ = 0; c_ < ${CV}; ++c_) wv[c_] = FLOATV_LOAD(${VW}, (wrow), c_)
#define ${KERNEL_NAME}_MAC(p, x) _Pragma("unroll") for (int c_ = 0; c_ < ${CV}; ++c_) acc[p][c_] += (x) * wv[c_]
#define ${KERNEL_NAME}_ACC(p, j) acc[p][(j) / ${VW}][(j) % ${VW}]
#else
#define ${KERNEL_NAME}_WEIGHTS(wrow) ${MAC_T} wv[${CB}]; \
    _Pragma("unroll") for (int j_ = 0; j_ < ${CB}; ++j_) wv[j_] = (wrow)[j_]
#define ${KERNEL_NAME}_MAC(p, x) _Pragma("unroll") for (int j_ = 0; j_ < ${CB}; ++j_) acc[p][j_] += (x) * wv[j_]
#define ${KERNEL_NAME}_ACC(p, j) acc[p][j]
#endif
/* whether the VW channels from c0 are all output channels */
#if ${CO} % ${VW}
#define ${KERNEL_NAME}_WHOLE_VECTOR(c0) ((c0) + ${VW} <= ${CO})
#else
#define ${KERNEL_NAME}_WHOLE_VECTOR(c0) 1
#endif
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${MAC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias,
#if ${PRELU}
                           GLOBAL const float* RESTRICT alpha,
#endif
                           GLOBAL ${OUT_T}* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${COB} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int co0 = cb * ${CB};
    GLOBAL const ${MAC_T}* RESTRICT wb = w + cb * (${KH} * ${KW} * ${CI} * ${CB});
#if ${VECTOR}
    FLOATV(${VW}) acc[${PX}][${CV}];
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) {
#pragma unroll
        for (int c = 0; c < ${CV}; ++c) acc[p][c] = FLOATV_SPLAT(${VW}, 0.0f);
    }
#else
    ${MAC_T} acc[${PX}][${CB}];
#pragma unroll
    for (int p = 0; p < ${PX}; ++p) {
#pragma unroll
        for (int j = 0; j < ${CB}; ++j) acc[p][j] = (${MAC_T})0;
    }
#endif
    const int n = row / ${OH};
    const int oy = row % ${OH};
    const int ox0 = pb * ${PX};
    const int iy0 = oy * ${SH} - ${PT};
    const int ix0 = ox0 * ${SW} - ${PL};
#if ${VECTOR}
    if (iy0 >= 0 && iy0 + (${KH} - 1) * ${DH} < ${H} && ix0 >= 0
        && ix0 + (${PX} - 1) * ${SW} + (${KW} - 1) * ${DW} < ${W}) {
        GLOBAL const ${T}* RESTRICT base = in + ((n * ${H} + iy0) * ${W} + ix0) * ${CI};
#if ${ROW_CACHE}
        /* per filter row and input channel, the RW input values under the tile broadcast once into
         * registers and shared by the KW taps */
#pragma unroll
        for (int ky = 0; ky < ${KH}; ++ky) {
#pragma unroll
            for (int ci = 0; ci < ${CI}; ++ci) {
                FLOATV(${VW}) xr[${RW}];
#pragma unroll
                for (int t = 0; t < ${RW}; ++t)
                    xr[t] = FLOATV_SPLAT(${VW}, (${MAC_T})base[(ky * ${DH} * ${W} + t) * ${CI} + ci] - (${MAC_T})${ZX});
#pragma unroll
                for (int kx = 0; kx < ${KW}; ++kx) {
                    ${KERNEL_NAME}_WEIGHTS(wb + ((ky * ${KW} + kx) * ${CI} + ci) * ${CB});
#pragma unroll
                    for (int p = 0; p < ${PX}; ++p) ${KERNEL_NAME}_MAC(p, xr[p * ${SW} + kx * ${DW}]);
                }
            }
        }
#else
#pragma unroll
        for (int ky = 0; ky < ${KH}; ++ky) {
#pragma unroll
            for (int kx = 0; kx < ${KW}; ++kx) {
#if ${UNROLL_CHANNELS}
#pragma unroll
#endif
                for (int ci = 0; ci < ${CI}; ++ci) {
                    ${KERNEL_NAME}_WEIGHTS(wb + ((ky * ${KW} + kx) * ${CI} + ci) * ${CB});
#pragma unroll
                    for (int p = 0; p < ${PX}; ++p) {
                        const ${MAC_T} x = (${MAC_T})base[(ky * ${DH} * ${W} + p * ${SW} + kx * ${DW}) * ${CI} + ci]
                                           - (${MAC_T})${ZX};
                        ${KERNEL_NAME}_MAC(p, x);
                    }
                }
            }
        }
#endif
    } else
#endif
    {
#if ${UNROLL_TAPS}
#pragma unroll
#endif
        for (int ky = 0; ky < ${KH}; ++ky) {
            const int iy = iy0 + ky * ${DH};
            const int oky = iy >= 0 && iy < ${H};
#if ${UNROLL_TAPS}
#pragma unroll
#endif
            for (int kx = 0; kx < ${KW}; ++kx) {
                int off[${PX}];
                int ok[${PX}];
#pragma unroll
                for (int p = 0; p < ${PX}; ++p) {
                    const int ix = ix0 + p * ${SW} + kx * ${DW};
                    ok[p] = oky && ix >= 0 && ix < ${W};
                    off[p] = ok[p] ? ((n * ${H} + iy) * ${W} + ix) * ${CI} : 0;
                }
#if ${UNROLL_TAPS}
#pragma unroll
#endif
                for (int ci = 0; ci < ${CI}; ++ci) {
                    ${KERNEL_NAME}_WEIGHTS(wb + ((ky * ${KW} + kx) * ${CI} + ci) * ${CB});
#pragma unroll
                    for (int p = 0; p < ${PX}; ++p) {
                        const ${MAC_T} v = (${MAC_T})in[off[p] + ci] - (${MAC_T})${ZX};
                        ${KERNEL_NAME}_MAC(p, ok[p] ? v : (${MAC_T})0);
                    }
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
#if ${VECTOR} && !${QUANT}
        if (${KERNEL_NAME}_WHOLE_VECTOR(co0 + (${CV} - 1) * ${VW})) {   /* the block's outputs as CV vectors */
#pragma unroll
            for (int c = 0; c < ${CV}; ++c) {
                const int c0 = co0 + c * ${VW};
                FLOATV(${VW}) v = acc[p][c] + FLOATV_LOAD(${VW}, bias + c0, 0);
#if ${HAS_ACT}
                FLOATV_ACTIVATION(${VW}, v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
#if ${PRELU}
                FLOATV_PRELU(${VW}, v, FLOATV_LOAD(${VW}, alpha + c0, 0));
#endif
                FLOATV_STORE(${VW}, out + obase + c0, 0, v);
            }
            continue;
        }
#endif
#pragma unroll
        for (int j = 0; j < ${CB}; ++j) {
            const int co = co0 + j;
#if ${CO} % ${CB}
            if (co >= ${CO}) break;              /* partial last channel block */
#endif
#if ${QUANT}
            out[obase + co] = (int)${KERNEL_NAME}_ACC(p, j) + bias[co];   /* conv_requantize.cl finishes */
#else
            float v = ${KERNEL_NAME}_ACC(p, j) + bias[co];
#if ${HAS_ACT}
            FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
#if ${PRELU}
            v = v >= 0.0f ? v : v * alpha[co];
#endif
            out[obase + co] = v;
#endif
        }
    }
}
#undef ${KERNEL_NAME}_WEIGHTS
#undef ${KERNEL_NAME}_MAC
#undef ${KERNEL_NAME}_ACC
#undef ${KERNEL_NAME}_WHOLE_VECTOR
