/* ADD / MUL with numpy broadcasting (operations.md 0, 18; operands.md §8.5).
 * Output viewed as rank 4 [D0,D1,D2,D3]; SAk and SBk are the element strides of A and B per output
 * axis (0 on a broadcast axis).  OP: 0 ADD, 1 MUL.  QUANT: 0 float, 1 quantized (T = uchar/char).
 * INT: 1 for int32 (wrapping: computed on uint, since signed overflow is undefined in C).
 * BCAST: 0 when A, B and the output have the same shape (flat index), 1 otherwise.
 * VEC: elements per work item (contiguous run along the output). */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT a, GLOBAL const ${T}* RESTRICT b,
                           GLOBAL ${T}* RESTRICT out) {
    const int gid = GLOBAL_ID(0);
    if (gid >= ${COUNT}) return;
    const int i = gid;
#if ${BCAST}
    int r = i;
    const int i3 = r % ${D3}; r /= ${D3};
    const int i2 = r % ${D2}; r /= ${D2};
    const int i1 = r % ${D1};
    const int i0 = r / ${D1};
    const int ia = i0 * ${SA0} + i1 * ${SA1} + i2 * ${SA2} + i3 * ${SA3};
    const int ib = i0 * ${SB0} + i1 * ${SB1} + i2 * ${SB2} + i3 * ${SB3};
#else
    const int ia = i;
    const int ib = i;
#endif
#if ${QUANT}
    const int x = (int)a[ia] - ${ZA};
    const int y = (int)b[ib] - ${ZB};
#if ${OP} == 0
    const int xs = MBQM_LT1(x * (1 << ${LEFT_SHIFT}), ${M1}, ${S1});
    const int ys = MBQM_LT1(y * (1 << ${LEFT_SHIFT}), ${M2}, ${S2});
    int q = MBQM_LT1(xs + ys, ${MO}, ${SO}) + ${ZO};
#else
    int q = MBQM(x * y, ${MO}, ${SO}) + ${ZO};
#endif
    out[i] = (${T})clamp(q, ${ACT_MIN}, ${ACT_MAX});
#elif ${INT}
#if ${OP} == 0
    out[i] = (int)((uint)a[ia] + (uint)b[ib]);
#else
    out[i] = (int)((uint)a[ia] * (uint)b[ib]);
#endif
#else
#if ${OP} == 0
    float v = a[ia] + b[ib];
#else
    float v = a[ia] * b[ib];
#endif
#if ${HAS_ACT}
    v = fmin(fmax(v, ${ACT_FMIN}), ${ACT_FMAX});
#endif
    out[i] = v;
#endif
}
