/* LSTM (one step), three stages (operations.md 16):
 * STAGE 0 (gates), work item (g·U + u, b), g = 0 i, 1 f, 2 c, 3 o (i skipped with CIFG):
 *   pre[b, g·U + u] = Σ_k x[b,k]·Wx_g[u,k] + Σ_j h_prev[b,j]·Wh_g[u,j]        (scratch [B, 4U])
 * STAGE 1 (cell): peepholes, bias or layer norm, gates, c_out; m = o·g(c) goes to h_out/output, or
 *   to scratch m [B, U] when there is a projection.  Without LN: work item (u, b); with LN: one work
 *   item per batch row b (the statistics need the whole row).
 * STAGE 2 (projection), work item (o, b): h = clip(Σ_u m[b,u]·Wp[o,u] (+ bp[o])) → h_out, output.
 * With AUX, stage 0 also adds Σ_k aux[b,k]·Wa_g[u,k] (bidirectional cross-linking; A = aux width).
 * Rows of x, h_prev, aux and output are read/written at OFF + b·BSTRIDE (X_, H_, A_, OUT_): one step of a
 * sequence addresses its time slice of [T, B, ·] or [B, T, ·] tensors; a single step uses 0 and the row
 * width. */
#if ${STAGE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT x, GLOBAL const float* RESTRICT h_prev,
#if !${CIFG}
                           GLOBAL const float* RESTRICT wxi,
#endif
                           GLOBAL const float* RESTRICT wxf, GLOBAL const float* RESTRICT wxc,
                           GLOBAL const float* RESTRICT wxo,
#if !${CIFG}
                           GLOBAL const float* RESTRICT whi,
#endif
                           GLOBAL const float* RESTRICT whf, GLOBAL const float* RESTRICT whc,
                           GLOBAL const float* RESTRICT who,
#if ${AUX}
                           GLOBAL const float* RESTRICT aux,
#if !${CIFG}
                           GLOBAL const float* RESTRICT wai,
#endif
                           GLOBAL const float* RESTRICT waf, GLOBAL const float* RESTRICT wac,
                           GLOBAL const float* RESTRICT wao,
#endif
                           GLOBAL float* RESTRICT pre) {
    const int gu = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (gu >= 4 * ${U} || b >= ${B}) return;
    const int g = gu / ${U};
    const int u = gu - g * ${U};
#if ${CIFG}
    if (g == 0) return;
    GLOBAL const float* wx = g == 1 ? wxf : g == 2 ? wxc : wxo;
    GLOBAL const float* wh = g == 1 ? whf : g == 2 ? whc : who;
#else
    GLOBAL const float* wx = g == 0 ? wxi : g == 1 ? wxf : g == 2 ? wxc : wxo;
    GLOBAL const float* wh = g == 0 ? whi : g == 1 ? whf : g == 2 ? whc : who;
#endif
    float acc = 0.0f;
    for (int k = 0; k < ${I}; ++k) acc += x[${X_OFF} + b * ${X_BSTRIDE} + k] * wx[u * ${I} + k];
    float acc2 = 0.0f;
    for (int j = 0; j < ${O}; ++j) acc2 += h_prev[${H_OFF} + b * ${H_BSTRIDE} + j] * wh[u * ${O} + j];
#if ${AUX}
#if ${CIFG}
    GLOBAL const float* wa = g == 1 ? waf : g == 2 ? wac : wao;
#else
    GLOBAL const float* wa = g == 0 ? wai : g == 1 ? waf : g == 2 ? wac : wao;
#endif
    for (int k = 0; k < ${A}; ++k) acc += aux[${A_OFF} + b * ${A_BSTRIDE} + k] * wa[u * ${A} + k];
#endif
    pre[b * 4 * ${U} + gu] = acc + acc2;
}
#elif ${STAGE} == 1
#if ${LN}
/* mean and 1/sqrt(var + 1e-8) of pre_g + peep⊙cell over the U entries of row pre */
DEVICE_FN void ${KERNEL_NAME}_stats(GLOBAL const float* pre, GLOBAL const float* peep, GLOBAL const float* cell,
                                    int has_peep, float* mean, float* rstd) {
    float s = 0.0f;
    for (int u = 0; u < ${U}; ++u) s += pre[u] + (has_peep ? peep[u] * cell[u] : 0.0f);
    const float m = s / (float)${U};
    float v = 0.0f;
    for (int u = 0; u < ${U}; ++u) {
        const float d = pre[u] + (has_peep ? peep[u] * cell[u] : 0.0f) - m;
        v += d * d;
    }
    *mean = m;
    *rstd = 1.0f / sqrt(v / (float)${U} + 1e-8f);
}
#endif
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT pre, GLOBAL const float* RESTRICT c_prev,
#if ${PEEP} && !${CIFG}
                           GLOBAL const float* RESTRICT w_ci,
#endif
#if ${PEEP}
                           GLOBAL const float* RESTRICT w_cf, GLOBAL const float* RESTRICT w_co,
#endif
#if !${CIFG}
                           GLOBAL const float* RESTRICT b_i,
#endif
                           GLOBAL const float* RESTRICT b_f, GLOBAL const float* RESTRICT b_c,
                           GLOBAL const float* RESTRICT b_o,
#if ${LN} && !${CIFG}
                           GLOBAL const float* RESTRICT ln_i,
