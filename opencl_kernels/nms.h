/* gpu_driver shared kernel dialect: AOSP's in-place non-maximum suppression over a list of candidate
 * indices, written once for the detection kernels (box_nms.cl, proposals.cl); appended to the
 * dialect prelude.  Every product and sum is rounded separately (no contraction), as in the reference. */
#ifndef GD_NMS
#define GD_NMS

#ifdef GD_OPENCL
#define GD_MUL_RN(a, b) ((a) * (b)) /* with FP_CONTRACT OFF in the function that uses it */
#else
#define GD_MUL_RN(a, b) __fmul_rn((a), (b))
#endif

/* IoU of box a with the picked box p, (x1, y1, x2, y2) each: AOSP's getIoUAxisAligned(a, p) */
DEVICE_FN float gd_nms_iou(const float* a, const float* p) {
#ifdef GD_OPENCL
#pragma OPENCL FP_CONTRACT OFF
#endif
    const float area1 = GD_MUL_RN(a[2] - a[0], a[3] - a[1]);
    const float area2 = GD_MUL_RN(p[2] - p[0], p[3] - p[1]);
    const float x1 = a[0] < p[0] ? p[0] : a[0], y1 = a[1] < p[1] ? p[1] : a[1];
    const float x2 = p[2] < a[2] ? p[2] : a[2], y2 = p[3] < a[3] ? p[3] : a[3];
    const float w = x2 - x1, h = y2 - y1;
    const float inter = GD_MUL_RN(w < 0.0f ? 0.0f : w, h < 0.0f ? 0.0f : h);
    const float sum = area1 + area2;
    return inter / (sum - inter);
}

/* Move the first highest score of sel[first, end) to sel[first] and return it (a NaN first stays;
 * other NaNs never win). */
DEVICE_FN int gd_nms_pick(GLOBAL const float* score, GLOBAL int* sel, int first, int end) {
    int best = first;
    if (!isnan(score[sel[first]])) {
        float top = -INFINITY;
        for (int t = first; t < end; ++t) {
            const float v = score[sel[t]];
            if (!isnan(v) && v > top) {
                top = v;
                best = t;
            }
        }
    }
    const int picked = sel[best];
    sel[best] = sel[first];
    sel[first] = picked;
    return picked;
}

/* Drop the candidates of sel[first + 1, end) whose keep flag (indexed by candidate) is 0, each swapped
 * with the last remaining one; returns the new end. */
DEVICE_FN int gd_nms_drop(GLOBAL int* sel, GLOBAL const int* keep, int first, int end) {
    int t = first + 1;
    while (t < end) {
        if (keep[sel[t]]) {
            ++t;
        } else {
            --end;
            const int x = sel[t];
            sel[t] = sel[end];
            sel[end] = x;
        }
    }
    return end;
}

#endif /* GD_NMS */
