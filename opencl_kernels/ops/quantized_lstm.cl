/* Quantized LSTM cells, one time step, exact integer arithmetic.  gpu_driver/ops/quantized_lstm.py is
 * the oracle: the gd_q16_ helpers mirror its numpy functions (wrap16, sat16, mul16, mul_pot16, …,
 * logistic16, tanh16) and gpu_driver/fixedpoint.py's saturating_rounding_mul_pot and
 * inv_sqrt_quantized_multiplier_exp (fixed_point.h: gd_mul_pot, gd_inv_sqrt_multiplier).
 *
 * int16 gemmlowp fixed point (FixedPoint<int16_t, I>): raws carried in int; + and − wrap to int16
 * (gd_q16_wrap), * is the int16 SaturatingRoundingDoublingHighMul (gd_q16_mul16); the constants are
 * gemmlowp's int32 ones rounded by 2^16 (RescaleConstantInitializer: RDBPOT(c, 16)).
 *
 * STAGE 0: the legacy 8-bit-in, 16-bit-state cell (TF Lite LstmCell<4>), work item (u, b), u < O:
 *   the four gate accumulators of the fused fully connected layer — row [recurrent_g ‖ input_g] of the
 *   weights (zero point ZW removed) against [x ‖ h_prev] (zero point 128 removed), int32 (wrapping)
 *   plus bias, rescaled by (M, S) to Q3.12 — then logistic / tanh, the cell update (Q4.11) and
 *   h = o·tanh(c), stored as c_out[b, u] (short) and h_out[b, u] (uchar, zero point 128).
 *   Sizes: B batches, I inputs, O outputs (= cells).
 *
 * STAGES 1-3: the 8x8->16 integer LSTM (TF Lite / AOSP QLSTM.cpp, quirks as the oracle documents);
 *   gate literals end in the gate's number g: 0 input, 1 forget, 2 cell, 3 output.  Tensors a node
 *   omits are passed as placeholders (c_prev, pre or m) and never read.  Sizes B, I, U cells, O outputs.
 * STAGE 1 (gate matmuls), work item (u, g, b): pre[b, g·U + u] = sat16(sat16(MBQM(Σ (x - X_ZP)·Wx_g,
 *   M_Xg, S_Xg)) + MBQM(Σ (h_prev - H_ZP)·Wh_g, M_Hg, S_Hg)), the int32 sums wrapping (g = 0 skipped with CIFG).
 * STAGE 2 (cell): the peephole terms (M_Cg, S_Cg), with LN the integer layer norm (gate bias included,
 *   M_LNg, S_LNg, variance floor VLIMg), the gates, c_out (scale 2^CS, clipped to ±CELL_CLIP) and the
 *   hidden value MBQM(o·tanh(c), M_HID, S_HID) - HID_ZP in [-128, 127]: to h_out and out, or with PROJ
 *   (plus HID_ZP again) to m [B, U].  Work item (u, b); with LN one work item per batch row b.
 * STAGE 3 (projection), work item (o, b): clamp(MBQM(Σ m·Wp (+ bp), M_P, S_P) + H_ZP) (±PROJ_CLIP). */
