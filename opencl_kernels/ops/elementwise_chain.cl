/* A fused chain of float32 element-wise operations (compiler/elementwise_chain.py), one work item per
 * output element: out[i] = the last step's value.  Literals written by chain_defines: PARAMS the
 * inputs in0, in1, … then out; INDEX the 4-D output index i0..i3 (only when an input broadcasts);
 * BODY the operations in order, each as the C statement of its own kernel on the running value v. */
KERNEL void ${KERNEL_NAME}(${PARAMS}) {
    const int i = GLOBAL_ID(0);
    if (i >= ${COUNT}) return;
    ${INDEX}
    float v;
    ${BODY}
    out[i] = v;
}
