/* RNN (one step): h[b, u] = act(Σ_i x[b,i]·W[u,i] + Σ_j h_prev[b,j]·R[u,j] + bias[u]
 *                               (+ Σ_k aux[b,k]·Wa[u,k] with AUX)); writes h_out and output (identical).
 * Every tensor is stored as ${T} (float or half: ${LOAD} / ${STORE}), computed in float.
 * Rows of x, h_prev, aux and output are read/written at OFF + b·BSTRIDE (X_, H_, A_, OUT_): one step of
 * a sequence addresses its time slice of [T, B, ·] or [B, T, ·] tensors; a single step uses 0 and the
 * row width.  Work item = (u, b). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${T}* RESTRICT w,
                           GLOBAL const ${T}* RESTRICT rw, GLOBAL const ${T}* RESTRICT bias,
                           GLOBAL const ${T}* RESTRICT h_prev,
#if ${AUX}
                           GLOBAL const ${T}* RESTRICT aux, GLOBAL const ${T}* RESTRICT wa,
#endif
                           GLOBAL ${T}* RESTRICT h_out, GLOBAL ${T}* RESTRICT out) {
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    float acc = 0.0f;
    for (int i = 0; i < ${I}; ++i) acc += ${LOAD}(x, ${X_OFF} + b * ${X_BSTRIDE} + i) * ${LOAD}(w, u * ${I} + i);
    float acc2 = 0.0f;
    for (int j = 0; j < ${U}; ++j)
        acc2 += ${LOAD}(h_prev, ${H_OFF} + b * ${H_BSTRIDE} + j) * ${LOAD}(rw, u * ${U} + j);
#if ${AUX}
    for (int k = 0; k < ${A}; ++k)
        acc += ${LOAD}(aux, ${A_OFF} + b * ${A_BSTRIDE} + k) * ${LOAD}(wa, u * ${A} + k);
#endif
    const float v = gd_recurrent_act(acc + acc2 + ${LOAD}(bias, u), ${ACT});
    ${STORE}(h_out, b * ${U} + u, v);
    ${STORE}(out, ${OUT_OFF} + b * ${OUT_BSTRIDE} + u, v);
}
