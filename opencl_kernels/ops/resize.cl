/* RESIZE_BILINEAR, NHWC: work item = (channel, output x, n*OH + oy); fp32 arithmetic as the TFLite
 * reference.  QUANT: interpolate stored values, C cast (truncation), clamp to [QMIN, QMAX]. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int c = GLOBAL_ID(0);
    const int ox = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (c >= ${C} || ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
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
    const int b = n * ${H};
    const float v00 = (float)in[((b + y0) * ${W} + x0) * ${C} + c];
    const float v10 = (float)in[((b + y1) * ${W} + x0) * ${C} + c];
    const float v01 = (float)in[((b + y0) * ${W} + x1) * ${C} + c];
    const float v11 = (float)in[((b + y1) * ${W} + x1) * ${C} + c];
    const float one = 1.0f;
    const float a0 = v00 * (one - ty) * (one - tx);
    const float a1 = v10 * ty * (one - tx);
    const float a2 = v01 * (one - ty) * tx;
    const float a3 = v11 * ty * tx;
    const float r = a0 + a1 + a2 + a3;
    const int o = ((n * ${OH} + oy) * ${OW} + ox) * ${C} + c;
#if ${QUANT}
    out[o] = (${T})clamp((int)r, ${QMIN}, ${QMAX});
#else
    out[o] = r;
#endif
}
