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
 * width.  Tensors are stored as ${T} (float or half: ${LOAD} / ${STORE}), computed in float; the scratch
 * buffers pre and m are float. */
#if ${STAGE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${T}* RESTRICT h_prev,
#if !${CIFG}
                           GLOBAL const ${T}* RESTRICT wxi,
#endif
                           GLOBAL const ${T}* RESTRICT wxf, GLOBAL const ${T}* RESTRICT wxc,
                           GLOBAL const ${T}* RESTRICT wxo,
#if !${CIFG}
                           GLOBAL const ${T}* RESTRICT whi,
#endif
                           GLOBAL const ${T}* RESTRICT whf, GLOBAL const ${T}* RESTRICT whc,
                           GLOBAL const ${T}* RESTRICT who,
#if ${AUX}
                           GLOBAL const ${T}* RESTRICT aux,
#if !${CIFG}
                           GLOBAL const ${T}* RESTRICT wai,
#endif
                           GLOBAL const ${T}* RESTRICT waf, GLOBAL const ${T}* RESTRICT wac,
                           GLOBAL const ${T}* RESTRICT wao,
#endif
                           GLOBAL float* RESTRICT pre) {
    const int gu = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (gu >= 4 * ${U} || b >= ${B}) return;
    const int g = gu / ${U};
    const int u = gu - g * ${U};
#if ${CIFG}
    if (g == 0) return;
    GLOBAL const ${T}* wx = g == 1 ? wxf : g == 2 ? wxc : wxo;
    GLOBAL const ${T}* wh = g == 1 ? whf : g == 2 ? whc : who;
#else
    GLOBAL const ${T}* wx = g == 0 ? wxi : g == 1 ? wxf : g == 2 ? wxc : wxo;
    GLOBAL const ${T}* wh = g == 0 ? whi : g == 1 ? whf : g == 2 ? whc : who;
#endif
    float acc = 0.0f;
    for (int k = 0; k < ${I}; ++k) acc += ${LOAD}(x, ${X_OFF} + b * ${X_BSTRIDE} + k) * ${LOAD}(wx, u * ${I} + k);
    float acc2 = 0.0f;
    for (int j = 0; j < ${O}; ++j) acc2 += ${LOAD}(h_prev, ${H_OFF} + b * ${H_BSTRIDE} + j) * ${LOAD}(wh, u * ${O} + j);
#if ${AUX}
#if ${CIFG}
    GLOBAL const ${T}* wa = g == 1 ? waf : g == 2 ? wac : wao;
#else
    GLOBAL const ${T}* wa = g == 0 ? wai : g == 1 ? waf : g == 2 ? wac : wao;
#endif
    for (int k = 0; k < ${A}; ++k) acc += ${LOAD}(aux, ${A_OFF} + b * ${A_BSTRIDE} + k) * ${LOAD}(wa, u * ${A} + k);
#endif
    pre[b * 4 * ${U} + gu] = acc + acc2;
}
#elif ${STAGE} == 1
#if ${LN}
/* mean and 1/sqrt(var + 1e-8) of pre_g + peep⊙cell over the U entries of row pre */
DEVICE_FN void ${KERNEL_NAME}_stats(GLOBAL const float* pre, GLOBAL const ${T}* peep, const float* cell,
                                    int has_peep, float* mean, float* rstd) {
    float s = 0.0f;
    for (int u = 0; u < ${U}; ++u) s += pre[u] + (has_peep ? ${LOAD}(peep, u) * cell[u] : 0.0f);
    const float m = s / (float)${U};
    float v = 0.0f;
    for (int u = 0; u < ${U}; ++u) {
        const float d = pre[u] + (has_peep ? ${LOAD}(peep, u) * cell[u] : 0.0f) - m;
        v += d * d;
    }
    *mean = m;
    *rstd = 1.0f / sqrt(v / (float)${U} + 1e-8f);
}
#endif
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT pre, GLOBAL const ${T}* RESTRICT c_prev,
#if ${PEEP} && !${CIFG}
                           GLOBAL const ${T}* RESTRICT w_ci,
#endif
#if ${PEEP}
                           GLOBAL const ${T}* RESTRICT w_cf, GLOBAL const ${T}* RESTRICT w_co,
#endif
#if !${CIFG}
                           GLOBAL const ${T}* RESTRICT b_i,
#endif
                           GLOBAL const ${T}* RESTRICT b_f, GLOBAL const ${T}* RESTRICT b_c,
                           GLOBAL const ${T}* RESTRICT b_o,
#if ${LN} && !${CIFG}
                           GLOBAL const ${T}* RESTRICT ln_i,
#endif
#if ${LN}
                           GLOBAL const ${T}* RESTRICT ln_f, GLOBAL const ${T}* RESTRICT ln_c,
                           GLOBAL const ${T}* RESTRICT ln_o,
#endif
                           GLOBAL ${T}* RESTRICT c_out,
#if ${PROJ}
                           GLOBAL float* RESTRICT m_out
#else
                           GLOBAL ${T}* RESTRICT h_out, GLOBAL ${T}* RESTRICT out
