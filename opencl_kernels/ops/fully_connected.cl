/* FULLY_CONNECTED: out[b, u] = act(bias[u] + Σ_i x[b, i]·w[u, i]).
 * Work item = (block of UB units, block of BB batch rows), register tile acc[BB][UB].
 * w repacked at lowering to [UBLOCKS][I][UB] (units padded to UBLOCKS*UB with zeros), so each work
 * item streams its own weights at unit stride and the UB-wide weight row is one vector; ACC_T = float
 * or int (q_w - zp_w); bias [UBLOCKS*UB] ACC_T.  The tile loops are fully unrolled (literal trip
 * counts) so PoCL keeps the accumulators in registers; the sum over i runs in order, as before.
 * QUANT: out = clamp(ZO + MBQM(acc, MULT, SHIFT), ACT_MIN, ACT_MAX). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${ACC_T}* RESTRICT w,
                           GLOBAL const ${ACC_T}* RESTRICT bias, GLOBAL ${T}* RESTRICT out) {
    const int ub = GLOBAL_ID(0);
    const int bb = GLOBAL_ID(1);
    if (ub >= ${UBLOCKS} || bb >= ${BBLOCKS}) return;
    const int u0 = ub * ${UB};
    GLOBAL const ${ACC_T}* RESTRICT wb = w + ub * (${I} * ${UB});
    GLOBAL const ${T}* RESTRICT xr[${BB}];
#pragma unroll
    for (int r = 0; r < ${BB}; ++r) {
        const int b = bb * ${BB} + r;
        xr[r] = x + (b < ${B} ? b : ${B} - 1) * ${I};
    }
    ${ACC_T} acc[${BB}][${UB}];
#pragma unroll
    for (int j = 0; j < ${UB}; ++j) {
        const ${ACC_T} b0 = bias[u0 + j];
#pragma unroll
        for (int r = 0; r < ${BB}; ++r) acc[r][j] = b0;
    }
    for (int i = 0; i < ${I}; ++i) {
        ${ACC_T} wv[${UB}];
#pragma unroll
        for (int j = 0; j < ${UB}; ++j) wv[j] = wb[i * ${UB} + j];
#pragma unroll
        for (int r = 0; r < ${BB}; ++r) {
            const ${ACC_T} xv = (${ACC_T})xr[r][i] - (${ACC_T})${ZX};
#pragma unroll
            for (int j = 0; j < ${UB}; ++j) acc[r][j] += xv * wv[j];
        }
    }
#pragma unroll
    for (int r = 0; r < ${BB}; ++r) {
        const int b = bb * ${BB} + r;
#if ${B} % ${BB}
        if (b >= ${B}) break;                    /* partial last batch block */
#endif
#pragma unroll
        for (int j = 0; j < ${UB}; ++j) {
            const int u = u0 + j;
#if ${U} % ${UB}
            if (u >= ${U}) break;                /* partial last unit block */
#endif
#if ${QUANT}
            int q = ${ZO} + MBQM(acc[r][j], ${MULT}, ${SHIFT});
            q = q < ${ACT_MIN} ? ${ACT_MIN} : q;
            q = q > ${ACT_MAX} ? ${ACT_MAX} : q;
            out[b * ${U} + u] = (${T})q;
#else
            float v = acc[r][j];
#if ${HAS_ACT}
            v = v < ${ACT_FMIN} ? ${ACT_FMIN} : v;   /* std::min(std::max(v, lo), hi): a NaN goes through */
            v = ${ACT_FMAX} < v ? ${ACT_FMAX} : v;
#endif
            out[b * ${U} + u] = v;
#endif
        }
    }
}
