/* The requantisation of a quantized convolution's int32 sums (sum of products + bias, [rows][C], as
 * conv.cl and gemm.cl write them for quant8):
 *     out[i] = clamp(ZO + MBQM(acc[i], qp[c], qp[CP + c]), ACT_MIN, ACT_MAX),  c = i % C,
 * qp = [CP multipliers, CP shifts]; without PER_CHANNEL every channel has the literal MULT, SHIFT
 * (qp is not read).  Work item g computes the run of elements [g*RUN, (g+1)*RUN) in a loop PoCL
 * vectorises, MBQM's 64-bit arithmetic included (inside the tiled kernels it stayed scalar and cost
 * more than the products).  CENTRED: centred[i] = out[i] - ZO as float too, the input of a following
 * convolution that sums in float (what conv_centre.cl would make of out). */
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT acc, GLOBAL const int* RESTRICT qp, GLOBAL ${T}* RESTRICT out
#if ${CENTRED}
                           , GLOBAL float* RESTRICT centred
#endif
                           ) {
    const int i0 = GLOBAL_ID(0) * ${RUN};
    const int i1 = min(i0 + ${RUN}, ${COUNT});
    for (int i = i0; i < i1; ++i) {
#if ${PER_CHANNEL}
        const int c = i % ${C};
        const int q = gd_requantize(acc[i], qp[c], qp[${CP} + c], ${ZO}, ${ACT_MIN}, ${ACT_MAX});
#else
        const int q = gd_requantize(acc[i], ${MULT}, ${SHIFT}, ${ZO}, ${ACT_MIN}, ${ACT_MAX});
#endif
        out[i] = (${T})q;
#if ${CENTRED}
        centred[i] = (float)(q - ${ZO});
#endif
    }
}
