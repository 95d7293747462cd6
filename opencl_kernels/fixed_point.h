/* gpu_driver shared kernel dialect: quantised fixed-point helpers (operands.md §8.3), written once for
 * both dialects; code generation appends this file to the dialect prelude (see prelude.h). */
#ifndef GD_FIXED_POINT
#define GD_FIXED_POINT

/* ---- quantised fixed point (operands.md §8.3) ---- */
DEVICE_FN int SRDHM(int a, int b) {
    if (a == INT_MIN && b == INT_MIN) return INT_MAX;
    int64 p = (int64)a * (int64)b;
    int64 nudge = p >= 0 ? ((int64)1 << 30) : ((int64)1 - ((int64)1 << 30));
    return (int)((p + nudge) / ((int64)1 << 31)); /* C division truncates */
}

DEVICE_FN int RDBPOT(int x, int e) {
    int64 mask = ((int64)1 << e) - 1;
    int64 rem = (int64)x & mask;
    int64 thr = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int)(((int64)x >> e) + (rem > thr ? 1 : 0));
}

DEVICE_FN int MBQM(int x, int m, int shift) {
    int l = shift > 0 ? shift : 0;
    int r = shift > 0 ? 0 : -shift;
    int64 xl = (int64)x << l;
    xl = xl > (int64)INT_MAX ? (int64)INT_MAX : (xl < (int64)INT_MIN ? (int64)INT_MIN : xl);
    return RDBPOT(SRDHM((int)xl, m), r);
}

DEVICE_FN int MBQM_LT1(int x, int m, int shift) { return RDBPOT(SRDHM(x, m), -shift); }

DEVICE_FN int MBQM_GT1(int x, int m, int shift) { return SRDHM((int)((int64)x << shift), m); }

#endif /* GD_FIXED_POINT */
