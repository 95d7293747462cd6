/* Element-wise unary ops on a flat tensor of COUNT elements.
 * OP 0: float clamp [FMIN, FMAX]            (RELU, RELU1, RELU6 on float32)
 * OP 1: floor                                (FLOOR)
 * OP 2: logistic 1 / (1 + exp(-x))          (LOGISTIC float32)
 * OP 3: tanh                                 (TANH float32)
 * OP 4: dequantize (q - ZP) * SCALE          (DEQUANTIZE, T_IN quantized, T_OUT float)
 * OP 5: integer clamp [QMIN, QMAX]           (RELU* on quantized: raw stored values)
 * OP 6: 256-entry table lookup               (quantized LOGISTIC / TANH; extra input: the table) */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T_IN}* RESTRICT in,
#if ${OP} == 6
                           GLOBAL const ${T_OUT}* RESTRICT table,
#endif
                           GLOBAL ${T_OUT}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
#if ${OP} == 0
    out[i] = fmin(fmax(in[i], ${FMIN}), ${FMAX});
#elif ${OP} == 1
    out[i] = floor(in[i]);
#elif ${OP} == 2
    out[i] = 1.0f / (1.0f + exp(-in[i]));
#elif ${OP} == 3
    out[i] = tanh(in[i]);
#elif ${OP} == 4
    out[i] = (float)((int)in[i] - ${ZP}) * ${SCALE};
#elif ${OP} == 5
    out[i] = (${T_OUT})clamp((int)in[i], ${QMIN}, ${QMAX});
#else
    out[i] = table[(int)in[i]];
#endif
}
