/* Element-wise LOGICAL_NOT and SELECT (operations.md 62, 84), flat index over COUNT elements.
 * OP 0 LOGICAL_NOT: out = (x == 0), x and out TENSOR_BOOL8.
 * OP 1 SELECT: out = cond != 0 ? x : y, cond TENSOR_BOOL8; x, y and out of element type T.  KIND:
 *   0 float (TENSOR_FLOAT32/16): moved through the ${LOAD} / ${STORE} macros (exact),
 *   1 quantized: the requantized value of the chosen byte q from its table, tx[q + QOFFSET] or
 *     ty[q + QOFFSET] (QOFFSET = -qmin of T),
 *   2 copied as is (TENSOR_INT32). */
#if ${OP} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const uchar* RESTRICT x, GLOBAL uchar* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    out[i] = (uchar)(x[i] == 0);
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const uchar* RESTRICT cond, GLOBAL const ${T}* RESTRICT x,
                           GLOBAL const ${T}* RESTRICT y,
#if ${KIND} == 1
                           GLOBAL const ${T}* RESTRICT tx, GLOBAL const ${T}* RESTRICT ty,
#endif
                           GLOBAL ${T}* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    const int c = cond[i] != 0;
#if ${KIND} == 0
    ${STORE}(out, i, c ? ${LOAD}(x, i) : ${LOAD}(y, i));
#elif ${KIND} == 1
    out[i] = c ? tx[(int)x[i] + ${QOFFSET}] : ty[(int)y[i] + ${QOFFSET}];
#else
    out[i] = c ? x[i] : y[i];
#endif
}
#endif
