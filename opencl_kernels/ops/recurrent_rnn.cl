/* RNN (one step): h[b, u] = act(Σ_i x[b,i]·W[u,i] + Σ_j h_prev[b,j]·R[u,j] + bias[u]
 *                               (+ Σ_k aux[b,k]·Wa[u,k] with AUX)); writes h_out and output (identical).
 * Rows of x, h_prev, aux and output are read/written at OFF + b·BSTRIDE (X_, H_, A_, OUT_): one step of
 * a sequence addresses its time slice of [T, B, ·] or [B, T, ·] tensors; a single step uses 0 and the
 * row width.  Work item = (u, b). */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT x, GLOBAL const float* RESTRICT w,
                           GLOBAL const float* RESTRICT rw, GLOBAL const float* RESTRICT bias,
                           GLOBAL const float* RESTRICT h_prev,
#if ${AUX}
                           GLOBAL const float* RESTRICT aux, GLOBAL const float* RESTRICT wa,
#endif
                           GLOBAL float* RESTRICT h_out, GLOBAL float* RESTRICT out) {
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    float acc = 0.0f;
    for (int i = 0; i < ${I}; ++i) acc += x[${X_OFF} + b * ${X_BSTRIDE} + i] * w[u * ${I} + i];
    float acc2 = 0.0f;
    for (int j = 0; j < ${U}; ++j) acc2 += h_prev[${H_OFF} + b * ${H_BSTRIDE} + j] * rw[u * ${U} + j];
#if ${AUX}
    for (int k = 0; k < ${A}; ++k) acc += aux[${A_OFF} + b * ${A_BSTRIDE} + k] * wa[u * ${A} + k];
#endif
    const float v = gd_recurrent_act(acc + acc2 + bias[u], ${ACT});
    h_out[b * ${U} + u] = v;
    out[${OUT_OFF} + b * ${OUT_BSTRIDE} + u] = v;
}
