/* CONCATENATION / PACK, one launch per input: input [outer, IN_ROW] is copied into the output
 * [outer, OUT_ROW] at element offset OFFSET of each outer row; COUNT = outer · IN_ROW work items.
 * T: the element type (float16 is copied as its ushort bits).
 * REQUANT 1: a second input holds the output value of each quantized input value q (table[q − QMIN]). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in,
#if ${REQUANT}
                           GLOBAL const ${T}* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int o = i / ${IN_ROW};
    const int r = i - o * ${IN_ROW};
    const int dst = o * ${OUT_ROW} + ${OFFSET} + r;
#if ${REQUANT}
    out[dst] = table[(int)in[i] - (${QMIN})];
#else
    out[dst] = in[i];
#endif
}
