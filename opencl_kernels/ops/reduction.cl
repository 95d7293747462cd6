/* Reductions (operations.md 31 MEAN, 39/40 ARGMAX/ARGMIN, 75-80 REDUCE_*): one work item per output element,
 * folding its reduced input elements in row-major order (the order of the reference and of AOSP).
 * Output element o < OUT_COUNT has coordinates over the kept axes [K0,K1,K2,K3] (row-major), at input offset
 * Σ coord_k·KSk; its reduced elements are at that offset + Σ r_k·RSk for r over [R0,R1,R2,R3] (row-major).
 * T_IN / T_OUT: element types; KIND: 0 float elements (read through IN_LOAD, VT float), 1 integer (VT int);
 * OUT_STORE writes a float result.
 * OP: 0 SUM, 4 MEAN (sum from 0; MEAN divides by DIVISOR (float) or COUNT (int, truncating)),
 *     1 PROD (from 1; a == 0 || b == 0 gives 0), 2 MAX / 3 MIN (from INIT, acc < x ? x : acc / x < acc ? x : acc),
 *     5 ALL / 6 ANY (of x != 0), 7 ARGMAX / 8 ARGMIN (index of the first extreme: x > best / x < best). */
DEVICE_FN ${VT} ${KERNEL_NAME}_value(GLOBAL const ${T_IN}* in, int k) {
#if ${KIND} == 0
    return ${IN_LOAD}(in, k);
#else
    return (int)in[k];
#endif
}

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T_IN}* RESTRICT in, GLOBAL ${T_OUT}* RESTRICT out) {
    const int o = GLOBAL_ID(0);
    if (o >= ${OUT_COUNT}) return;
    const int base = (o / (${K1} * ${K2} * ${K3})) * ${KS0} + ((o / (${K2} * ${K3})) % ${K1}) * ${KS1}
                   + ((o / ${K3}) % ${K2}) * ${KS2} + (o % ${K3}) * ${KS3};
#if ${OP} == 0 || ${OP} == 4
    ${VT} acc = 0;
#elif ${OP} == 1
    float acc = 1.0f;
#elif ${OP} == 2 || ${OP} == 3
    ${VT} acc = ${INIT};
#elif ${OP} == 5
    int acc = 1;
#elif ${OP} == 6
    int acc = 0;
#else
    ${VT} best = 0;
    int acc = 0;
    int n = 0;
#endif
    for (int r0 = 0; r0 < ${R0}; ++r0)
    for (int r1 = 0; r1 < ${R1}; ++r1)
    for (int r2 = 0; r2 < ${R2}; ++r2)
    for (int r3 = 0; r3 < ${R3}; ++r3) {
        const ${VT} x = ${KERNEL_NAME}_value(in, base + r0 * ${RS0} + r1 * ${RS1} + r2 * ${RS2} + r3 * ${RS3});
#if ${OP} == 0 || ${OP} == 4
        acc += x;
#elif ${OP} == 1
        acc = (acc == 0.0f || x == 0.0f) ? 0.0f : acc * x;
#elif ${OP} == 2
        acc = (acc < x) ? x : acc;
#elif ${OP} == 3
        acc = (x < acc) ? x : acc;
#elif ${OP} == 5
        acc = acc && x != 0;
#elif ${OP} == 6
        acc = acc || x != 0;
#else
#if ${OP} == 7
        if (n == 0 || x > best) {
#else
        if (n == 0 || x < best) {
#endif
            best = x;
            acc = n;
        }
        ++n;
#endif
    }
#if ${OP} == 4 && ${KIND} == 0
    ${OUT_STORE}(out, o, acc / ${DIVISOR});
#elif ${OP} == 4
    out[o] = (${T_OUT})(acc / ${COUNT});
#elif ${OP} >= 5 || ${KIND} == 1
    out[o] = (${T_OUT})acc;
#else
    ${OUT_STORE}(out, o, acc);
#endif
}
