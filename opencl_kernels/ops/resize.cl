/* RESIZE_BILINEAR (NEAREST 0) and RESIZE_NEAREST_NEIGHBOR (NEAREST 1): work item = (output x,
 * n*OH + oy), looping over the C channels (the source positions and weights are computed once per
 * output pixel; in NHWC the loop runs over contiguous elements).  fp32 index arithmetic as the
 * reference (SCALE_H / SCALE_W: the fp32 scales).
 * Element (n, y, x, c) of the input is in[n*XN + y*XY + x*XX + c*XC], of the output
 * out[n*ON + y*OY + x*OX + c*OC] (NHWC or NCHW).  LOAD / STORE: the element as float (half or plain
 * storage; exact for every stored type).
 * Nearest: src = (o + 0.5)*scale (HALF_PIXEL) or o*scale; index = ROUND(src) (ALIGN) or floor(src),
 * at most H-1 / W-1 (and, with HALF_PIXEL, at least 0); the element is copied.
 * Bilinear: the TFLite reference; QUANT: interpolate stored values, C cast (truncation), clamp to
 * [QMIN, QMAX].  floor / ceil of a source position are taken through the truncating cast: for the
 * positions clamped at 0 below they agree, and the cast keeps the loop free of library calls. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int ox = GLOBAL_ID(0);
    const int row = GLOBAL_ID(1);
    if (ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    GLOBAL const ${T}* xn = in + n * ${XN};
    GLOBAL ${T}* o = out + n * ${ON} + oy * ${OY} + ox * ${OX};
#if ${NEAREST}
#if ${HALF_PIXEL}
    const float sy = ((float)oy + 0.5f) * ${SCALE_H};
    const float sx = ((float)ox + 0.5f) * ${SCALE_W};
#else
    const float sy = (float)oy * ${SCALE_H};
    const float sx = (float)ox * ${SCALE_W};
#endif
#if ${ALIGN}
    int iy = min((int)ROUND(sy), ${H} - 1);
    int ix = min((int)ROUND(sx), ${W} - 1);
#else
    int iy = min((int)sy, ${H} - 1);   /* sy >= 0: the cast is floor */
    int ix = min((int)sx, ${W} - 1);
#endif
#if ${HALF_PIXEL}
    iy = max(iy, 0);
    ix = max(ix, 0);
#endif
    GLOBAL const ${T}* src = xn + iy * ${XY} + ix * ${XX};
    for (int c = 0; c < ${C}; ++c) {
        ${STORE}(o, c * ${OC}, ${LOAD}(src, c * ${XC}));
    }
#else
#if ${HALF_PIXEL}
    const float sy = ((float)oy + 0.5f) * ${SCALE_H} - 0.5f;
    const float sx = ((float)ox + 0.5f) * ${SCALE_W} - 0.5f;
#else
    const float sy = (float)oy * ${SCALE_H};
    const float sx = (float)ox * ${SCALE_W};
#endif
    /* floor and ceil through the truncating cast: below 0 both are clamped to 0 */
    const int ty0 = (int)sy;
    const int tx0 = (int)sx;
    const int y0 = max(ty0, 0);
    const int y1 = min(ty0 + (sy > (float)ty0 ? 1 : 0), ${H} - 1);
    const int x0 = max(tx0, 0);
    const int x1 = min(tx0 + (sx > (float)tx0 ? 1 : 0), ${W} - 1);
    const float ty = sy - (float)y0;
    const float tx = sx - (float)x0;
    const float one = 1.0f;
    const float uy = one - ty;
    const float ux = one - tx;
    GLOBAL const ${T}* p00 = xn + y0 * ${XY} + x0 * ${XX};
    GLOBAL const ${T}* p10 = xn + y1 * ${XY} + x0 * ${XX};
    GLOBAL const ${T}* p01 = xn + y0 * ${XY} + x1 * ${XX};
    GLOBAL const ${T}* p11 = xn + y1 * ${XY} + x1 * ${XX};
    for (int c = 0; c < ${C}; ++c) {
        const int k = c * ${XC};
        const float a0 = ${LOAD}(p00, k) * uy * ux;
        const float a1 = ${LOAD}(p10, k) * ty * ux;
        const float a2 = ${LOAD}(p01, k) * uy * tx;
        const float a3 = ${LOAD}(p11, k) * ty * tx;
        const float r = a0 + a1 + a2 + a3;
#if ${QUANT}
        o[c * ${OC}] = (${T})clamp((int)r, ${QMIN}, ${QMAX});
#else
        ${STORE}(o, c * ${OC}, r);
#endif
    }
#endif
}
