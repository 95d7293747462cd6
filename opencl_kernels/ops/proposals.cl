/* GENERATE_PROPOSALS, one work item (the algorithm is sequential), AOSP's order of operations exactly.
 * Per image n of B: the N = H·W·A anchors shifted to every cell, in (y, x, anchor) order, must be
 * ordered (x1 <= x2, y1 <= y2; else *count = -1); each is moved by its deltas and clipped to the image
 * (AXIS_ALIGNED_BBOX_TRANSFORM's arithmetic); the candidates are the PRE_TOP highest scores (stable,
 * all when PRE_TOP <= 0 or >= N) whose box is wider and taller than MIN_SIZE with its centre inside
 * the image; a hard NMS (IoU >= IOU_THR suppresses) keeps at most POST_TOP (< 0: all).  Outputs, image
 * after image: the kept scores (T), boxes (TB), and the image index; *count = the rows written.
 * Element (n, y, x, a) of scores is scores[n*SN + y*SY + x*SX + a*SA]; delta j of anchor a is at
 * deltas[n*SN4 + y*SY4 + x*SX4 + (4a + j)*SA4] (the strides encode NHWC or NCHW).
 * Scratch: boxes [4N] and sc [N] float (the image's boxes and scores), sel, tmp, keep [N] int.  The NMS
 * steps are nms.h's.  Quantized operands are dequantized as (q - zp)·scale in float; quantized outputs
 * are requantized with round half away from zero.  No multiply-add is contracted (GD_MUL_RN). */
#define GD_PROP_DEQ(p, i, zp, scale) GD_MUL_RN((float)((int)(p)[i] - (zp)), (scale))

#if ${S_QUANT}
#define GD_PROP_SCORE(i) GD_PROP_DEQ(scores, i, ${S_ZP}, ${S_SCALE})
#else
#define GD_PROP_SCORE(i) ${LOAD}(scores, i)
#endif
#if ${D_QUANT}
#define GD_PROP_DELTA(i) GD_PROP_DEQ(deltas, i, ${D_ZP}, ${D_SCALE})
#else
#define GD_PROP_DELTA(i) ${D_LOAD}(deltas, i)
#endif
#if ${A_QUANT}
#define GD_PROP_ANCHOR(i) GD_PROP_DEQ(anchors, i, ${A_ZP}, ${A_SCALE})
#else
#define GD_PROP_ANCHOR(i) ${A_LOAD}(anchors, i)
#endif
#if ${I_QUANT}
#define GD_PROP_IMAGE(i) GD_PROP_DEQ(image, i, ${I_ZP}, ${I_SCALE})
#else
#define GD_PROP_IMAGE(i) ${I_LOAD}(image, i)
#endif

/* stable merge sort of idx[0, n) by score descending (tmp: n ints) */
DEVICE_FN void ${KERNEL_NAME}_sort(GLOBAL const float* sc, GLOBAL int* idx, GLOBAL int* tmp, int n) {
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            const int mid = min(lo + width, n), hi = min(lo + 2 * width, n);
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = sc[idx[j]] > sc[idx[i]] ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        for (int t = 0; t < n; ++t) idx[t] = tmp[t];
    }
}

