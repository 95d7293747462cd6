/* Detection post-processing (operations.md ops 41 AXIS_ALIGNED_BBOX_TRANSFORM and 47
 * DETECTION_POSTPROCESSING), fp32 in AOSP's order.
 * OP 0 — AXIS_ALIGNED_BBOX_TRANSFORM, one work item per (roi, class), COUNT = rois·K:
 *   rois / image info of storage RT (RLOAD; RQUANT: TENSOR_QUANT16_ASYMM, × 0.125), deltas of DT
 *   (DLOAD; DQUANT: dequantized with DSCALE, DZP), output of RT (OSTORE; RQUANT: quantized to
 *   scale 0.125, saturated to [0, 65535]); B images.  A batch index outside [0, B) or x1 > x2 /
 *   y1 > y2 stores STATUS_CODE.
 * OP 1 — DETECTION_POSTPROCESSING decoding, one work item per (batch, anchor), COUNT = BATCHES·A:
 *   deltas [BATCHES, A, L] (dy, dx, dh, dw first) and anchors [A, 4] (ctr_y, ctr_x, h, w) of T
 *   (LOAD) with scales SY, SX, SH, SW → fp32 boxes (y1, x1, y2, x2).
 * OP 2 — DETECTION_POSTPROCESSING selection, one work item per batch: hard NMS in AOSP's in-place
 *   order over a scratch list of CANDIDATES indices per batch (REGULAR 1: per class with at most
 *   MAX_PER_CLASS picks, then the best MAX_DET by score, stable; REGULAR 0: on each anchor's best
 *   class score, kept in a scratch of A floats per batch, at most MAX_DET anchors, each emitting
 *   its MAX_CLASSES best classes).  Candidates need score > SCORE_THR; IoU ≥ IOU_THR suppresses.
 *   Outputs SLOTS detections per batch (scores and boxes of T via STORE, classes − LABEL_OFFSET,
 *   the count); unused slots are zero. */
#ifndef GD_HELPERS_DETECTION
#define GD_HELPERS_DETECTION
/* IoU of box a with the picked box p (AOSP getIoUAxisAligned(a, p)); boxes as 4 floats. */
DEVICE_FN float gd_detection_iou(GLOBAL const float* a, GLOBAL const float* p) {
    const float area1 = (a[2] - a[0]) * (a[3] - a[1]);
    const float area2 = (p[2] - p[0]) * (p[3] - p[1]);
    const float x1 = a[0] < p[0] ? p[0] : a[0], y1 = a[1] < p[1] ? p[1] : a[1];
    const float x2 = a[2] < p[2] ? a[2] : p[2], y2 = a[3] < p[3] ? a[3] : p[3];
    const float w = x2 - x1 < 0.0f ? 0.0f : x2 - x1;
    const float h = y2 - y1 < 0.0f ? 0.0f : y2 - y1;
    const float inter = w * h;
    return inter / (area1 + area2 - inter);
}
#endif

#if ${OP} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const ${RT}* RESTRICT rois, GLOBAL const ${DT}* RESTRICT deltas,
                           GLOBAL const int* RESTRICT batches, GLOBAL const ${RT}* RESTRICT image,
                           GLOBAL ${RT}* RESTRICT out, GLOBAL int* RESTRICT status) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int roi = i / ${K};
#if ${RQUANT}
#define GD_BOX(p, j) ((float)(p)[j] * 0.125f)
#else
#define GD_BOX(p, j) ${RLOAD}(p, j)
#endif
#if ${DQUANT}
#define GD_DELTA(j) (${DSCALE} * (float)((int)deltas[j] - ${DZP}))
#else
#define GD_DELTA(j) ${DLOAD}(deltas, j)
#endif
    int b = batches[roi];
    const float x1 = GD_BOX(rois, roi * 4), y1 = GD_BOX(rois, roi * 4 + 1);
    const float x2 = GD_BOX(rois, roi * 4 + 2), y2 = GD_BOX(rois, roi * 4 + 3);
    if (!(b >= 0 && b < ${B} && x1 <= x2 && y1 <= y2)) {
        status[0] = ${STATUS_CODE};
        b = 0;
    }
    const float height = GD_BOX(image, b * 2), width = GD_BOX(image, b * 2 + 1);
    const float w = x2 - x1, h = y2 - y1;
    const float cx = (x1 + x2) / 2.0f, cy = (y1 + y2) / 2.0f;
    const float nw = exp(GD_DELTA(i * 4 + 2)) * w, nh = exp(GD_DELTA(i * 4 + 3)) * h;
    const float nx = cx + GD_DELTA(i * 4) * w, ny = cy + GD_DELTA(i * 4 + 1) * h;
    float v[4] = {nx - nw / 2.0f, ny - nh / 2.0f, nx + nw / 2.0f, ny + nh / 2.0f};