#ifndef GD_HELPERS_QLSTM
#define GD_HELPERS_QLSTM
DEVICE_FN int gd_q16_wrap(int x) { return ((x + 32768) & 0xFFFF) - 32768; }
DEVICE_FN int gd_q16_sat(int x) { return clamp(x, -32768, 32767); }
/* int16 SaturatingRoundingDoublingHighMul: (a·b ± 2^14) / 2^15, C division */
DEVICE_FN int gd_q16_mul16(int a, int b) {
    if (a == -32768 && b == -32768) return 32767;
    const int p = a * b;
    return (p + (p >= 0 ? (1 << 14) : 1 - (1 << 14))) / (1 << 15);
}
/* SaturatingRoundingMultiplyByPOT on int16: saturating x·2^e (e > 0) or rounding x / 2^-e */
DEVICE_FN int gd_q16_mul_pot16(int x, int e) {
    if (e <= 0) return RDBPOT(x, -e);
    const int threshold = (1 << (15 - e)) - 1;
    return x > threshold ? 32767 : (x < -threshold ? -32768 : gd_q16_wrap((int)((uint)x << e)));
}
/* exp(a) for a in [-1/4, 0) in Q0.15: Taylor series around -1/8; the last add saturates */
DEVICE_FN int gd_q16_exp_on_quarter_interval16(int a) {
    const int constant_term = RDBPOT(1895147668, 16);        /* exp(-1/8) */
    const int one_third = RDBPOT(715827883, 16);
    const int x = gd_q16_wrap(a + (1 << 12));                 /* a + 1/8 */
    const int x2 = gd_q16_mul16(x, x);
    const int x3 = gd_q16_mul16(x2, x);
    const int x4 = gd_q16_mul16(x2, x2);
    const int poly = gd_q16_mul_pot16(
        gd_q16_wrap(gd_q16_mul16(gd_q16_wrap(gd_q16_mul_pot16(x4, -2) + x3), one_third) + x2), -1);
    return gd_q16_sat(constant_term + gd_q16_mul16(constant_term, gd_q16_wrap(x + poly)));
}
/* exp(a) for a <= 0 in Q(integer_bits) (1 <= integer_bits <= 7); result Q0.15 */
DEVICE_FN int gd_q16_exp_on_negative_values16(int a, int integer_bits) {
    const int frac = 15 - integer_bits;
    const int one_quarter = 1 << (frac - 2);
    const int a_mod = gd_q16_wrap((a & (one_quarter - 1)) - one_quarter);
    int result = gd_q16_exp_on_quarter_interval16(gd_q16_mul_pot16(a_mod, integer_bits));
    const int remainder = gd_q16_wrap(a_mod - a);
    /* the barrel shifter: exp(-2^exponent) for exponent -2 … 4 */
    const int multipliers[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    for (int k = 0; k < 7; ++k) {
        if (integer_bits > k - 2 && (remainder & (1 << (frac + k - 2))) != 0)
            result = gd_q16_mul16(result, RDBPOT(multipliers[k], 16));
    }
    if (integer_bits > 5) {                                   /* exp(a) for a < -32 is 0 */
        if (a < RDBPOT(-(1 << (36 - integer_bits)), 16)) result = 0;
    }
    return a == 0 ? 32767 : result;
}
/* Q2.13 Newton-Raphson estimate of 1/((1 + a)/2) for a in [0, 1) in Q0.15 (3 iterations) */
DEVICE_FN int gd_q16_reciprocal_half_denominator16(int a) {
    int s = a + 32767;                                        /* RoundingHalfSum(a, One) */
    s += s >= 0 ? 1 : -1;
    const int d = s / 2;                                      /* (1 + a)/2 */
    int x = gd_q16_wrap(RDBPOT(1515870810, 16) + gd_q16_mul16(d, RDBPOT(-1010580540, 16)));  /* 48/17 - 32/17·d */
    for (int k = 0; k < 3; ++k)
        x = gd_q16_wrap(x + gd_q16_mul_pot16(gd_q16_mul16(x, gd_q16_wrap((1 << 13) - gd_q16_mul16(d, x))), 2));
    return x;
}
/* gemmlowp::logistic of a Q(integer_bits) value; result Q0.15 */
DEVICE_FN int gd_q16_logistic16(int a, int integer_bits) {
    if (a == 0) return 16384;                                 /* RDBPOT(2^30, 16): one half */
    const int magnitude = a > 0 ? a : gd_q16_wrap(-a);
    const int e = gd_q16_exp_on_negative_values16(gd_q16_wrap(-magnitude), integer_bits);
    const int if_positive = gd_q16_mul_pot16(gd_q16_reciprocal_half_denominator16(e), 1);  /* 1/(1 + e) */
    return a > 0 ? if_positive : gd_q16_wrap(32767 - if_positive);
}
/* gemmlowp::tanh of a Q(integer_bits) value; result Q0.15 */
DEVICE_FN int gd_q16_tanh16(int a, int integer_bits) {
    if (a == 0) return 0;
    const int e = gd_q16_exp_on_negative_values16(a < 0 ? a : gd_q16_wrap(-a), integer_bits + 1);  /* exp(-2|a|) */
    const int t = gd_q16_mul_pot16(gd_q16_wrap(gd_q16_reciprocal_half_denominator16(e) - (1 << 13)), 2);
    return a < 0 ? gd_q16_wrap(-t) : t;
}
#endif

#if ${STAGE} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const uchar* RESTRICT x,
                           GLOBAL const uchar* RESTRICT wxi, GLOBAL const uchar* RESTRICT wxf,
                           GLOBAL const uchar* RESTRICT wxc, GLOBAL const uchar* RESTRICT wxo,
                           GLOBAL const uchar* RESTRICT whi, GLOBAL const uchar* RESTRICT whf,
                           GLOBAL const uchar* RESTRICT whc, GLOBAL const uchar* RESTRICT who,
                           GLOBAL const int* RESTRICT bi, GLOBAL const int* RESTRICT bf,
                           GLOBAL const int* RESTRICT bc, GLOBAL const int* RESTRICT bo,
                           GLOBAL const short* RESTRICT c_prev, GLOBAL const uchar* RESTRICT h_prev,
                           GLOBAL short* RESTRICT c_out, GLOBAL uchar* RESTRICT h_out) {
    const int u = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (u >= ${O} || b >= ${B}) return;
    int gate[4];                                              /* Q3.12: input, forget, cell, output */
    for (int g = 0; g < 4; ++g) {
        GLOBAL const uchar* wx = g == 0 ? wxi : g == 1 ? wxf : g == 2 ? wxc : wxo;
        GLOBAL const uchar* wh = g == 0 ? whi : g == 1 ? whf : g == 2 ? whc : who;
        GLOBAL const int* bias = g == 0 ? bi : g == 1 ? bf : g == 2 ? bc : bo;
        int64 acc = bias[u];
        for (int k = 0; k < ${I} + ${O}; ++k) {               /* [x ‖ h_prev] · [recurrent ‖ input] */
            const int v = (k < ${I} ? (int)x[b * ${I} + k] : (int)h_prev[b * ${O} + k - ${I}]) - 128;
            const int w = (k < ${O} ? (int)wh[u * ${O} + k] : (int)wx[u * ${I} + k - ${O}]) - (${ZW});
            acc += (int64)(v * w);
        }
        gate[g] = gd_q16_sat(MBQM((int)(uint)acc, ${M}, ${S}));
    }
    const int ig = gd_q16_logistic16(gate[0], 3);
    const int fg = gd_q16_logistic16(gate[1], 3);
    const int gg = gd_q16_tanh16(gate[2], 3);
    const int og = gd_q16_logistic16(gate[3], 3);
    /* Q0.15 · Q0.15 rescaled to Q4.11, plus Q0.15 · Q4.11 (saturating add) */
    const int c = gd_q16_sat(gd_q16_mul_pot16(gd_q16_mul16(ig, gg), -4) + gd_q16_mul16(fg, (int)c_prev[b * ${O} + u]));
    const int h = gd_q16_mul16(og, gd_q16_tanh16(gd_q16_mul_pot16(c, 1), 3));  /* tanh of c read as Q3.12 */
    c_out[b * ${O} + u] = (short)c;
    h_out[b * ${O} + u] = (uchar)(clamp(RDBPOT(h, 8), -128, 127) + 128);
}
#elif ${STAGE} == 1
KERNEL void ${KERNEL_NAME}(GLOBAL const char* RESTRICT x, GLOBAL const char* RESTRICT h_prev,
                           GLOBAL const char* RESTRICT wxi, GLOBAL const char* RESTRICT wxf,
                           GLOBAL const char* RESTRICT wxc, GLOBAL const char* RESTRICT wxo,
                           GLOBAL const char* RESTRICT whi, GLOBAL const char* RESTRICT whf,
                           GLOBAL const char* RESTRICT whc, GLOBAL const char* RESTRICT who,
                           GLOBAL int* RESTRICT pre) {
    const int u = GLOBAL_ID(0);
    const int g = GLOBAL_ID(1);
    const int b = GLOBAL_ID(2);
    if (u >= ${U} || g >= 4 || b >= ${B}) return;
    if (${CIFG} && g == 0) return;                         /* no input gate */
    const int mx[4] = {${M_X0}, ${M_X1}, ${M_X2}, ${M_X3}}, sx[4] = {${S_X0}, ${S_X1}, ${S_X2}, ${S_X3}};
    const int mh[4] = {${M_H0}, ${M_H1}, ${M_H2}, ${M_H3}}, sh[4] = {${S_H0}, ${S_H1}, ${S_H2}, ${S_H3}};
    GLOBAL const char* wx = g == 0 ? wxi : g == 1 ? wxf : g == 2 ? wxc : wxo;
    GLOBAL const char* wh = g == 0 ? whi : g == 1 ? whf : g == 2 ? whc : who;
    int64 ax = 0, ah = 0;
    for (int k = 0; k < ${I}; ++k) ax += (int64)(((int)x[b * ${I} + k] - (${X_ZP})) * (int)wx[u * ${I} + k]);
    for (int j = 0; j < ${O}; ++j) ah += (int64)(((int)h_prev[b * ${O} + j] - (${H_ZP})) * (int)wh[u * ${O} + j]);
    const int acc = gd_q16_sat(MBQM((int)(uint)ax, mx[g], sx[g]));
    pre[(b * 4 + g) * ${U} + u] = gd_q16_sat(MBQM((int)(uint)ah, mh[g], sh[g]) + acc);
}
#elif ${STAGE} == 2
/* gate g's value at unit u before layer norm: the matmuls' sum plus the peephole term on cell */
DEVICE_FN int ${KERNEL_NAME}_raw(GLOBAL const int* row, int g, int u, GLOBAL const short* wc, int cell) {
    const int mc[4] = {${M_C0}, ${M_C1}, ${M_C2}, ${M_C3}}, sc[4] = {${S_C0}, ${S_C1}, ${S_C2}, ${S_C3}};
    const int v = row[g * ${U} + u];
    return ${PEEP} && g != 2 ? gd_q16_sat(MBQM((int)wc[u] * cell, mc[g], sc[g]) + v) : v;
}
/* layer norm statistics of gate g over the row: st = {1024·mean, multiplier, right shift of 1/stddev} */
DEVICE_FN void ${KERNEL_NAME}_stats(GLOBAL const int* row, int g, GLOBAL const short* wc, GLOBAL const short* cell,
                                    int* st) {
    const int vlim[4] = {${VLIM0}, ${VLIM1}, ${VLIM2}, ${VLIM3}};
    int64 sum = 0, sum_sq = 0;
    for (int u = 0; u < ${U}; ++u) {
        const int v = ${KERNEL_NAME}_raw(row, g, u, wc, cell[u]);
        sum += v;
        sum_sq += (int64)v * v;
    }
    const int64 mean = sum * 1024 / ${U};
    int64 variance = (sum_sq * ((1 << 20) / ${U}) - mean * mean) / (1 << 20);
    if (variance < 1) variance = vlim[g];
    st[0] = (int)mean;
    gd_inv_sqrt_multiplier((int)variance, &st[1], &st[2]);
}
/* gate g's Q3.12 input: the raw value, layer-normalised (·weight + bias) with LN */
DEVICE_FN int ${KERNEL_NAME}_gate(GLOBAL const int* row, int g, int u, GLOBAL const short* wc, int cell,
                                  const int* st, GLOBAL const short* ln, GLOBAL const int* bias) {
    const int v = ${KERNEL_NAME}_raw(row, g, u, wc, cell);
    if (!${LN}) return v;
    const int ml[4] = {${M_LN0}, ${M_LN1}, ${M_LN2}, ${M_LN3}}, sl[4] = {${S_LN0}, ${S_LN1}, ${S_LN2}, ${S_LN3}};
    const int rescaled = MBQM(1024 * v - st[0], st[1], -st[2]);
    const int64 z = (int64)(int)(uint)((int64)rescaled * ln[u] + bias[u]);   /* int32, wrapping */
    return gd_q16_sat(MBQM((int)((z > 0 ? z + 512 : z - 512) / 1024), ml[g], sl[g] + 12));
}
/* the new cell state at unit u of a row from c_prev (cp); *ig: the input gate */
DEVICE_FN int ${KERNEL_NAME}_cell(GLOBAL const int* row, int u, int cp, const int* st,
                                  GLOBAL const short* wci, GLOBAL const short* wcf,
                                  GLOBAL const short* lni, GLOBAL const short* lnf, GLOBAL const short* lnc,
                                  GLOBAL const int* bi, GLOBAL const int* bf, GLOBAL const int* bc, int* ig) {
    const int f = gd_q16_logistic16(${KERNEL_NAME}_gate(row, 1, u, wcf, cp, st + 3, lnf, bf), 3);
    const int g = gd_q16_tanh16(${KERNEL_NAME}_gate(row, 2, u, wcf, cp, st + 6, lnc, bc), 3);
    const int i = ${CIFG} ? 32767 - f : gd_q16_logistic16(${KERNEL_NAME}_gate(row, 0, u, wci, cp, st, lni, bi), 3);
    const int c = gd_q16_sat(gd_q16_wrap(RDBPOT(f * cp, 15)) + gd_q16_wrap(RDBPOT(i * g, 30 + (${CS}))));
    *ig = i;
    return ${HAS_CELL_CLIP} ? clamp(c, -(${CELL_CLIP}), ${CELL_CLIP}) : c;
}
/* the hidden value from the output gate's input ov: o·tanh(c) rescaled, less HID_ZP; past tanh's range
 * of integer bits (0 … 6) the reference reads the input gate i instead of tanh(c) */