DEVICE_FN float ${KERNEL_NAME}_clip(float c, float limit) {
    const float lo = c < 0.0f ? 0.0f : c;
    return limit < lo ? limit : lo;
}

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT scores, GLOBAL const ${TD}* RESTRICT deltas,
                           GLOBAL const ${TA}* RESTRICT anchors, GLOBAL const ${TI}* RESTRICT image,
                           GLOBAL float* RESTRICT boxes, GLOBAL float* RESTRICT sc, GLOBAL int* RESTRICT sel,
                           GLOBAL int* RESTRICT tmp, GLOBAL int* RESTRICT keep,
                           GLOBAL ${T}* RESTRICT out_scores, GLOBAL ${TB}* RESTRICT out_boxes,
                           GLOBAL int* RESTRICT out_batches, GLOBAL int* RESTRICT count) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
    if (GLOBAL_ID(0) != 0) return;
    const int n_all = ${H} * ${W} * ${A};
    int total = 0;
    for (int img = 0; img < ${B}; ++img) {
        const float height = GD_PROP_IMAGE(2 * img), width = GD_PROP_IMAGE(2 * img + 1);
        for (int i = 0; i < n_all; ++i) {
            const int a = i % ${A}, x = (i / ${A}) % ${W}, y = i / (${A} * ${W});
            const float sx = GD_MUL_RN((float)x, ${WS}), sy = GD_MUL_RN((float)y, ${HS});
            const float r0 = GD_PROP_ANCHOR(4 * a) + sx, r1 = GD_PROP_ANCHOR(4 * a + 1) + sy;
            const float r2 = GD_PROP_ANCHOR(4 * a + 2) + sx, r3 = GD_PROP_ANCHOR(4 * a + 3) + sy;
            if (!(r0 <= r2 && r1 <= r3)) {
                count[0] = -1;
                return;
            }
            sc[i] = GD_PROP_SCORE(img * ${SN} + y * ${SY} + x * ${SX} + a * ${SA});
            const int d = img * ${SN4} + y * ${SY4} + x * ${SX4};
            const float dx = GD_PROP_DELTA(d + (4 * a) * ${SA4}), dy = GD_PROP_DELTA(d + (4 * a + 1) * ${SA4});
            const float dw = GD_PROP_DELTA(d + (4 * a + 2) * ${SA4}), dh = GD_PROP_DELTA(d + (4 * a + 3) * ${SA4});
            const float w = r2 - r0, h = r3 - r1;
            const float cx = (r0 + r2) / 2.0f, cy = (r1 + r3) / 2.0f;
            const float nw = GD_MUL_RN(exp(dw), w), nh = GD_MUL_RN(exp(dh), h);
            const float nx = cx + GD_MUL_RN(dx, w), ny = cy + GD_MUL_RN(dy, h);
            boxes[4 * i] = ${KERNEL_NAME}_clip(nx - nw / 2.0f, width);
            boxes[4 * i + 1] = ${KERNEL_NAME}_clip(ny - nh / 2.0f, height);
            boxes[4 * i + 2] = ${KERNEL_NAME}_clip(nx + nw / 2.0f, width);
            boxes[4 * i + 3] = ${KERNEL_NAME}_clip(ny + nh / 2.0f, height);
        }
        for (int i = 0; i < n_all; ++i) sel[i] = i;
        int end = n_all;
#if ${PRE_TOP} > 0
        if (${PRE_TOP} < n_all) {
            ${KERNEL_NAME}_sort(sc, sel, tmp, n_all);
            end = ${PRE_TOP};
        }
#endif
        int kept = 0;
        for (int t = 0; t < end; ++t) {
            GLOBAL const float* b = boxes + 4 * sel[t];
            const float bw = b[2] - b[0], bh = b[3] - b[1];
            if (bw > ${MIN_SIZE} && bh > ${MIN_SIZE} && b[0] + bw / 2.0f < width && b[1] + bh / 2.0f < height)
                sel[kept++] = sel[t];
        }
        end = kept;
        const int limit = ${POST_TOP} < 0 ? end : ${POST_TOP};
        int first = 0;
        while (first < end && first < limit) {
            const int picked = gd_nms_pick(sc, sel, first, end);
            float pb[4], rb[4];
            for (int j = 0; j < 4; ++j) pb[j] = boxes[4 * picked + j];
            for (int t = first + 1; t < end; ++t) {
                for (int j = 0; j < 4; ++j) rb[j] = boxes[4 * sel[t] + j];
                keep[sel[t]] = !(gd_nms_iou(rb, pb) >= ${IOU_THR});
            }
            end = gd_nms_drop(sel, keep, first, end);
            ++first;
        }
        for (int t = 0; t < first; ++t) {
            const int i = sel[t];
            const float s = sc[i];
#if ${S_QUANT}
            out_scores[total] = (${T})clamp((int)round(s / ${O_SCALE} + (float)${O_ZP}), ${O_MIN}, ${O_MAX});
#else
            ${STORE}(out_scores, total, s);
#endif
            for (int j = 0; j < 4; ++j) {
#if ${B_QUANT}
                out_boxes[4 * total + j] = (${TB})clamp((int)round(boxes[4 * i + j] / ${OB_SCALE} + (float)${OB_ZP}),
                                                        ${OB_MIN}, ${OB_MAX});
#else
                ${B_STORE}(out_boxes, 4 * total + j, boxes[4 * i + j]);
#endif
            }
            out_batches[total] = img;
            ++total;
        }
    }
    count[0] = total;
}
