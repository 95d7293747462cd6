/* EMBEDDING_LOOKUP / GATHER (MODE 0) and HASHTABLE_LOOKUP (MODE 1): row gathers of ROW elements of type T
 * (float16 copied as its ushort bits); one work item per output element, COUNT in all.
 * MODE 0: the table is [outer, NROWS, ROW], the output [outer, NLOOK, ROW]:
 *         out[o, i, e] = table[o, lookups[i], e].  STATUS 1 (lookups not known in range at lowering):
 *         an index outside [0, NROWS) zero-fills its row and stores STATUS_CODE in the status word.
 * MODE 1: lower-bound binary search of lookups[i] in the sorted keys[NKEYS]; found at j: out[i] = values[j],
 *         hits[i] = 1; else a row of zero bytes and hits[i] = 0. */
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
    const int r = idx / ${ROW};                   /* o · NLOOK + i */
    const int e = idx - r * ${ROW};
#if ${MODE} == 0
    const int o = r / ${NLOOK};
    const int i = r - o * ${NLOOK};
    const int j = lookups[i];
    const int in_range = j >= 0 && j < ${NROWS};
    out[idx] = in_range ? values[(o * ${NROWS} + j) * ${ROW} + e] : (${T})0;
#if ${STATUS}
    if (!in_range && e == 0) *status = ${STATUS_CODE};
#endif
#else
    const int key = lookups[r];
    int lo = 0, hi = ${NKEYS};                    /* lower bound, as numpy searchsorted */
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (keys[mid] < key) lo = mid + 1; else hi = mid;
    }
    const int found = (lo < ${NKEYS} && keys[lo] == key) ? lo : -1;
    out[idx] = found >= 0 ? values[found * ${ROW} + e] : (${T})0;
    if (e == 0) hits[r] = (uchar)(found >= 0 ? 1 : 0);
#endif
}
