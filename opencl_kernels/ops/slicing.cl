/* Strided gather with an optional fill or mirror outside the input (SLICE, STRIDED_SLICE, SPLIT, TILE,
 * REVERSE, PAD, PAD_V2, MIRROR_PAD); raw element copies: T is the unsigned integer type of the element's
 * size, so every type (float16, NaN payloads) is copied bit for bit.
 *
 * The output is viewed as RANK axes (adjacent axes merged by the lowering where the mapping allows).
 * Along axis k the output coordinate o reads the input coordinate c = BEGIN[k] + o·STEP[k], then by MAP:
 *   0  c as is                                            (slices, SPLIT, REVERSE)
 *   1  c mod IN_DIMS[k]                                   (TILE)
 *   2  c outside [0, IN_DIMS[k]) on any axis: FILL        (PAD, PAD_V2: BEGIN = −padding before)
 *   3  c mirrored into [0, D), D = IN_DIMS[k]: c < 0 → −c − 1 + REFLECT, c ≥ D → 2D − 1 − REFLECT − c
 *      (MIRROR_PAD; REFLECT 1 = reflect, 0 = symmetric; paddings ≤ D − REFLECT, so one fold suffices)
 * and the element is in[Σ c·IN_STRIDES[k]].
 * OUT_DIMS, IN_DIMS, IN_STRIDES, BEGIN, STEP: brace-enclosed lists of RANK ints (the last axis has input
 * stride 1; MAP 1-3 have every step 1).  FILL: the pad value's raw bits (MAP 2 only).
 *
 * Work item = BLOCK consecutive elements of one output row (the last axis, BLOCKS blocks per row; ITEMS
 * = rows × BLOCKS): the other axes are decoded once per item, and the row is copied by plain loops over
 * runs of consecutive elements (PoCL vectorises those, not per-element index arithmetic).
 */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int gid = GLOBAL_ID(0);
    if (gid >= ${ITEMS}) return;
    const int out_dims[${RANK}] = ${OUT_DIMS};
    const int in_strides[${RANK}] = ${IN_STRIDES};
    const int begin[${RANK}] = ${BEGIN};
    const int step[${RANK}] = ${STEP};
#if ${MAP} != 0
    const int in_dims[${RANK}] = ${IN_DIMS};
#endif
    const int row = gid / ${BLOCKS};
    const int j0 = (gid - row * ${BLOCKS}) * ${BLOCK};
    const int j1 = min(j0 + ${BLOCK}, out_dims[${RANK} - 1]);
#if ${MAP} == 2
    int inside = 1;
#endif
    int rest = row;
    int src = 0;
    for (int k = ${RANK} - 2; k >= 0; --k) {
        const int o = rest % out_dims[k];
        rest /= out_dims[k];
        int c = begin[k] + o * step[k];
#if ${MAP} == 1
        c %= in_dims[k];
#elif ${MAP} == 2
        inside = inside && c >= 0 && c < in_dims[k];
#elif ${MAP} == 3
        if (c < 0) {
            c = -c - 1 + ${REFLECT};
        } else if (c >= in_dims[k]) {
            c = 2 * in_dims[k] - 1 - ${REFLECT} - c;
        }
#endif
        src += c * in_strides[k];
    }
    GLOBAL const ${T}* x = in + src;
    GLOBAL ${T}* y = out + row * out_dims[${RANK} - 1];
    const int b = begin[${RANK} - 1];
#if ${MAP} == 0
    const int s = step[${RANK} - 1];
    for (int j = j0; j < j1; ++j) y[j] = x[b + j * s];
#else
    const int d = in_dims[${RANK} - 1];
#endif
#if ${MAP} == 1
    for (int j = j0; j < j1;) {  /* runs up to the end of the input row */
        const int c = (b + j) % d;
        const int e = min(j1, j + d - c);
        for (int i = j; i < e; ++i) y[i] = x[c - j + i];
        j = e;
    }
#elif ${MAP} >= 2
    /* runs: [j0, lo) before the input row, [lo, hi) inside it, [hi, j1) after it */
    int lo = clamp(-b, j0, j1), hi = clamp(d - b, lo, j1);
#if ${MAP} == 2
    if (!inside) lo = hi = j1;
    for (int j = j0; j < lo; ++j) y[j] = (${T})${FILL};
    for (int j = lo; j < hi; ++j) y[j] = x[b + j];
    for (int j = hi; j < j1; ++j) y[j] = (${T})${FILL};
#else
    for (int j = j0; j < lo; ++j) y[j] = x[${REFLECT} - 1 - b - j];
    for (int j = lo; j < hi; ++j) y[j] = x[b + j];
    for (int j = hi; j < j1; ++j) y[j] = x[2 * d - 1 - ${REFLECT} - b - j];
#endif
#endif
}
