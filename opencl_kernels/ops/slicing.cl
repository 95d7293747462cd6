/* Strided gather with an optional fill or mirror outside the input (SLICE, STRIDED_SLICE, SPLIT, TILE,
 * REVERSE, PAD, PAD_V2, MIRROR_PAD); one work item per output element, raw element copies: T is the
 * unsigned integer type of the element's size, so every type (float16, NaN payloads) is copied bit for bit.
 *
 * The output is viewed as RANK axes (adjacent axes merged by the lowering where the mapping allows).
 * Along axis k the output coordinate o reads the input coordinate c = BEGIN[k] + o·STEP[k], then by MAP:
 *   0  c as is                                            (slices, SPLIT, REVERSE)
 *   1  c mod IN_DIMS[k]                                   (TILE)
 *   2  c outside [0, IN_DIMS[k]) on any axis: FILL        (PAD, PAD_V2: BEGIN = −padding before)
 *   3  c mirrored into [0, D), D = IN_DIMS[k]: c < 0 → −c − 1 + REFLECT, c ≥ D → 2D − 1 − REFLECT − c
 *      (MIRROR_PAD; REFLECT 1 = reflect, 0 = symmetric; paddings ≤ D − REFLECT, so one fold suffices)
 * and the element is in[Σ c·IN_STRIDES[k]].
 * OUT_DIMS, IN_DIMS, IN_STRIDES, BEGIN, STEP: brace-enclosed lists of RANK ints.  COUNT: output elements.
 * FILL: the pad value's raw bits (MAP 2 only).
 */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int gid = GLOBAL_ID(0);
    if (gid >= ${COUNT}) return;
    const int out_dims[${RANK}] = ${OUT_DIMS};
    const int in_strides[${RANK}] = ${IN_STRIDES};
    const int begin[${RANK}] = ${BEGIN};
    const int step[${RANK}] = ${STEP};
#if ${MAP} != 0
    const int in_dims[${RANK}] = ${IN_DIMS};
#endif
#if ${MAP} == 2
    int inside = 1;
#endif
    int rest = gid;
    int src = 0;
    for (int k = ${RANK} - 1; k >= 0; --k) {
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
#if ${MAP} == 2
    out[gid] = inside ? in[src] : (${T})${FILL};
#else
    out[gid] = in[src];
#endif
}
