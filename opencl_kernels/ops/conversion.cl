/* CAST and QUANTIZE (operations.md 45, 72), one work item per element of COUNT.
 * T_IN / T_OUT: the stored element types.  FLOAT_IN: the input is TENSOR_FLOAT32/16, read as float
 * through ${LOAD}; otherwise it is read as an int (TENSOR_INT32, the byte of TENSOR_QUANT8_ASYMM).
 * OP 0 CAST, by OUT_KIND:
 *   0 to float: written through ${OUT_STORE} (round to nearest even);
 *   1 to TENSOR_INT32: truncation toward zero; NaN and floats outside the int32 range give INT_MIN;
 *   2 to TENSOR_QUANT8_ASYMM: clamp to [0, 255], then truncation (NaN gives 0).
 * OP 1 QUANTIZE: t holds LEVELS (= QMAX - QMIN) non-decreasing float thresholds, t[k] the smallest float
 *   that quantizes to QMIN + k + 1 or above; out = QMIN + the number of thresholds <= x (binary search),
 *   and QMAX for NaN. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T_IN}* RESTRICT in,
#if ${OP} == 1
                           GLOBAL const float* RESTRICT t,
#endif
                           GLOBAL ${T_OUT}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
#if ${FLOAT_IN}
    const float v = ${LOAD}(in, i);
#else
    const int v = (int)in[i];
#endif
#if ${OP} == 1
    int q = ${QMAX};
    if (v == v) {
        int lo = 0, hi = ${LEVELS};
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (t[mid] <= v) lo = mid + 1; else hi = mid;
        }
        q = ${QMIN} + lo;
    }
    out[i] = (${T_OUT})q;
#elif ${OUT_KIND} == 0
    ${OUT_STORE}(out, i, (float)v);
#elif ${OUT_KIND} == 1 && ${FLOAT_IN}
    out[i] = (v != v || v >= 2147483648.0f || v < -2147483648.0f) ? INT_MIN : (int)v;
#elif ${OUT_KIND} == 1
    out[i] = v;
#elif ${FLOAT_IN}
    out[i] = (uchar)(v != v ? 0 : (v < 0.0f ? 0 : (v > 255.0f ? 255 : (int)v)));
#else
    out[i] = (uchar)clamp(v, 0, 255);
#endif
}