DEVICE_FN int ${KERNEL_NAME}_hidden(int ov, int c, int i) {
#if 15 + (${CS}) >= 0 && 15 + (${CS}) <= 6
    i = gd_q16_tanh16(c, 15 + (${CS}));
#endif
    return clamp(MBQM(gd_q16_logistic16(ov, 3) * i, ${M_HID}, ${S_HID}) - (${HID_ZP}), -128, 127);
}
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT pre, GLOBAL const short* RESTRICT c_prev,
                           GLOBAL const short* RESTRICT wci, GLOBAL const short* RESTRICT wcf,
                           GLOBAL const short* RESTRICT wco,
                           GLOBAL const int* RESTRICT bi, GLOBAL const int* RESTRICT bf,
                           GLOBAL const int* RESTRICT bc, GLOBAL const int* RESTRICT bo,
                           GLOBAL const short* RESTRICT lni, GLOBAL const short* RESTRICT lnf,
                           GLOBAL const short* RESTRICT lnc, GLOBAL const short* RESTRICT lno,
                           GLOBAL short* RESTRICT c_out,
#if ${PROJ}
                           GLOBAL int* RESTRICT m
#else
                           GLOBAL char* RESTRICT h_out, GLOBAL char* RESTRICT out
#endif
                           ) {
    int st[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};   /* layer norm statistics of gates 0 … 3 */
    int i = 0;
#if ${LN}
    /* one work item per batch row: the statistics need whole rows (the output gate's, the new cells) */
    const int b = GLOBAL_ID(0);
    if (b >= ${B}) return;
    const int u0 = 0, u1 = ${U};
#else
    const int u0 = GLOBAL_ID(0), u1 = u0 + 1;
    const int b = GLOBAL_ID(1);
    if (u0 >= ${U} || b >= ${B}) return;
#endif
    GLOBAL const int* row = pre + b * 4 * ${U};
    GLOBAL const short* cp = c_prev + b * ${U};
    GLOBAL short* cn = c_out + b * ${U};
    if (${LN}) {
        if (!${CIFG}) ${KERNEL_NAME}_stats(row, 0, wci, cp, st);
        ${KERNEL_NAME}_stats(row, 1, wcf, cp, st + 3);
        ${KERNEL_NAME}_stats(row, 2, wcf, cp, st + 6);
    }
    for (int u = u0; u < u1; ++u)
        cn[u] = (short)${KERNEL_NAME}_cell(row, u, cp[u], st, wci, wcf, lni, lnf, lnc, bi, bf, bc, &i);
    if (${LN}) ${KERNEL_NAME}_stats(row, 3, wco, cn, st + 9);
    for (int u = u0; u < u1; ++u) {
#if ${LN} && !(15 + (${CS}) >= 0 && 15 + (${CS}) <= 6)
        ${KERNEL_NAME}_cell(row, u, cp[u], st, wci, wcf, lni, lnf, lnc, bi, bf, bc, &i);  /* unit u's input gate */
#endif
        const int h = ${KERNEL_NAME}_hidden(${KERNEL_NAME}_gate(row, 3, u, wco, cn[u], st + 9, lno, bo), cn[u], i);
#if ${PROJ}
        m[b * ${U} + u] = h + (${HID_ZP});
#else
        h_out[b * ${O} + u] = (char)h;
        out[b * ${O} + u] = (char)h;
#endif
    }
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const int* RESTRICT m, GLOBAL const char* RESTRICT wp,
                           GLOBAL const int* RESTRICT bp, GLOBAL char* RESTRICT h_out, GLOBAL char* RESTRICT out) {
    const int o = GLOBAL_ID(0);
    const int b = GLOBAL_ID(1);
    if (o >= ${O} || b >= ${B}) return;
    int64 acc = ${PROJ_BIAS} ? bp[o] : 0;
    for (int u = 0; u < ${U}; ++u) acc += (int64)(m[b * ${U} + u] * (int)wp[o * ${U} + u]);
    int v = gd_requantize((int)(uint)acc, ${M_P}, ${S_P}, ${H_ZP}, -128, 127);
    if (${HAS_PROJ_CLIP}) v = clamp(v, -(${PROJ_CLIP}), ${PROJ_CLIP});
    h_out[b * ${O} + o] = (char)v;
    out[b * ${O} + o] = (char)v;
}
#endif
