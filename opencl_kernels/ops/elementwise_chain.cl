/* A fused chain of float32 element-wise operations (compiler/elementwise_chain.py), work item g
 * computing the run of output elements [g*RUN, (g+1)*RUN): out[i] = the last step's value.
 * Literals written by chain_defines: PARAMS the inputs in0, in1, … then out; INDEX the 4-D output
 * index i0..i3 (only when an input broadcasts); BODY the operations in order, each as the C
 * statement of its own kernel on the running value v. */
KERNEL void ${KERNEL_NAME}(${PARAMS}) {
    const int i0 = GLOBAL_ID(0) * ${RUN};
    const int i1 = min(i0 + ${RUN}, ${COUNT});
    for (int i = i0; i < i1; ++i) {
        ${INDEX}
        float v;
        ${BODY}
        out[i] = v;
    }
}
