/* Data movement of the shape operations (gpu_driver/ops/shape_ops.py); elements are copied as raw bits
 * of type T (float as uint, half as ushort), one work item per output element, COUNT elements.
 *
 * OP 0 — affine gather (TRANSPOSE, CHANNEL_SHUFFLE, DEPTH/SPACE, BATCH/SPACE), out[idx] = in[...]:
 *   idx is split row-major into factors i0..i5 of sizes OD0..OD5 (i0 outermost); factor k adds
 *   ik·Mk to input coordinate c<Ak> (Ak ∈ 0..3); the coordinates start at −P0..−P3 (padding) and
 *   address the row-major input [ID0, ID1, ID2, ID3].  HAS_PAD: a coordinate outside [0, IDj) gives
 *   the literal PAD instead.
 * OP 1 — fill: out[idx] = VALUE (a literal of type T, raw bits).
 * OP 2 — fill from a one-element buffer: out[idx] = value[0].
 */
#if ${OP} == 0
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL ${T}* RESTRICT out) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    int r = idx;
    const int i5 = r % ${OD5}; r /= ${OD5};
    const int i4 = r % ${OD4}; r /= ${OD4};
    const int i3 = r % ${OD3}; r /= ${OD3};
    const int i2 = r % ${OD2}; r /= ${OD2};
    const int i1 = r % ${OD1};
    const int i0 = r / ${OD1};
    int c0 = -${P0}, c1 = -${P1}, c2 = -${P2}, c3 = -${P3};
    c${A0} += i0 * ${M0};
    c${A1} += i1 * ${M1};
    c${A2} += i2 * ${M2};
    c${A3} += i3 * ${M3};
    c${A4} += i4 * ${M4};
    c${A5} += i5 * ${M5};
#if ${HAS_PAD}
    if (c0 < 0 || c0 >= ${ID0} || c1 < 0 || c1 >= ${ID1} || c2 < 0 || c2 >= ${ID2} || c3 < 0 || c3 >= ${ID3}) {
        out[idx] = (${T})(${PAD});
        return;
    }
#endif
    out[idx] = in[((c0 * ${ID1} + c1) * ${ID2} + c2) * ${ID3} + c3];
}
#elif ${OP} == 1
KERNEL void ${KERNEL_NAME}(GLOBAL ${T}* RESTRICT out) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    out[idx] = (${T})(${VALUE});
}
#else
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT value, GLOBAL ${T}* RESTRICT out) {
    const int idx = GLOBAL_ID(0);
    if (idx >= ${COUNT}) return;
    out[idx] = value[0];
}
#endif
