/* Every convolution on every type and layout, one work item per output element:
 * (GLOBAL_ID 0, 1, 2) = (output channel co, output x, n*OH + oy).  CONV_2D, DEPTHWISE_CONV_2D and
 * GROUPED_CONV_2D use the gather form (TRANSPOSE 0), TRANSPOSE_CONV_2D the scatter form (TRANSPOSE 1).
 * Element (n, y, x, c) of the input is in[n*XN + y*XY + x*XX + c*XC], of the output
 * out[n*ON + y*OY + x*OX + c*OC] (the strides encode NHWC or NCHW).
 * w: the filter as stored (type WT); weight (co, ky, kx, c) is w[co*WSO + (ky*KW + kx)*WSK + c*WSC]
 * ([CO][KH][KW][CIG]: WSO = KH*KW*CIG, WSK = CIG, WSC = 1; depthwise [1][KH][KW][CO]: WSO = 1,
 * WSK = CO, CIG = 1).  bias: [CO] (type BT).
 * Output channel co reads input channels [(co / COG)*CIG, (co / COG + 1)*CIG) (depthwise: COG = the
 * depth multiplier, CIG = 1; TRANSPOSE: one group).
 * Tap (ky, kx) reads input row iy = oy*SH - PT + ky*DH (gather form), or, with TRANSPOSE, the row iy
 * with iy*SH - PT + ky = oy (the scatter form read backwards; no such row = no contribution);
 * columns likewise with SW, PL, DW.  Out-of-range rows/columns contribute nothing.
 * Float (QUANT 0): LOAD/STORE, W_LOAD, B_LOAD read the input/output, filter and bias as float
 * (half or plain storage); fp32 accumulation, + bias, clamp to [ACT_FMIN, ACT_FMAX] and a fused
 * HARD_SWISH: FUSED_ACTIVATION (activations.h).
 * QUANT 1: int32 accumulation of (x - ZX)(w - ZW); + bias; qp = [CO multipliers, CO shifts];
 * out = clamp(ZO + MBQM(acc, m, s), ACT_MIN, ACT_MAX). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL const ${WT}* RESTRICT w,
                           GLOBAL const ${BT}* RESTRICT bias,
#if ${QUANT}
                           GLOBAL const int* RESTRICT qp,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int co = GLOBAL_ID(0);
    const int ox = GLOBAL_ID(1);
    const int row = GLOBAL_ID(2);
    if (co >= ${CO} || ox >= ${OW} || row >= ${ROWS}) return;
    const int n = row / ${OH};
    const int oy = row % ${OH};
    GLOBAL const ${T}* xn = in + n * ${XN} + (co / ${COG}) * ${CIG} * ${XC};
    GLOBAL const ${WT}* wo = w + co * ${WSO};
#if ${QUANT}
    int acc = 0;
#else
    float acc = 0.0f;
#endif
    for (int ky = 0; ky < ${KH}; ++ky) {
#if ${TRANSPOSE}
        const int ty = oy + ${PT} - ky;
        const int iy = ty / ${SH};
        if (ty < 0 || iy * ${SH} != ty || iy >= ${H}) continue;
#else
        const int iy = oy * ${SH} - ${PT} + ky * ${DH};
        if (iy < 0 || iy >= ${H}) continue;
#endif
        for (int kx = 0; kx < ${KW}; ++kx) {
#if ${TRANSPOSE}
            const int tx = ox + ${PL} - kx;
            const int ix = tx / ${SW};
            if (tx < 0 || ix * ${SW} != tx || ix >= ${W}) continue;
#else
            const int ix = ox * ${SW} - ${PL} + kx * ${DW};
            if (ix < 0 || ix >= ${W}) continue;
#endif
            GLOBAL const ${T}* xp = xn + iy * ${XY} + ix * ${XX};
            GLOBAL const ${WT}* wp = wo + (ky * ${KW} + kx) * ${WSK};
            for (int c = 0; c < ${CIG}; ++c) {
#if ${QUANT}
                acc += ((int)xp[c * ${XC}] - ${ZX}) * ((int)wp[c * ${WSC}] - ${ZW});
#else
                acc += ${LOAD}(xp, c * ${XC}) * ${W_LOAD}(wp, c * ${WSC});
#endif
            }
        }
    }
    const int o = n * ${ON} + oy * ${OY} + ox * ${OX} + co * ${OC};
#if ${QUANT}
    out[o] = (${T})gd_requantize(acc + bias[co], qp[co], qp[${CO} + co], ${ZO}, ${ACT_MIN}, ${ACT_MAX});
#else
    float v = acc + ${B_LOAD}(bias, co);
    FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
    ${STORE}(out, o, v);
#endif
}
