/* Regions of interest (operations.md ops 81 ROI_ALIGN, 82 ROI_POOLING, 56 HEATMAP_MAX_KEYPOINT), fp32
 * in AOSP's order.  OP 0 ROI_ALIGN, 1 ROI_POOLING: one work item per output element (box, y, x, c);
 * OP 2 HEATMAP_MAX_KEYPOINT: one work item per (box, keypoint).
 * Storage: T the feature map / heatmap (read with LOAD, written with STORE), BT the boxes (BLOAD);
 * boxes are multiplied by BOX_SCALE (0.125 for TENSOR_QUANT16_ASYMM, else 1).
 * OP 0/1 — image N×H×W×C with element strides XN, XY, XX, XC of (n, y, x, c); output OH×OW per box with
 *   strides ON, OY, OX, OC; HSCALE / WSCALE = 1/stride; SAMPLING_H / SAMPLING_W (0 = adaptive).
 *   QUANT 1: T is uchar/char with zero point ZP, output zero point ZO, range [QMIN, QMAX].
 *   ROI_ALIGN quantized: bilinear weights rounded to multiples of WEIGHT_SCALE (1/255); MULT_TABLE 1
 *   adds an input of TABLE_ROWS (multiplier, shift) pairs indexed by the sample count (multiplier
 *   < 0: not representable, the execution fails).
 *   A bad batch index, a negative coordinate, a box beyond the map or inverted stores STATUS_CODE.
 * OP 2 — heatmaps of S×S per keypoint (K keypoints) with element strides SR, SY, SX, SK of
 *   (box, y, x, keypoint); XQUANT: heatmap dequantized with XSCALE, XZP; TOL the determinant tolerance; scores (T, OSTORE) quantized when OQUANT with
 *   OSCALE, OZP to [OQMIN, OQMAX]; keypoints (BT, KSTORE) quantized when KQUANT with KSCALE (zero
 *   point 0) to [0, KQMAX].  x1 > x2 or y1 > y2 stores STATUS_CODE. */
#if ${OP} <= 1
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${BT}* RESTRICT rois,
                           GLOBAL const int* RESTRICT batches,
#if ${MULT_TABLE}
                           GLOBAL const int* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out, GLOBAL int* RESTRICT status) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    int r = i;
    const int c = r % ${C}; r /= ${C};
    const int ox = r % ${OW}; r /= ${OW};
    const int oy = r % ${OH};
    const int roi = r / ${OH};
    const int o = roi * ${ON} + oy * ${OY} + ox * ${OX} + c * ${OC};
    const int b = batches[roi];
    const float x1 = ${BLOAD}(rois, roi * 4) * ${BOX_SCALE}, y1 = ${BLOAD}(rois, roi * 4 + 1) * ${BOX_SCALE};
    const float x2 = ${BLOAD}(rois, roi * 4 + 2) * ${BOX_SCALE}, y2 = ${BLOAD}(rois, roi * 4 + 3) * ${BOX_SCALE};
    const float sx1 = x1 * ${WSCALE}, sy1 = y1 * ${HSCALE}, sx2 = x2 * ${WSCALE}, sy2 = y2 * ${HSCALE};
    if (!(b >= 0 && b < ${N} && x1 >= 0.0f && y1 >= 0.0f && x2 >= 0.0f && y2 >= 0.0f && sx1 <= (float)${W}
          && sy1 <= (float)${H} && sx2 <= (float)${W} && sy2 <= (float)${H} && x1 <= x2 && y1 <= y2)) {
        status[0] = ${STATUS_CODE};
#if ${QUANT}
        out[o] = (${T})${ZO};
#else
        ${STORE}(out, o, 0.0f);
#endif
        return;
    }
    const int base = b * ${XN} + c * ${XC};
#if ${OP} == 0
    float roi_w = sx2 - sx1, roi_h = sy2 - sy1;
    roi_w = roi_w < 1.0f ? 1.0f : roi_w;
    roi_h = roi_h < 1.0f ? 1.0f : roi_h;
    const float wstep = roi_w / (float)${OW}, hstep = roi_h / (float)${OH};
    const int wn = ${SAMPLING_W} > 0 ? ${SAMPLING_W} : (int)ceil(wstep);
    const int hn = ${SAMPLING_H} > 0 ? ${SAMPLING_H} : (int)ceil(hstep);
    const float wbin = wstep / (float)wn, hbin = hstep / (float)hn;
    const float wstart = wstep * (float)ox + sx1, hstart = hstep * (float)oy + sy1;
