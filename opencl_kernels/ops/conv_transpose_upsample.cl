/* TRANSPOSE_CONV_2D whose taps do not overlap (stride = kernel size, no padding: every output pixel
 * takes exactly one input pixel, the upsampling layer of a decoder), float32 NHWC, constant filter
 * and bias: work item = (input column ix, output channel co, n*H + iy): neighbouring work items
 * read neighbouring pixels (PoCL vectorises its work-item loop across them).  It reads the CI
 * channels of input pixel (iy, ix) once and writes channel co of the KH x KW output pixels
 * (iy*SH + ky, ix*SW + kx) they reach.  w: repacked at lowering to [KH][KW][CO][CI], a tap's weights
 * for one output channel contiguous.  Input (n, y, x, c) is in[n*XN + y*XY + x*XX + c], output
 * out[n*ON + y*OY + x*OX + c].  fp32 sums over c in order, + bias (conv_transpose.cl's order for its
 * one tap), FUSED_ACTIVATION (activations.h). */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT in, GLOBAL const float* RESTRICT w,
                           GLOBAL const float* RESTRICT bias, GLOBAL float* RESTRICT out) {
    const int ix = GLOBAL_ID(0);
    const int co = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (co >= ${CO} || ix >= ${W} || row >= ${ROWS}) return;
    const int n = row / ${H};
    const int iy = row % ${H};
    GLOBAL const float* xp = in + n * ${XN} + iy * ${XY} + ix * ${XX};
    float x[${CI}];
#pragma unroll
    for (int c = 0; c < ${CI}; ++c) x[c] = xp[c];
    const float b = bias[co];
    GLOBAL float* o = out + n * ${ON} + (iy * ${SH}) * ${OY} + (ix * ${SW}) * ${OX} + co;
#pragma unroll
    for (int ky = 0; ky < ${KH}; ++ky) {
#pragma unroll
        for (int kx = 0; kx < ${KW}; ++kx) {
            GLOBAL const float* wt = w + ((ky * ${KW} + kx) * ${CO} + co) * ${CI};
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < ${CI}; ++c) acc += x[c] * wt[c];
            float v = acc + b;
            FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
            o[ky * ${OY} + kx * ${OX}] = v;
        }
    }
}
