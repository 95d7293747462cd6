/* BATCH_MATMUL: out[b][i][j] = sum_k X'[b][i][k] * Y'[b][k][j], one work item per output element.
 * M, N, K: output rows, output columns, contraction size.  X'[b][i][k] = x[b*XB + i*XI + k*XK] and
 * Y'[b][k][j] = y[b*YB + k*YK + j*YJ] (the strides encode adj_x / adj_y).
 * KIND 0: float (LOAD/STORE: half or plain storage, fp32 accumulation); 1: int32, wrapping (computed
 * on uint); 2: quant8 signed: int32 accumulation of (x - ZX)(y - ZY), MBQM(acc, MULT, SHIFT) + ZO,
 * clamped to [-128, 127]. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT x, GLOBAL const ${T}* RESTRICT y,
                           GLOBAL ${T}* RESTRICT out) {
    const int gid = GLOBAL_ID(0);
    if (gid >= ${COUNT}) return;
    const int j = gid % ${N};
    const int i = (gid / ${N}) % ${M};
    const int b = gid / (${N} * ${M});
    GLOBAL const ${T}* xr = x + b * ${XB} + i * ${XI};
    GLOBAL const ${T}* yc = y + b * ${YB} + j * ${YJ};
#if ${KIND} == 0
    float acc = 0.0f;
    for (int k = 0; k < ${K}; ++k) acc += ${LOAD}(xr, k * ${XK}) * ${LOAD}(yc, k * ${YK});
    ${STORE}(out, gid, acc);
#elif ${KIND} == 1
    uint acc = 0u;
    for (int k = 0; k < ${K}; ++k) acc += (uint)xr[k * ${XK}] * (uint)yc[k * ${YK}];
    out[gid] = (int)acc;
#else
    uint acc = 0u;
    for (int k = 0; k < ${K}; ++k) acc += (uint)(((int)xr[k * ${XK}] - ${ZX}) * ((int)yc[k * ${YK}] - ${ZY}));
    out[gid] = (${T})gd_requantize((int)acc, ${MULT}, ${SHIFT}, ${ZO}, -128, 127);
#endif
}
