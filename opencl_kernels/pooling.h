/* Dialect-neutral helper of the float pooling templates (appended to either prelude after nms.h). */
/* acc (float lvalue) takes in the cell value v for pooling KIND 0 average (the sum), 1 max (AOSP's
 * acc = std::max(acc, v) = acc < v ? v : acc: a NaN cell never wins) or 2 l2 (the sum of squares) */
#define POOL_ACCUMULATE(kind, acc, v) \
    ((acc) = (kind) == 1 ? ((acc) < (v) ? (v) : (acc)) : (kind) == 2 ? (acc) + (v) * (v) : (acc) + (v))
