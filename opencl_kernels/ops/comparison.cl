/* Broadcasting binary predicates to TENSOR_BOOL8 (0/1): the comparisons (operations.md 48, 53, 54, 58,
 * 59, 68) and LOGICAL_AND / LOGICAL_OR (61, 63).
 * Output viewed as rank 4 [D0,D1,D2,D3]; SAk and SBk are the element strides of A and B per output axis
 * (0 on a broadcast axis); BCAST: 0 when A, B and the output have one shape (flat index).
 * T: the element type of A and B.  KIND: how an element is read —
 *   0 float (TENSOR_FLOAT32/16, through the ${LOAD} macro),
 *   1 quantized: the real value (float)(q - ZA) * SCALE_A (and ZB, SCALE_B for B), as AOSP computes it,
 *   2 the raw integer (TENSOR_INT32, the raw byte of TENSOR_BOOL8).
 * OP: 0 ==, 1 !=, 2 >, 3 >=, 4 <, 5 <=, 6 logical and, 7 logical or (of x != 0 and y != 0). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT a, GLOBAL const ${T}* RESTRICT b,
                           GLOBAL uchar* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int i3 = i % ${D3};
    const int i2 = (i / ${D3}) % ${D2};
    const int i1 = (i / (${D3} * ${D2})) % ${D1};
    const int i0 = i / (${D3} * ${D2} * ${D1});
    const int ia = ${BCAST} ? i0 * ${SA0} + i1 * ${SA1} + i2 * ${SA2} + i3 * ${SA3} : i;
    const int ib = ${BCAST} ? i0 * ${SB0} + i1 * ${SB1} + i2 * ${SB2} + i3 * ${SB3} : i;
#if ${KIND} == 0
    const float x = ${LOAD}(a, ia);
    const float y = ${LOAD}(b, ib);
#elif ${KIND} == 1
    const float x = (float)((int)a[ia] - ${ZA}) * ${SCALE_A};
    const float y = (float)((int)b[ib] - ${ZB}) * ${SCALE_B};
#else
    const int x = (int)a[ia];
    const int y = (int)b[ib];
#endif
#if ${OP} == 0
    out[i] = (uchar)(x == y);
#elif ${OP} == 1
    out[i] = (uchar)(x != y);
#elif ${OP} == 2
    out[i] = (uchar)(x > y);
#elif ${OP} == 3
    out[i] = (uchar)(x >= y);
#elif ${OP} == 4
    out[i] = (uchar)(x < y);
#elif ${OP} == 5
    out[i] = (uchar)(x <= y);
#elif ${OP} == 6
    out[i] = (uchar)(x != 0 && y != 0);
#else
    out[i] = (uchar)(x != 0 || y != 0);
#endif
}
