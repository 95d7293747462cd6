/* Element-wise unary ops on a flat tensor of COUNT elements (gpu_driver/ops/activation.py), work item g
 * computing the run of elements [g*RUN, (g+1)*RUN).
 * Float ops read and write through ${LOAD} / ${STORE} (half storage for TENSOR_FLOAT16) and compute in
 * float; the C++ std::max(a, b) = a < b ? b : a and std::min(a, b) = b < a ? b : a orders of AOSP's
 * kernels are kept, so NaN and infinities give AOSP's answers.
 * OP 0: RELU clamp: v = FMIN < x ? x : FMIN; FMAX < v ? FMAX : v     (RELU, RELU1, RELU6, float)
 * OP 1: floor                                                         (FLOOR)
 * OP 2: 1 / (1 + gd_exp(-x))                                          (LOGISTIC, float)
 * OP 3: gd_tanh(x)                                                    (TANH, float)
 * OP 4: (q - ZP) * SCALE                                              (DEQUANTIZE, per tensor)
 * OP 5: integer clamp of the stored value to [QMIN, QMAX]             (RELU* quantized)
 * OP 6: table[q - QMIN] (extra input: one entry per stored value)     (LOGISTIC / TANH quantized)
 * OP 7: std::max(0, x) + std::min(0, ALPHA * (gd_exp(x) - 1))         (ELU)
 * OP 8: x * std::min(6, std::max(0, x + 3)) / 6                       (HARD_SWISH, float)
 * OP 9: TFLite int16 fixed-point hard swish: input zero point ZP, output zero point ZO, output
 *       multiplier M_OUT with right shift S_OUT, reluish multiplier M_RELU with exponent S_RELU,
 *       result clamped to [QMIN, QMAX]                                (HARD_SWISH, quantized)
 * OP 10: q * scales[(i / INNER) % CHANNELS] (extra input: the scales) (DEQUANTIZE, per channel) */
#ifndef GD_HELPERS_ACTIVATION
#define GD_HELPERS_ACTIVATION
/* int16 a·b / 2^15, saturating: gemmlowp SaturatingRoundingDoublingHighMul (rounding: the product
 * nudged by ±2^14) or TFLite SaturatingDoublingHighMul (truncating) */
DEVICE_FN int gd_act_dhm16(int a, int b, int rounding) {
    if (a == -32768 && b == -32768) return 32767;
    int ab = a * b;
    if (rounding) ab += ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return ab / (1 << 15);
}
DEVICE_FN int gd_act_sat_left_shift16(int x, int amount) {
    const int64 r = (int64)x * ((int64)1 << amount);
    return (int)(r > 32767 ? 32767 : (r < -32768 ? -32768 : r));
}
#endif

KERNEL void ${KERNEL_NAME}(GLOBAL const ${T_IN}* RESTRICT in,
#if ${OP} == 6
                           GLOBAL const ${T_OUT}* RESTRICT table,
#elif ${OP} == 10
                           GLOBAL const float* RESTRICT scales,
#endif
                           GLOBAL ${T_OUT}* RESTRICT out) {
    const int i0 = GLOBAL_ID(0) * ${RUN};
    const int i1 = min(i0 + ${RUN}, ${COUNT});
    for (int i = i0; i < i1; ++i) {
#if ${OP} == 5
    out[i] = (${T_OUT})clamp((int)in[i], ${QMIN}, ${QMAX});
#elif ${OP} == 6
    out[i] = table[(int)in[i] - (${QMIN})];
#elif ${OP} == 9
    const int hires = ((int)in[i] - (${ZP})) * 128;
    const int pre = gd_act_dhm16(hires, ${M_OUT}, 1);
    int r = hires;
#if ${S_RELU} > 0
    r = gd_act_sat_left_shift16(r, ${S_RELU} - 1);
#endif
    r = gd_act_dhm16(r, ${M_RELU}, 1);
#if ${S_RELU} > 0
    r = gd_act_sat_left_shift16(r, 1);
#elif ${S_RELU} < 0
    r = RDBPOT(r, -(${S_RELU}));
#endif
    r = (r + (1 << 15)) >> 1;
    int o = RDBPOT(gd_act_dhm16(r, pre, 0), ${S_OUT}) + (${ZO});
    o = ((o + 32768) & 0xFFFF) - 32768; /* the int16 sum wraps */
    out[i] = (${T_OUT})clamp(o, ${QMIN}, ${QMAX});
#elif ${OP} == 4
    ${STORE}(out, i, (float)((int)in[i] - (${ZP})) * ${SCALE});
#elif ${OP} == 10
    ${STORE}(out, i, (float)in[i] * scales[(i / ${INNER}) % ${CHANNELS}]);
#else
    const float x = ${LOAD}(in, i);
#if ${OP} == 0
    float v = x;
    FUSED_CLAMP(v, ${FMIN}, ${FMAX}, 1);   /* std::min(std::max(lo, x), hi): a NaN gives lo */
#elif ${OP} == 1
    const float v = floor(x);
#elif ${OP} == 2
    const float v = 1.0f / (1.0f + gd_exp(-x));
#elif ${OP} == 3
    const float v = gd_tanh(x);
#elif ${OP} == 7
    const float n = ${ALPHA} * (gd_exp(x) - 1.0f);
    const float v = (0.0f < x ? x : 0.0f) + (n < 0.0f ? n : 0.0f);
#else
    const float v = gd_hard_swish(x);
#endif
    ${STORE}(out, i, v);
#endif
    }
}
