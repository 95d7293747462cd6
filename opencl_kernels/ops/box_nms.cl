/* BOX_WITH_NMS_LIMIT, one work item (the algorithm is sequential), AOSP's order of operations exactly:
 * scores [R, K] (type T), rois [R, 4K] (type TR), batch of each roi [R] (int; runs of equal values are
 * one batch).  Per batch run and class c >= 1: the candidates whose score > SCORE_THR, an in-place NMS
 * (pick the first highest score, decay the others by the kernel of their IoU with the pick — KERNEL 0
 * hard, 1 linear, 2 gaussian — drop those below NMS_THR by swapping them to the end), at most MAXDET
 * picks (< 0: no limit); the run's picks stably sorted by score, cut to MAXDET, stably sorted by class
 * then score.  Outputs: the decayed scores (T), the rois as stored (TR, copied through float: exact), class
 * and batch of each pick,
 * in order; *count = the number of picks, or -1 when a box of a run has x1 > x2 or y1 > y2.
 * sc [R*K] float: the working scores; sel, res, keep [R*K] int: candidate and pick lists, survival
 * flags.  The NMS steps are nms.h's.
 * Quantized types are dequantized as (q - zp)·scale in float (S_ZP/S_SCALE, B_ZP/B_SCALE); output
 * scores are requantized with round half away from zero (O_SCALE, O_ZP, O_MIN, O_MAX).
 * No multiply-add is contracted: every product and sum is rounded as in the reference (GD_MUL_RN). */
#if ${S_QUANT}
#define GD_NMS_SCORE(p, i) GD_MUL_RN((float)((int)(p)[i] - ${S_ZP}), ${S_SCALE})
#else
#define GD_NMS_SCORE(p, i) ${LOAD}(p, i)
#endif
#if ${B_QUANT}
#define GD_NMS_BOX(p, i) GD_MUL_RN((float)((int)(p)[i] - ${B_ZP}), ${B_SCALE})
#else
#define GD_NMS_BOX(p, i) ${B_LOAD}(p, i)
#endif

/* box b (flat box index) as floats */
DEVICE_FN void ${KERNEL_NAME}_box(GLOBAL const ${TR}* rois, int b, float* box) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
    for (int j = 0; j < 4; ++j) box[j] = GD_NMS_BOX(rois, 4 * b + j);
}

DEVICE_FN float ${KERNEL_NAME}_decay(float iou) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
#if ${KERNEL} == 0
    return iou < ${IOU_THR} ? 1.0f : 0.0f;
#elif ${KERNEL} == 1
    return iou < ${IOU_THR} ? 1.0f : 1.0f - iou;
#else
    return exp(GD_MUL_RN(GD_MUL_RN(-1.0f, iou), iou) / ${SIGMA});
#endif
}

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT scores, GLOBAL const ${TR}* RESTRICT rois,
                           GLOBAL const int* RESTRICT batches, GLOBAL float* RESTRICT sc,
                           GLOBAL int* RESTRICT sel, GLOBAL int* RESTRICT res, GLOBAL int* RESTRICT keep,
                           GLOBAL ${T}* RESTRICT out_scores, GLOBAL ${TR}* RESTRICT out_rois,
                           GLOBAL int* RESTRICT out_classes, GLOBAL int* RESTRICT out_batches,
                           GLOBAL int* RESTRICT count) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
    if (GLOBAL_ID(0) != 0) return;
    for (int i = 0; i < ${R} * ${K}; ++i) sc[i] = GD_NMS_SCORE(scores, i);
    int total = 0;
    for (int start = 0; start < ${R};) {
        int length = 1;
        while (start + length < ${R} && batches[start + length] == batches[start]) ++length;
        const int base = start * ${K};
        /* the reference checks the first `length` boxes of the run's flat box list */
        for (int j = 0; j < length; ++j) {
            const int b = base + j;
            if (!(GD_NMS_BOX(rois, 4 * b) <= GD_NMS_BOX(rois, 4 * b + 2) &&
                  GD_NMS_BOX(rois, 4 * b + 1) <= GD_NMS_BOX(rois, 4 * b + 3))) {
                count[0] = -1;
                return;
            }
        }
        GLOBAL float* s = sc + base;
        int nres = 0;
        for (int c = 1; c < ${K}; ++c) {
            int end = 0;
            for (int b = 0; b < length; ++b)
                if (s[b * ${K} + c] > ${SCORE_THR}) sel[end++] = b * ${K} + c;
            const int limit = ${MAXDET} < 0 ? end : ${MAXDET};
            int first = 0;
            while (first < end && first < limit) {
                const int picked = gd_nms_pick(s, sel, first, end);
                float pb[4], rb[4];
                ${KERNEL_NAME}_box(rois, base + picked, pb);
                for (int t = first + 1; t < end; ++t) {
                    const int r = sel[t];
                    ${KERNEL_NAME}_box(rois, base + r, rb);
                    s[r] = GD_MUL_RN(s[r], ${KERNEL_NAME}_decay(gd_nms_iou(rb, pb)));
                    keep[r] = !(s[r] < ${NMS_THR});
                }
                end = gd_nms_drop(sel, keep, first, end);
                ++first;
            }
            for (int t = 0; t < first; ++t) res[nres++] = sel[t];
        }
        /* stable sort by score, descending */
        for (int t = 1; t < nres; ++t) {
            const int x = res[t];
            int u = t;
            while (u > 0 && s[x] > s[res[u - 1]]) {
                res[u] = res[u - 1];
                --u;
            }
            res[u] = x;
        }
#if ${MAXDET} >= 0
        if (nres > ${MAXDET}) nres = ${MAXDET};
#endif
        /* stable sort by class, then score descending */
        for (int t = 1; t < nres; ++t) {
            const int x = res[t];
            int u = t;
            while (u > 0 && (x % ${K} < res[u - 1] % ${K} ||
                             (x % ${K} == res[u - 1] % ${K} && s[x] > s[res[u - 1]]))) {
                res[u] = res[u - 1];
                --u;
            }
            res[u] = x;
        }
        for (int t = 0; t < nres; ++t) {
            const int g = base + res[t];
#if ${O_QUANT}
            const float q = s[res[t]] / ${O_SCALE} + (float)${O_ZP};
            out_scores[total] = (${T})clamp((int)round(q), ${O_MIN}, ${O_MAX});  /* ties away from zero */
#else
            ${STORE}(out_scores, total, s[res[t]]);
#endif
            for (int j = 0; j < 4; ++j) ${B_STORE}(out_rois, 4 * total + j, ${B_LOAD}(rois, 4 * g + j));
            out_classes[total] = g % ${K};
            out_batches[total] = batches[g / ${K}];
            ++total;
        }
        start += length;
    }
    count[0] = total;
}
