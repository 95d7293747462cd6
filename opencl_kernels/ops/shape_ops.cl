/* DEPTH_TO_SPACE (MODE 0) / SPACE_TO_DEPTH (MODE 1), NHWC, block B; one work item per output element.
 * DEPTH_TO_SPACE: out[n, h·B+i, w·B+j, c] = in[n, h, w, (i·B + j)·OC + c]
 * SPACE_TO_DEPTH: out[n, h, w, (i·B + j)·IC + c] = in[n, h·B+i, w·B+j, c] */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    int r = idx;
    const int c = r % ${OC}; r /= ${OC};
    const int x = r % ${OW}; r /= ${OW};
    const int y = r % ${OH};
    const int n = r / ${OH};
#if ${MODE} == 0
    const int h = y / ${B}, i = y % ${B};
    const int w = x / ${B}, j = x % ${B};
    out[idx] = in[((n * ${IH} + h) * ${IW} + w) * ${IC} + (i * ${B} + j) * ${OC} + c];
#else
    const int ic = c % ${IC};
    const int ij = c / ${IC};
    const int i = ij / ${B}, j = ij % ${B};
    out[idx] = in[((n * ${IH} + y * ${B} + i) * ${IW} + x * ${B} + j) * ${IC} + ic];
#endif
}