#undef GD_BOX
#undef GD_DELTA
    for (int k = 0; k < 4; ++k) {
        const float lim = (k % 2 == 0) ? width : height;
        float c = v[k] < 0.0f ? 0.0f : v[k];
        c = lim < c ? lim : c;
#if ${RQUANT}
        out[i * 4 + k] = (${RT})clamp(ROUND(c / 0.125f), 0.0f, 65535.0f);
#else
        ${OSTORE}(out, i * 4 + k, c);
#endif
    }
}
#elif ${OP} == 1
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT deltas, GLOBAL const ${T}* RESTRICT anchors,
                           GLOBAL float* RESTRICT boxes) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int a = i % ${A};
    const float ay = ${LOAD}(anchors, a * 4), ax = ${LOAD}(anchors, a * 4 + 1);
    const float ah = ${LOAD}(anchors, a * 4 + 2), aw = ${LOAD}(anchors, a * 4 + 3);
    const int d = i * ${L};
    const float yc = ay + ah * ${LOAD}(deltas, d) / ${SY};
    const float xc = ax + aw * ${LOAD}(deltas, d + 1) / ${SX};
    const float hh = ah * exp(${LOAD}(deltas, d + 2) / ${SH}) * 0.5f;
    const float wh = aw * exp(${LOAD}(deltas, d + 3) / ${SW}) * 0.5f;
    boxes[i * 4] = yc - hh;
    boxes[i * 4 + 1] = xc - wh;
    boxes[i * 4 + 2] = yc + hh;
    boxes[i * 4 + 3] = xc + wh;
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT scores, GLOBAL const float* RESTRICT boxes,
                           GLOBAL ${T}* RESTRICT out_scores, GLOBAL ${T}* RESTRICT out_boxes,
                           GLOBAL int* RESTRICT out_classes, GLOBAL int* RESTRICT out_count,
                           GLOBAL int* RESTRICT select_all, GLOBAL float* RESTRICT best_all) {
    const int n = GLOBAL_ID(0);
    if (n >= ${BATCHES}) return;
    GLOBAL const ${T}* sc = scores + n * ${A} * ${K};
    GLOBAL const float* bx = boxes + n * ${A} * 4;
    GLOBAL int* sel = select_all + n * ${CANDIDATES};
    GLOBAL float* best = best_all + n * ${A};
    for (int s = 0; s < ${SLOTS}; ++s) {
        ${STORE}(out_scores, n * ${SLOTS} + s, 0.0f);
        for (int k = 0; k < 4; ++k) ${STORE}(out_boxes, (n * ${SLOTS} + s) * 4 + k, 0.0f);
        out_classes[n * ${SLOTS} + s] = 0;
    }
#if ${REGULAR}
#define GD_SCORE(idx) ${LOAD}(sc, idx)
#define GD_BOX(idx) (bx + ((idx) / ${K}) * 4)
    int total = 0;
    for (int c = 1; c < ${K}; ++c) {
        int start = total;
        for (int a = 0; a < ${A}; ++a) {
            if (GD_SCORE(a * ${K} + c) > ${SCORE_THR}) sel[total++] = a * ${K} + c;
        }
        const int limit = ${MAX_PER_CLASS};
#else
#define GD_SCORE(idx) best[idx]
#define GD_BOX(idx) (bx + (idx) * 4)
    int total = 0;
    for (int a = 0; a < ${A}; ++a) {
        float m = ${LOAD}(sc, a * ${K} + 1);
        for (int c = 2; c < ${K}; ++c) {
            const float v = ${LOAD}(sc, a * ${K} + c);
            if (m < v) m = v;
        }
        best[a] = m;
        if (m > ${SCORE_THR}) sel[total++] = a;
    }
    {
        int start = 0;
        const int limit = ${MAX_DET};
#endif
        /* hard NMS on sel[start, total), AOSP's in-place order */
        int end = total, picked = 0;
        while (start < end && picked < limit) {
            int arg = start;
            for (int t = start + 1; t < end; ++t) {
                if (GD_SCORE(sel[arg]) < GD_SCORE(sel[t])) arg = t;
            }
            int tmp = sel[start]; sel[start] = sel[arg]; sel[arg] = tmp;
            for (int t = start + 1; t < end; ++t) {
                if (gd_detection_iou(GD_BOX(sel[t]), GD_BOX(sel[start])) >= ${IOU_THR}) {
                    --end;
                    tmp = sel[t]; sel[t] = sel[end]; sel[end] = tmp;
                    --t;
                }
            }
            ++start;
            ++picked;
        }
        total = start;
    }
#if ${REGULAR}
    /* stable sort by score, descending */
    for (int t = 1; t < total; ++t) {
        const int key = sel[t];
        int j = t - 1;
        while (j >= 0 && GD_SCORE(key) > GD_SCORE(sel[j])) { sel[j + 1] = sel[j]; --j; }
        sel[j + 1] = key;
    }
    const int kept = total < ${MAX_DET} ? total : ${MAX_DET};
    for (int t = 0; t < kept; ++t) {
        const int o = n * ${SLOTS} + t;
        ${STORE}(out_scores, o, GD_SCORE(sel[t]));
        for (int k = 0; k < 4; ++k) ${STORE}(out_boxes, o * 4 + k, GD_BOX(sel[t])[k]);
        out_classes[o] = sel[t] % ${K} - ${LABEL_OFFSET};
    }
    out_count[n] = kept;
#else
    int o = n * ${SLOTS};
    for (int t = 0; t < total; ++t) {
        const int a = sel[t];
        /* the MAX_CLASSES best classes, in a stable descending order by score */
        int prev = -1;
        float prev_score = 0.0f;
        for (int r = 0; r < ${MAX_CLASSES}; ++r) {
            int pick = -1;
            for (int c = 1; c < ${K}; ++c) {
                const float v = ${LOAD}(sc, a * ${K} + c);
                if (prev >= 0 && !(v < prev_score || (v == prev_score && c > prev))) continue;
                if (pick < 0 || v > ${LOAD}(sc, a * ${K} + pick)) pick = c;
            }
            prev = pick;
            prev_score = ${LOAD}(sc, a * ${K} + pick);
            ${STORE}(out_scores, o, prev_score);
            for (int k = 0; k < 4; ++k) ${STORE}(out_boxes, o * 4 + k, GD_BOX(a)[k]);
            out_classes[o] = pick - ${LABEL_OFFSET};
            ++o;
        }
    }
    out_count[n] = total * ${MAX_CLASSES};
#endif
#undef GD_SCORE
#undef GD_BOX
}
#endif
