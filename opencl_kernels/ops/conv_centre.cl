/* The quant8 input of a convolution whose products are summed in float (exact: see gemm.cl),
 * centred once: out[i] = (float)in[i] - ZX, work item g computing the run of elements
 * [g*RUN, (g+1)*RUN).  Converting at every load inside the register-tiled kernels cost more than the
 * multiply-adds. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL float* RESTRICT out) {
    const int i0 = GLOBAL_ID(0) * ${RUN};
    const int i1 = min(i0 + ${RUN}, ${COUNT});
    for (int i = i0; i < i1; ++i) out[i] = (float)in[i] - (float)${ZX};
}
