/* Broadcasting binary element-wise operations (operations.md §0.3; ADD, SUB, MUL, DIV, MAXIMUM,
 * MINIMUM, POW, PRELU; quantized arithmetic operands.md §8.2 and §8.5).
 *   out[i] = OP(a[ia], b[ib]) for every output element i (one work item each).
 * The output is viewed as rank 4 [D0,D1,D2,D3]; SAk / SBk are the element strides of A / B along
 * each axis (0 where that input broadcasts).  BCAST: 0 when A, B and the output have the same shape
 * (read at the flat index), 1 otherwise.  ROWS 1 (with BCAST): one work item per row of the innermost
 * axis, looping over its D3 elements (no division per element); otherwise work item g computes the
 * run of elements [g*RUN, (g+1)*RUN).  T: the storage type of A, B and the output.
 * OP: 0 ADD, 1 SUB, 2 MUL, 3 DIV, 4 MAXIMUM, 5 MINIMUM, 6 POW, 7 PRELU (B is alpha).
 * KIND 0 float: computed in fp32, read/written through LOAD/STORE (LOAD_HALF/STORE_HALF for fp16);
 *   ADD..DIV clamp to [ACT_FMIN, ACT_FMAX] with FUSED_ACTIVATION (activations.h: a NaN goes through, or
 *   gives ACT_FMIN where a RELU operation was fused, ACT_NAN_LOW; then a fused HARD_SWISH);
 *   MAXIMUM/MINIMUM are a < b ? b : a and b < a ? b : a (a NaN operand yields A).
 * KIND 1 int32: ADD/SUB/MUL wrap (computed on uint); DIV is floor division, x / 0 = 0.
 * KIND 2 quantized (T uchar/char): ZA, ZB, ZO zero points; result clamped to [ACT_MIN, ACT_MAX].
 *   ADD/SUB: MBQM_LT1 of each side shifted left by LEFT_SHIFT with (M1,S1) / (M2,S2) (M2 negated for
 *   SUB), then of the sum with (MO,SO).  MUL: MBQM of the centred product with (MO,SO).
 *   PRELU: MBQM of the centred x with (M1,S1) when x >= 0, else of x*alpha with (M2,S2).
 *   MAXIMUM/MINIMUM (QTABLE 1): table[QOFFSET + a] and table[256 + QOFFSET + b] are A's and B's stored
 *   values requantized to the output (an extra input); QOFFSET = -qmin of T. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT a, GLOBAL const ${T}* RESTRICT b,
#if ${QTABLE}
                           GLOBAL const ${T}* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out) {
#if ${ROWS}
    const int row = GLOBAL_ID(0);
    if (row >= ${COUNT} / ${D3}) return;
#else
    const int i0 = GLOBAL_ID(0) * ${RUN};
    const int i1 = min(i0 + ${RUN}, ${COUNT});
    for (int i = i0; i < i1; ++i) {
#if ${BCAST}
    const int row = i / ${D3};
    const int i3 = i % ${D3};
#endif
#endif
#if ${BCAST}
    int r = row;
    const int i2 = r % ${D2}; r /= ${D2};
    const int i1 = r % ${D1};
    const int i0 = r / ${D1};
    const int row_a = i0 * ${SA0} + i1 * ${SA1} + i2 * ${SA2};
    const int row_b = i0 * ${SB0} + i1 * ${SB1} + i2 * ${SB2};
#if ${ROWS}
    for (int i3 = 0; i3 < ${D3}; ++i3) {
    const int i = row * ${D3} + i3;
#endif
    const int ia = row_a + i3 * ${SA3};
    const int ib = row_b + i3 * ${SB3};
#else
    const int ia = i;
    const int ib = i;
#endif
#if ${KIND} == 2
#if ${QTABLE}
    const int qa = (int)table[${QOFFSET} + (int)a[ia]];
    const int qb = (int)table[${QOFFSET} + 256 + (int)b[ib]];
#if ${OP} == 4
    int q = qa < qb ? qb : qa;
#else
    int q = qb < qa ? qb : qa;
#endif
#else
    const int x = (int)a[ia] - ${ZA};
    const int y = (int)b[ib] - ${ZB};
#if ${OP} <= 1
    const int xs = MBQM_LT1(x * (1 << ${LEFT_SHIFT}), ${M1}, ${S1});
    const int ys = MBQM_LT1(y * (1 << ${LEFT_SHIFT}), ${M2}, ${S2});
    int q = MBQM_LT1(xs + ys, ${MO}, ${SO}) + ${ZO};
#elif ${OP} == 2
    int q = MBQM(x * y, ${MO}, ${SO}) + ${ZO};
#else
    int q = (x >= 0 ? MBQM(x, ${M1}, ${S1}) : MBQM(x * y, ${M2}, ${S2})) + ${ZO};
#endif
#endif
    out[i] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#elif ${KIND} == 1
    const int x = a[ia];
    const int y = b[ib];
#if ${OP} == 0
    out[i] = (int)((uint)x + (uint)y);
#elif ${OP} == 1
    out[i] = (int)((uint)x - (uint)y);
#elif ${OP} == 2
    out[i] = (int)((uint)x * (uint)y);
#elif ${OP} == 3
    int q = 0;
    if (y == -1) {
        q = (int)(0u - (uint)x);
    } else if (y != 0) {
        q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
    }
    out[i] = q;
#elif ${OP} == 4
    out[i] = x < y ? y : x;
#else
    out[i] = y < x ? y : x;
#endif
#else
    const float x = ${LOAD}(a, ia);
    const float y = ${LOAD}(b, ib);
#if ${OP} == 0
    float v = x + y;
#elif ${OP} == 1
    float v = x - y;
#elif ${OP} == 2
    float v = x * y;
#elif ${OP} == 3
    float v = x / y;
#elif ${OP} == 4
    float v = x < y ? y : x;
#elif ${OP} == 5
    float v = y < x ? y : x;
#elif ${OP} == 6
    float v = pow(x, y);
#else
    float v = x >= 0.0f ? x : x * y;
#endif
#if ${OP} <= 3
    FUSED_ACTIVATION(v, ${ACT_FMIN}, ${ACT_FMAX}, ${ACT_NAN_LOW}, ${ACT_HARD_SWISH});
#endif
    ${STORE}(out, i, v);
#endif
    }
}