#if ${QUANT}
    int acc = 0;
#else
    float acc = 0.0f;
#endif
    for (int yi = 0; yi < hn; ++yi) {
        const float y = hstart + hbin / 2.0f + hbin * (float)yi;
        int ya = (int)floor(y), yb;
        float dy1 = y - (float)ya;
        if (ya >= ${H} - 1) { ya = ${H} - 1; yb = ya; dy1 = 0.0f; } else { yb = ya + 1; }
        const float dy2 = 1.0f - dy1;
        for (int xi = 0; xi < wn; ++xi) {
            const float xs = wstart + wbin / 2.0f + wbin * (float)xi;
            int xa = (int)floor(xs), xb;
            float dx1 = xs - (float)xa;
            if (xa >= ${W} - 1) { xa = ${W} - 1; xb = xa; dx1 = 0.0f; } else { xb = xa + 1; }
            const float dx2 = 1.0f - dx1;
            const float w0 = dx2 * dy2, w1 = dx1 * dy2, w2 = dx2 * dy1, w3 = dx1 * dy1;
            const int p0 = base + ya * ${XY} + xa * ${XX}, p1 = base + ya * ${XY} + xb * ${XX};
            const int p2 = base + yb * ${XY} + xa * ${XX}, p3 = base + yb * ${XY} + xb * ${XX};
#if ${QUANT}
            acc += (int)ROUND(w0 / ${WEIGHT_SCALE}) * ((int)x[p0] - ${ZP})
                 + (int)ROUND(w1 / ${WEIGHT_SCALE}) * ((int)x[p1] - ${ZP})
                 + (int)ROUND(w2 / ${WEIGHT_SCALE}) * ((int)x[p2] - ${ZP})
                 + (int)ROUND(w3 / ${WEIGHT_SCALE}) * ((int)x[p3] - ${ZP});
#else
            float interp = w0 * ${LOAD}(x, p0);
            interp = interp + w1 * ${LOAD}(x, p1);
            interp = interp + w2 * ${LOAD}(x, p2);
            interp = interp + w3 * ${LOAD}(x, p3);
            acc = acc + interp;
#endif
        }
    }
#if ${QUANT}
    const int samples = hn * wn;
    int q = ${ZO};
    if (samples >= ${TABLE_ROWS} || table[2 * samples] < 0) {
        status[0] = ${STATUS_CODE};
    } else {
        q = MBQM(acc, table[2 * samples], table[2 * samples + 1]) + ${ZO};
    }
    out[o] = (${T})clamp(q, ${QMIN}, ${QMAX});
#else
    ${STORE}(out, o, acc / (float)(hn * wn));
#endif
#else /* ROI_POOLING */
    const int xs = (int)ROUND(sx1), ys = (int)ROUND(sy1), xe = (int)ROUND(sx2), ye = (int)ROUND(sy2);
    const float wstep = (float)max(xe - xs + 1, 1) / (float)${OW};
    const float hstep = (float)max(ye - ys + 1, 1) / (float)${OH};
    const int w0 = clamp((int)floor(wstep * (float)ox + (float)xs), 0, ${W});
    const int w1 = clamp((int)ceil(wstep * (float)(ox + 1) + (float)xs), 0, ${W});
    const int h0 = clamp((int)floor(hstep * (float)oy + (float)ys), 0, ${H});
    const int h1 = clamp((int)ceil(hstep * (float)(oy + 1) + (float)ys), 0, ${H});
    int first = 1;
#if ${QUANT}
    int best = ${ZP};
#else
    float best = 0.0f;
#endif
    for (int yy = h0; yy < h1; ++yy) {
        for (int xx = w0; xx < w1; ++xx) {
#if ${QUANT}
            const int v = (int)x[base + yy * ${XY} + xx * ${XX}];
#else
            const float v = ${LOAD}(x, base + yy * ${XY} + xx * ${XX});
#endif
            if (first || v > best) { best = v; first = 0; }
        }
    }
