/* RNN (one step): h[b, u] = act(Σ_i x[b,i]·W[u,i] + Σ_j h_prev[b,j]·R[u,j] + bias[u]); writes h_out and
 * output (identical).  Work item = (u, b). */
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT x, GLOBAL const float* RESTRICT w,
                           GLOBAL const float* RESTRICT rw, GLOBAL const float* RESTRICT bias,
                           GLOBAL const float* RESTRICT h_prev, GLOBAL float* RESTRICT h_out,
                           GLOBAL float* RESTRICT out) {
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    float acc = 0.0f;
    for (int i = 0; i < ${I}; ++i) acc += x[b * ${I} + i] * w[u * ${I} + i];
    float acc2 = 0.0f;
    for (int j = 0; j < ${U}; ++j) acc2 += h_prev[b * ${U} + j] * rw[u * ${U} + j];
    const float v = gd_recurrent_act(acc + acc2 + bias[u], ${ACT});
    h_out[b * ${U} + u] = v;
    out[b * ${U} + u] = v;
}
