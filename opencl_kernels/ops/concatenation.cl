/* CONCATENATION, one launch per input: input [OUTER, A_IN·INNER] is copied into the output
 * [OUTER, A_OUT·INNER] at element offset OFF·INNER of each outer row.
 * REQUANT: q_out = clamp((int)ROUND(q·RS + RB) + ZO, QMIN, QMAX) in fp32 (operands.md §8.2). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int o = i / ${IN_ROW};
    const int r = i - o * ${IN_ROW};
    const int dst = o * ${OUT_ROW} + ${OFFSET} + r;
#if ${REQUANT}
    const float v = (float)in[i] * ${RS} + ${RB};
    out[dst] = (${T})clamp((int)ROUND(v) + ${ZO}, ${QMIN}, ${QMAX});
#else
    out[dst] = in[i];
#endif
}
