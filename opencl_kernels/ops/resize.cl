/* RESIZE_BILINEAR (NEAREST 0) and RESIZE_NEAREST_NEIGHBOR (NEAREST 1): work item = (channel c,
 * output x, n*OH + oy); fp32 index arithmetic as the reference (SCALE_H / SCALE_W: the fp32 scales).
 * Element (n, y, x, c) of the input is in[n*XN + y*XY + x*XX + c*XC], of the output
 * out[n*ON + y*OY + x*OX + c*OC] (NHWC or NCHW).  LOAD / STORE: the element as float (half or plain
 * storage; exact for every stored type).
 * Nearest: src = (o + 0.5)*scale (HALF_PIXEL) or o*scale; index = ROUND(src) (ALIGN) or floor(src),
 * at most H-1 / W-1 (and, with HALF_PIXEL, at least 0); the element is copied.
 * Bilinear: the TFLite reference; QUANT: interpolate stored values, C cast (truncation), clamp to
 * [QMIN, QMAX]. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int c = GLOBAL_ID(0);
    const int ox = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (c >= ${C} || ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    GLOBAL const ${T}* xn = in + n * ${XN} + c * ${XC};
    const int o = n * ${ON} + oy * ${OY} + ox * ${OX} + c * ${OC};
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
    int iy = min((int)floor(sy), ${H} - 1);
    int ix = min((int)floor(sx), ${W} - 1);
#endif
#if ${HALF_PIXEL}
    iy = max(iy, 0);
    ix = max(ix, 0);
#endif
    ${STORE}(out, o, ${LOAD}(xn, iy * ${XY} + ix * ${XX}));
#else
#if ${HALF_PIXEL}
    const float sy = ((float)oy + 0.5f) * ${SCALE_H} - 0.5f;
    const float sx = ((float)ox + 0.5f) * ${SCALE_W} - 0.5f;
#else
    const float sy = (float)oy * ${SCALE_H};
    const float sx = (float)ox * ${SCALE_W};
#endif
    const int y0 = max((int)floor(sy), 0);
    const int y1 = min((int)ceil(sy), ${H} - 1);
    const int x0 = max((int)floor(sx), 0);
    const int x1 = min((int)ceil(sx), ${W} - 1);
    const float ty = sy - (float)y0;
    const float tx = sx - (float)x0;
    const float v00 = ${LOAD}(xn, y0 * ${XY} + x0 * ${XX});
    const float v10 = ${LOAD}(xn, y1 * ${XY} + x0 * ${XX});
    const float v01 = ${LOAD}(xn, y0 * ${XY} + x1 * ${XX});
    const float v11 = ${LOAD}(xn, y1 * ${XY} + x1 * ${XX});
    const float one = 1.0f;
    const float a0 = v00 * (one - ty) * (one - tx);
    const float a1 = v10 * ty * (one - tx);
    const float a2 = v01 * (one - ty) * tx;
    const float a3 = v11 * ty * tx;
    const float r = a0 + a1 + a2 + a3;
#if ${QUANT}
    out[o] = (${T})clamp((int)r, ${QMIN}, ${QMAX});
#else
    ${STORE}(out, o, r);
#endif
#endif
}
