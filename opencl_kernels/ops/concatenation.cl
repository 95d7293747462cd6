/* CONCATENATION of a requantised quant8 input, one launch per such input: input [outer, IN_ROW] is
 * copied into the output [outer, OUT_ROW] at element offset OFFSET of each outer row, each value q
 * replaced by the output value table[q − QMIN]; COUNT = outer · IN_ROW work items.  The plain copies
 * of the other inputs: concatenation_rows.cl. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${T}* RESTRICT table,
                           GLOBAL ${T}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int o = i / ${IN_ROW};
    const int r = i - o * ${IN_ROW};
    out[o * ${OUT_ROW} + ${OFFSET} + r] = table[(int)in[i] - (${QMIN})];
}
