/* EMBEDDING_LOOKUP (MODE 0) and HASHTABLE_LOOKUP (MODE 1): row gathers of ROW elements.
 * MODE 0: out[i] = values[lookups[i]].  STATUS 1 (lookups not known in range at lowering): an index outside
 *         [0, NROWS) zero-fills its row and stores STATUS_CODE in the status word (last argument).
 * MODE 1: lower-bound binary search of lookups[i] in the sorted keys[NKEYS]; found at j: out[i] = values[j],
 *         hits[i] = 1; else a row of zero bytes and hits[i] = 0.  One work item per output element. */
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT lookups,
#if ${MODE} == 1
                           GLOBAL const int* RESTRICT keys,
#endif
                           GLOBAL const ${T}* RESTRICT values, GLOBAL ${T}* RESTRICT out
#if ${MODE} == 1
                           , GLOBAL uchar* RESTRICT hits
#endif
#if ${STATUS}
                           , GLOBAL int* RESTRICT status
#endif
                           ) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    const int i = idx / ${ROW};
    const int e = idx - i * ${ROW};
#if ${MODE} == 0
    const int j = lookups[i];
    const int in_range = j >= 0 && j < ${NROWS};
    out[idx] = in_range ? values[j * ${ROW} + e] : (${T})0;
#if ${STATUS}
    if (!in_range && e == 0) *status = ${STATUS_CODE};
#endif
#else
    const int key = lookups[i];
    int lo = 0, hi = ${NKEYS};                    /* lower bound, as numpy searchsorted */
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1; else hi = mid;
    }
    const int found = (lo < ${NKEYS} && keys[lo] == key) ? lo : -1;
    out[idx] = found >= 0 ? values[found * ${ROW} + e] : (${T})0;
    if (e == 0) hits[i] = (uchar)(found >= 0 ? 1 : 0);
#endif
}
