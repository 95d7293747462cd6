/* Element-wise math functions on a flat tensor of COUNT elements, one work item each:
 *   out[i] = f(in[i]).
 * T: the storage type of the input and the output.
 * OP: 0 ABS, 1 EXP, 2 LOG, 3 NEG, 4 RSQRT, 5 SIN, 6 SQRT, 7 table lookup.
 * INT 0 (OP 0..6): computed in fp32, read/written through LOAD/STORE (LOAD_HALF/STORE_HALF for fp16):
 *   fabs(x), gd_exp(x), log(x), -x, 1.0f / sqrt(x), sin(x), sqrt(x).
 * INT 1 (int32, OP 0 or 3): |x| and -x wrapping on INT_MIN (computed on uint).
 * OP 7 (quantized, T uchar/char): out[i] = table[QOFFSET + in[i]], an extra input holding the result
 *   for every stored value from qmin up; QOFFSET = -qmin of T. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in,
#if ${OP} == 7
                           GLOBAL const ${T}* RESTRICT table,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
#if ${OP} == 7
    out[i] = table[${QOFFSET} + (int)in[i]];
#elif ${INT}
    const int x = in[i];
#if ${OP} == 0
    out[i] = x < 0 ? (int)(0u - (uint)x) : x;
#else
    out[i] = (int)(0u - (uint)x);
#endif
#else
    const float x = ${LOAD}(in, i);
#if ${OP} == 0
    const float v = fabs(x);
#elif ${OP} == 1
    const float v = gd_exp(x);
#elif ${OP} == 2
    const float v = log(x);
#elif ${OP} == 3
    const float v = -x;
#elif ${OP} == 4
    const float v = 1.0f / sqrt(x);
#elif ${OP} == 5
    const float v = sin(x);
#else
    const float v = sqrt(x);
#endif
    ${STORE}(out, i, v);
#endif
}