#endif
                           ) {
#if ${LN}
    const int b = GLOBAL_ID(0);
    if (b >= ${B}) return;
    GLOBAL const float* row = pre + b * 4 * ${U};
    float cp[${U}], cn[${U}];  /* the previous and new cell row, in float */
    for (int u = 0; u < ${U}; ++u) cp[u] = ${LOAD}(c_prev, b * ${U} + u);
    float mi = 0.0f, ri = 0.0f, mf, rf, mc, rc, mo, ro;
#if ${PEEP}
#if !${CIFG}
    ${KERNEL_NAME}_stats(row, w_ci, cp, 1, &mi, &ri);
#endif
    ${KERNEL_NAME}_stats(row + ${U}, w_cf, cp, 1, &mf, &rf);
#else
#if !${CIFG}
    ${KERNEL_NAME}_stats(row, c_prev, cp, 0, &mi, &ri);
#endif
    ${KERNEL_NAME}_stats(row + ${U}, c_prev, cp, 0, &mf, &rf);
#endif
    ${KERNEL_NAME}_stats(row + 2 * ${U}, c_prev, cp, 0, &mc, &rc);
    for (int u = 0; u < ${U}; ++u) {
        float pf = row[${U} + u];
#if ${PEEP}
        pf += ${LOAD}(w_cf, u) * cp[u];
#endif
        const float f = gd_sigmoid((pf - mf) * rf * ${LOAD}(ln_f, u) + ${LOAD}(b_f, u));
#if ${CIFG}
        const float ig = 1.0f - f;
#else
        float pi = row[u];
#if ${PEEP}
        pi += ${LOAD}(w_ci, u) * cp[u];
#endif
        const float ig = gd_sigmoid((pi - mi) * ri * ${LOAD}(ln_i, u) + ${LOAD}(b_i, u));
#endif
        const float ch = gd_recurrent_act((row[2 * ${U} + u] - mc) * rc * ${LOAD}(ln_c, u) + ${LOAD}(b_c, u), ${ACT});
        float c = f * cp[u] + ig * ch;
#if ${HAS_CELL_CLIP}
        c = fmin(fmax(c, -${CELL_CLIP}), ${CELL_CLIP});
#endif
        cn[u] = c;
        ${STORE}(c_out, b * ${U} + u, c);
    }
#if ${PEEP}
    ${KERNEL_NAME}_stats(row + 3 * ${U}, w_co, cn, 1, &mo, &ro);
#else
    ${KERNEL_NAME}_stats(row + 3 * ${U}, c_prev, cp, 0, &mo, &ro);
#endif
    for (int u = 0; u < ${U}; ++u) {
        float po = row[3 * ${U} + u];
#if ${PEEP}
        po += ${LOAD}(w_co, u) * cn[u];
#endif
        const float o = gd_sigmoid((po - mo) * ro * ${LOAD}(ln_o, u) + ${LOAD}(b_o, u));
        const float m = o * gd_recurrent_act(cn[u], ${ACT});
#if ${PROJ}
        m_out[b * ${U} + u] = m;
#else
        ${STORE}(h_out, b * ${U} + u, m);
        ${STORE}(out, ${OUT_OFF} + b * ${OUT_BSTRIDE} + u, m);
#endif
    }
#else
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    GLOBAL const float* row = pre + b * 4 * ${U};
    const float cp = ${LOAD}(c_prev, b * ${U} + u);
    float pf = row[${U} + u];
#if ${PEEP}
    pf += ${LOAD}(w_cf, u) * cp;
#endif
    const float f = gd_sigmoid(pf + ${LOAD}(b_f, u));
#if ${CIFG}
    const float ig = 1.0f - f;
#else
    float pi = row[u];
#if ${PEEP}
    pi += ${LOAD}(w_ci, u) * cp;
#endif
    const float ig = gd_sigmoid(pi + ${LOAD}(b_i, u));
#endif
    const float ch = gd_recurrent_act(row[2 * ${U} + u] + ${LOAD}(b_c, u), ${ACT});
    float c = f * cp + ig * ch;
#if ${HAS_CELL_CLIP}
    c = fmin(fmax(c, -${CELL_CLIP}), ${CELL_CLIP});
#endif
    ${STORE}(c_out, b * ${U} + u, c);
    float po = row[3 * ${U} + u];
#if ${PEEP}
    po += ${LOAD}(w_co, u) * c;
#endif
    const float o = gd_sigmoid(po + ${LOAD}(b_o, u));
    const float m = o * gd_recurrent_act(c, ${ACT});
#if ${PROJ}
    m_out[b * ${U} + u] = m;
#else
    ${STORE}(h_out, b * ${U} + u, m);
    ${STORE}(out, ${OUT_OFF} + b * ${OUT_BSTRIDE} + u, m);
#endif
#endif
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT m, GLOBAL const ${T}* RESTRICT wp,
#if ${PROJ_BIAS}
                           GLOBAL const ${T}* RESTRICT bp,
#endif
                           GLOBAL ${T}* RESTRICT h_out, GLOBAL ${T}* RESTRICT out) {
    const int o = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (o >= ${O} || b >= ${B}) return;
    float acc = 0.0f;
    for (int u = 0; u < ${U}; ++u) acc += m[b * ${U} + u] * ${LOAD}(wp, o * ${U} + u);
#if ${PROJ_BIAS}
    acc += ${LOAD}(bp, o);
#endif
#if ${HAS_PROJ_CLIP}
    acc = fmin(fmax(acc, -${PROJ_CLIP}), ${PROJ_CLIP});
#endif
    ${STORE}(h_out, b * ${O} + o, acc);
    ${STORE}(out, ${OUT_OFF} + b * ${OUT_BSTRIDE} + o, acc);
}
#endif
