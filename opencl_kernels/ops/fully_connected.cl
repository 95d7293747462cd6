/* FULLY_CONNECTED: out[b, u] = act(bias[u] + Σ_i x[b, i]·w[u, i]).
 * Work item = (unit u, batch block of BB rows).  w repacked at lowering to [I][U] (so neighbouring
 * work items read neighbouring weights), ACC_T = float or int (q_w - zp_w); bias [U] ACC_T.
 * QUANT: out = clamp(ZO + MBQM(acc, MULT, SHIFT), ACT_MIN, ACT_MAX). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${ACC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias, GLOBAL ${T}* RESTRICT out) {
    const int u = GLOBAL_ID(0);
    const int bb = GLOBAL_ID(1);
    if (u >= ${U} || bb >= ${BBLOCKS}) return;
    int rows[${BB}];
    for (int r = 0; r < ${BB}; ++r) rows[r] = min(bb * ${BB} + r, ${B} - 1) * ${I};
    ${ACC_T} acc[${BB}];
    for (int r = 0; r < ${BB}; ++r) acc[r] = bias[u];
    for (int i = 0; i < ${I}; ++i) {
        const ${ACC_T} wv = w[i * ${U} + u];
        for (int r = 0; r < ${BB}; ++r) acc[r] += ((${ACC_T})x[rows[r] + i] - (${ACC_T})${ZX}) * wv;
    }
    for (int r = 0; r < ${BB}; ++r) {
        const int b = bb * ${BB} + r;
        if (b >= ${B}) break;
#if ${QUANT}
        const int q = ${ZO} + MBQM(acc[r], ${MULT}, ${SHIFT});
        out[b * ${U} + u] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#else
        float v = acc[r];
#if ${HAS_ACT}
        v = fmin(fmax(v, ${ACT_FMIN}), ${ACT_FMAX});
#endif
        out[b * ${U} + u] = v;
#endif
    }
}
