/* DENSIFY: a sparse tensor (its values in traversal order, see gpu_driver/ops/densify.py) expanded to
 * the dense tensor.  The traversal has LEVELS levels; level l has format FORMATS[l] (0 DENSE,
 * 1 SPARSE_CSR) and size SIZES[l], and its coordinate of dense element e is (e / DIVS[l]) % SIZES[l]
 * (the stride of the dimension it walks, times the block size where a block divides that dimension).
 * A SPARSE_CSR level's array segments and array indices lie in the int array `meta`, from SEGS[l]
 * and INDS[l], with SEG_LENS[l] and IND_LENS[l] entries.
 * MODE 0: copy the COUNT ints of one metadata array into meta from OFFSET (metadata a request brings).
 * MODE 1: one work item checks meta: each segments array starts at 0, never decreases and ends at its
 *         number of indices, every index is in [0, size); else it stores STATUS_CODE in the status word
 *         (at once when CONSISTENT is 0: the array lengths cannot describe the values).
 * MODE 2: one work item per dense element (COUNT in all), walking the levels from the root: a DENSE
 *         level moves to child pos · size + c, a SPARSE_CSR level to the index of c among the indices
 *         of position pos (SORTED 1: strictly increasing, binary search; 0: a scan keeping the last
 *         match, as the reference's scatter does).  An element not stored is FILL (0 or the zero
 *         point); T is any element type, float16 moved as its bits.  STATUS 1: the status word (the
 *         last parameter, set by MODE 1) is read first; bad metadata give FILL everywhere. */
#if ${MODE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT src, GLOBAL int* RESTRICT meta) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    meta[${OFFSET} + i] = src[i];
}
#elif ${MODE} == 1
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT meta, GLOBAL int* RESTRICT status) {
    if (GLOBAL_ID(0) != 0) return;
    const int fmt[${LEVELS}] = {${FORMATS}};
    const int size[${LEVELS}] = {${SIZES}};
    const int seg[${LEVELS}] = {${SEGS}};
    const int seg_len[${LEVELS}] = {${SEG_LENS}};
    const int ind[${LEVELS}] = {${INDS}};
    const int ind_len[${LEVELS}] = {${IND_LENS}};
#if ${CONSISTENT}
    int bad = 0;
#else
    int bad = 1;
#endif
    for (int l = 0; l < ${LEVELS} * ${CONSISTENT}; ++l) {
        if (fmt[l] == 0) continue;
        const GLOBAL int* s = meta + seg[l];
        if (s[0] != 0 || s[seg_len[l] - 1] != ind_len[l]) bad = 1;
        for (int p = 1; p < seg_len[l]; ++p) {
            if (s[p] < s[p - 1]) bad = 1;
        }
        for (int j = 0; j < ind_len[l]; ++j) {
            const int c = meta[ind[l] + j];
            if (c < 0 || c >= size[l]) bad = 1;
        }
    }
    if (bad) status[0] = ${STATUS_CODE};
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT values, GLOBAL const int* RESTRICT meta,
                           GLOBAL ${T}* RESTRICT out
#if ${STATUS}
                           , GLOBAL int* RESTRICT status
#endif
                           ) {
    const int e = GLOBAL_ID(0);
    if (e >= ${COUNT}) return;
#if ${STATUS}
    if (status[0] != 0) {
        out[e] = (${T})(${FILL});
        return;
    }
#endif
    const int fmt[${LEVELS}] = {${FORMATS}};
    const int size[${LEVELS}] = {${SIZES}};
    const int div[${LEVELS}] = {${DIVS}};
    const int seg[${LEVELS}] = {${SEGS}};
    const int ind[${LEVELS}] = {${INDS}};
    int pos = 0;
    for (int l = 0; l < ${LEVELS}; ++l) {
        const int c = (e / div[l]) % size[l];
        if (fmt[l] == 0) {
            pos = pos * size[l] + c;
            continue;
        }
        int lo = meta[seg[l] + pos];
        int hi = meta[seg[l] + pos + 1];
        int found = -1;
#if ${SORTED}
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            const int v = meta[ind[l] + mid];
            if (v == c) {
                found = mid;
                break;
            }
            if (v < c) lo = mid + 1; else hi = mid;
        }
#else
        for (int j = lo; j < hi; ++j) {
            if (meta[ind[l] + j] == c) found = j;
        }
#endif
        if (found < 0) {
            out[e] = (${T})(${FILL});
            return;
        }
        pos = found;
    }
    out[e] = values[pos];
}
#endif
