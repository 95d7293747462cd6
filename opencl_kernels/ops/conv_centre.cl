/* The quant8 input of a convolution whose products are summed in float (exact: see gemm.cl),
 * centred once: out[i] = (float)in[i] - ZX.  Converting at every load inside the register-tiled
 * kernels cost more than the multiply-adds. */
KERNEL void ${KERNEL_NAME}(GLOBAL const ${T}* RESTRICT in, GLOBAL float* RESTRICT out) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    out[i] = (float)in[i] - (float)${ZX};
}
