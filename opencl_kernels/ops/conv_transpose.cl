/* TRANSPOSE_CONV_2D, float32 NHWC, constant filter and bias: work item = (block cb of CB output
 * channels, block of PX output columns, n*OH + oy), the CB channels one FLOATV accumulator per
 * column (several columns per work item amortise PoCL's per-work-item cost).  Tap (ky, kx) reads the
 * input pixel (iy, ix) with iy*SH - PT + ky = oy and ix*SW - PL + kx = ox (none: no contribution);
 * per tap the CI input channels are read once and each multiplies the CB weights of its row.
 * w: repacked at lowering to [KH][KW][CI][COP] (COP = CO rounded up to CB, zero columns), so a
 * tap's row for input channel c is CB contiguous floats; bias: [COP] float.
 * Output element (n, y, x, c) is out[n*ON + y*OY + x*OX + c]; input (n, y, x, c) in[n*XN + y*XY +
 * x*XX + c].  fp32 sums in the order of the general kernel's taps and channels; + bias; clamp to
 * [ACT_FMIN, ACT_FMAX] and a fused HARD_SWISH: FUSED_ACTIVATION (activations.h). */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT in, GLOBAL const float* RESTRICT w,
                           GLOBAL const float* RESTRICT bias, GLOBAL float* RESTRICT out) {
    const int cb = GLOBAL_ID(0);
    const int pb = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (cb >= ${CBLOCKS} || pb >= ${PBLOCKS} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    GLOBAL const float* xn = in + n * ${XN};
    GLOBAL float* orow = out + n * ${ON} + oy * ${OY};
    for (int p = 0; p < ${PX}; ++p) {
        const int ox = pb * ${PX} + p;
#if ${OW} % ${PX}
        if (ox >= ${OW}) break;
#endif
        FLOATV(${CB}) acc = FLOATV_SPLAT(${CB}, 0.0f);
        for (int ky = 0; ky < ${KH}; ++ky) {
            const int ty = oy + ${PT} - ky;
            const int iy = ty / ${SH};
            if (ty < 0 || iy * ${SH} != ty || iy >= ${H}) continue;
            for (int kx = 0; kx < ${KW}; ++kx) {
                const int tx = ox + ${PL} - kx;
                const int ix = tx / ${SW};
                if (tx < 0 || ix * ${SW} != tx || ix >= ${W}) continue;
                GLOBAL const float* xp = xn + iy * ${XY} + ix * ${XX};
                GLOBAL const float* wt = w + ((ky * ${KW} + kx) * ${CI}) * ${COP} + cb * ${CB};
                for (int c = 0; c < ${CI}; ++c) {
                    acc += xp[c] * FLOATV_LOAD(${CB}, wt + c * ${COP}, 0);
                }
            }
        }
        GLOBAL float* o = orow + ox * ${OX};
#pragma unroll
        for (int j = 0; j < ${CB}; ++j) {
            const int co = cb * ${CB} + j;
#if ${CO} % ${CB}
            if (co >= ${CO}) break;
#endif
            float v = acc[j] + bias[co];
            FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
            o[co] = v;
        }
    }
}
