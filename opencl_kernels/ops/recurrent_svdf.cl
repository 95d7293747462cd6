/* SVDF (one step).  Tensors are stored as ${T} (float or half: ${LOAD} / ${STORE}), computed in float;
 * the scratch t is float.  STAGE 0, work item (filter f, batch b):
 *   new = Σ_i x[b,i]·wf[f,i]; S = state_in[b,f,:] with S[M-1] = new;
 *   t[b,f] = Σ_m S[m]·wt[f,m] (to scratch); state_out[b,f,:] = S shifted left by one, last slot 0.
 * STAGE 1, work item (unit u, batch b): out[b,u] = act(Σ_r t[b, u·RANK + r] (+ bias[u])). */
#if ${STAGE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${T}* RESTRICT wf,
                           GLOBAL const ${T}* RESTRICT wt, GLOBAL const ${T}* RESTRICT state_in,
                           GLOBAL ${T}* RESTRICT state_out, GLOBAL float* RESTRICT t) {
    const int f = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (f >= ${F} || b >= ${B}) return;
    float nv = 0.0f;
    for (int i = 0; i < ${I}; ++i) nv += ${LOAD}(x, b * ${I} + i) * ${LOAD}(wf, f * ${I} + i);
    const int s = (b * ${F} + f) * ${M};
    float acc = 0.0f;
    for (int m = 0; m < ${M} - 1; ++m) acc += ${LOAD}(state_in, s + m) * ${LOAD}(wt, f * ${M} + m);
    acc += nv * ${LOAD}(wt, f * ${M} + ${M} - 1);
    t[b * ${F} + f] = acc;
    for (int m = 0; m < ${M} - 2; ++m) ${STORE}(state_out, s + m, ${LOAD}(state_in, s + m + 1));
    if (${M} >= 2) ${STORE}(state_out, s + ${M} - 2, nv);
    ${STORE}(state_out, s + ${M} - 1, 0.0f);
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT t,
#if ${HAS_BIAS}
                           GLOBAL const ${T}* RESTRICT bias,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${U} || b >= ${B}) return;
    float acc = 0.0f;
    for (int r = 0; r < ${RANK}; ++r) acc += t[b * ${F} + u * ${RANK} + r];
#if ${HAS_BIAS}
    acc += ${LOAD}(bias, u);
#endif
    ${STORE}(out, b * ${U} + u, gd_recurrent_act(acc, ${ACT}));
}
#endif
