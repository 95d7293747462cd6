/* TOPK_V2 (operations.md 90): the K largest elements of each of ROWS rows of N elements (the last axis).
 * One work item per input element: its rank in the row is the number of elements ordered before it —
 * larger, or equal with a larger index; NaN (KIND 0) orders above every number — and the elements of
 * rank < K are written at their rank: values (T, copied through LOAD/STORE for float types) and int32
 * indices.  T: element type; KIND: 0 float (through LOAD), 1 integer. */
DEVICE_FN int ${KERNEL_NAME}_before(GLOBAL const ${T}* row, int j, int i) {
#if ${KIND} == 0
    const float a = ${LOAD}(row, j);
    const float b = ${LOAD}(row, i);
    const int na = a != a;
    const int nb = b != b;
    if (na != nb) return na;
    if (na) return j > i;
#else
    const int a = (int)row[j];
    const int b = (int)row[i];
#endif
    return a > b || (a == b && j > i);
}

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT values,
                           GLOBAL int* RESTRICT indices) {
    const int g = GLOBAL_ID(0);
    if (g >= ${ROWS} * ${N}) return;
    const int row = g / ${N};
    const int i = g % ${N};
    GLOBAL const ${T}* x = in + row * ${N};
    int rank = 0;
    for (int j = 0; j < ${N}; ++j) rank += ${KERNEL_NAME}_before(x, j, i);
    if (rank >= ${K}) return;
#if ${KIND} == 0
    ${STORE}(values, row * ${K} + rank, ${LOAD}(x, i));
#else
    values[row * ${K} + rank] = x[i];
#endif
    indices[row * ${K} + rank] = i;
}