#endif
#if ${LN}
                           GLOBAL const float* RESTRICT ln_f, GLOBAL const float* RESTRICT ln_c,
                           GLOBAL const float* RESTRICT ln_o,
#endif
                           GLOBAL float* RESTRICT c_out,
#if ${PROJ}
                           GLOBAL float* RESTRICT m_out
#else
                           GLOBAL float* RESTRICT h_out, GLOBAL float* RESTRICT out
#endif
                           ) {
#if ${LN}
    const int b = GLOBAL_ID(0);
    if (b >= ${B}) return;
    GLOBAL const float* row = pre + b * 4 * ${U};
    GLOBAL const float* cp = c_prev + b * ${U};
    GLOBAL float* cn = c_out + b * ${U};
    float mi = 0.0f, ri = 0.0f, mf, rf, mc, rc, mo, ro;
#if ${PEEP}
#if !${CIFG}
    ${KERNEL_NAME}_stats(row, w_ci, cp, 1, &mi, &ri);
#endif
    ${KERNEL_NAME}_stats(row + ${U}, w_cf, cp, 1, &mf, &rf);
#else
#if !${CIFG}
    ${KERNEL_NAME}_stats(row, cp, cp, 0, &mi, &ri);
#endif
    ${KERNEL_NAME}_stats(row + ${U}, cp, cp, 0, &mf, &rf);
#endif
    ${KERNEL_NAME}_stats(row + 2 * ${U}, cp, cp, 0, &mc, &rc);
    for (int u = 0; u < ${U}; ++u) {
        float pf = row[${U} + u];
#if ${PEEP}
        pf += w_cf[u] * cp[u];
#endif
        const float f = gd_sigmoid((pf - mf) * rf * ln_f[u] + b_f[u]);
#if ${CIFG}
        const float ig = 1.0f - f;
#else
        float pi = row[u];
#if ${PEEP}
        pi += w_ci[u] * cp[u];
#endif
        const float ig = gd_sigmoid((pi - mi) * ri * ln_i[u] + b_i[u]);
#endif
        const float ch = gd_recurrent_act((row[2 * ${U} + u] - mc) * rc * ln_c[u] + b_c[u], ${ACT});
        float c = f * cp[u] + ig * ch;
#if ${HAS_CELL_CLIP}
        c = fmin(fmax(c, -${CELL_CLIP}), ${CELL_CLIP});
#endif
        cn[u] = c;
    }
#if ${PEEP}
    ${KERNEL_NAME}_stats(row + 3 * ${U}, w_co, cn, 1, &mo, &ro);
#else
    ${KERNEL_NAME}_stats(row + 3 * ${U}, cp, cp, 0, &mo, &ro);
#endif
    for (int u = 0; u < ${U}; ++u) {
        float po = row[3 * ${U} + u];
#if ${PEEP}
        po += w_co[u] * cn[u];
#endif
        const float o = gd_sigmoid((po - mo) * ro * ln_o[u] + b_o[u]);
        const float m = o * gd_recurrent_act(cn[u], ${ACT});
#if ${PROJ}
        m_out[b * ${U} + u] = m;
#else
        h_out[b * ${U} + u] = m;
        out[${OUT_OFF} + b * ${OUT_BSTRIDE} + u] = m;
#endif
    }
#else
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    GLOBAL const float* row = pre + b * 4 * ${U};
    const float cp = c_prev[b * ${U} + u];
    float pf = row[${U} + u];
#if ${PEEP}
    pf += w_cf[u] * cp;
#endif
    const float f = gd_sigmoid(pf + b_f[u]);
#if ${CIFG}
    const float ig = 1.0f - f;
#else
    float pi = row[u];
#if ${PEEP}
    pi += w_ci[u] * cp;
#endif
    const float ig = gd_sigmoid(pi + b_i[u]);
#endif
    const float ch = gd_recurrent_act(row[2 * ${U} + u] + b_c[u], ${ACT});
    float c = f * cp + ig * ch;
#if ${HAS_CELL_CLIP}
    c = fmin(fmax(c, -${CELL_CLIP}), ${CELL_CLIP});
#endif
    c_out[b * ${U} + u] = c;
    float po = row[3 * ${U} + u];
#if ${PEEP}
    po += w_co[u] * c;
#endif
    const float o = gd_sigmoid(po + b_o[u]);
    const float m = o * gd_recurrent_act(c, ${ACT});
#if ${PROJ}
    m_out[b * ${U} + u] = m;
#else
    h_out[b * ${U} + u] = m;
    out[${OUT_OFF} + b * ${OUT_BSTRIDE} + u] = m;
#endif
#endif
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT m, GLOBAL const float* RESTRICT wp,
#if ${PROJ_BIAS}
                           GLOBAL const float* RESTRICT bp,
#endif
                           GLOBAL float* RESTRICT h_out, GLOBAL float* RESTRICT out) {
    const int o = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (o >= ${O} || b >= ${B}) return;
    float acc = 0.0f;
    for (int u = 0; u < ${U}; ++u) acc += m[b * ${U} + u] * wp[o * ${U} + u];
#if ${PROJ_BIAS}
    acc += bp[o];
#endif
#if ${HAS_PROJ_CLIP}
    acc = fmin(fmax(acc, -${PROJ_CLIP}), ${PROJ_CLIP});
#endif
    h_out[b * ${O} + o] = acc;
    out[${OUT_OFF} + b * ${OUT_BSTRIDE} + o] = acc;
}
#endif