#if ${QUANT}
    out[o] = (${T})best;
#else
    ${STORE}(out, o, best);
#endif
#endif
}
#else /* HEATMAP_MAX_KEYPOINT */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT heat, GLOBAL const ${BT}* RESTRICT boxes,
                           GLOBAL ${T}* RESTRICT scores, GLOBAL ${BT}* RESTRICT keypoints,
                           GLOBAL int* RESTRICT status) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int box = i / ${K}, kp = i % ${K};
    const int base = box * ${SR} + kp * ${SK};
#if ${XQUANT}
#define GD_HEAT(p) (${XSCALE} * (float)((int)heat[p] - ${XZP}))
#else
#define GD_HEAT(p) ${LOAD}(heat, p)
#endif
    float best = ${FLT_MAX_NEG};
    int arg = 0;
    for (int t = 0; t < ${S} * ${S}; ++t) {
        const float v = GD_HEAT(base + (t / ${S}) * ${SY} + (t % ${S}) * ${SX});
        if (best < v) { best = v; arg = t; }
    }
    const int mh = arg / ${S}, mw = arg % ${S};
    float g[3][3];
    for (int dh = -1; dh <= 1; ++dh) {
        for (int dw = -1; dw <= 1; ++dw) {
            int h = mh + dh, w = mw + dw;
            h = h < 0 ? 1 : (h >= ${S} ? ${S} - 2 : h);
            w = w < 0 ? 1 : (w >= ${S} ? ${S} - 2 : w);
            g[dh + 1][dw + 1] = GD_HEAT(base + h * ${SY} + w * ${SX});
        }
    }
#undef GD_HEAT
    float d0 = 0.0f, d1 = 0.0f, score = best;
    const float b0 = -(g[1][2] - g[1][0]) / 2.0f;
    const float b1 = -(g[2][1] - g[0][1]) / 2.0f;
    const float a00 = g[1][0] - 2.0f * g[1][1] + g[1][2];
    const float a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4.0f;
    const float a11 = g[0][1] - 2.0f * g[1][1] + g[2][1];
    const float cross = a00 * a11;
    const float det = cross - a01 * a01;
    if (!(fabs(det) < ${TOL} + ${TOL} * cross)) {
        d0 = (a11 * b0 - a01 * b1) / det;
        d1 = (a00 * b1 - a01 * b0) / det;
        if (fabs(d0) > 1.5f || fabs(d1) > 1.5f) {
            const float scale = 1.5f / (fabs(d0) < fabs(d1) ? fabs(d1) : fabs(d0));
            d0 *= scale;
            d1 *= scale;
        }
        score = g[1][1] - b0 * d0 - b1 * d1 + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / 2.0f;
    }
    float bx[4];
    for (int k = 0; k < 4; ++k) bx[k] = ${BLOAD}(boxes, box * 4 + k) * ${BOX_SCALE};
    if (!(bx[0] <= bx[2] && bx[1] <= bx[3])) status[0] = ${STATUS_CODE};
    const float kx = ((float)mw + d0 + 0.5f) / (float)${S} * (bx[2] - bx[0]) + bx[0];
    const float ky = ((float)mh + d1 + 0.5f) / (float)${S} * (bx[3] - bx[1]) + bx[1];
#if ${OQUANT}
    scores[i] = (${T})clamp(ROUND(score / ${OSCALE} + (float)${OZP}), (float)${OQMIN}, (float)${OQMAX});
#else
    ${STORE}(scores, i, score);
#endif
#if ${KQUANT}
    keypoints[2 * i] = (${BT})clamp(ROUND(kx / ${KSCALE}), 0.0f, (float)${KQMAX});
    keypoints[2 * i + 1] = (${BT})clamp(ROUND(ky / ${KSCALE}), 0.0f, (float)${KQMAX});
#else
    ${KSTORE}(keypoints, 2 * i, kx);
    ${KSTORE}(keypoints, 2 * i + 1, ky);
#endif
}
#endif
