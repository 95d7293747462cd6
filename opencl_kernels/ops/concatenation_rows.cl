/* CONCATENATION / PACK of several inputs in one launch (plain copies): input k, viewed as
 * [outer, its row], is copied into the output [outer, OUT_ROW] after the rows of the inputs before it.
 * A work item copies up to BLOCK consecutive elements of one row of one input; PARAMS: in0, in1, …
 * then out; SELECT (written by ops/concatenation.py) picks from the item number g the input's pointer
 * src, its row length row, its offset in an output row off, its blocks per row blocks and the item
 * number within that input, item.  T: the element type's bits. */
KERNEL void ${KERNEL_NAME}(${PARAMS}) {
    const int g = GLOBAL_ID(0);
    if (g >= ${ITEMS}) return;
    GLOBAL const ${T}* src;
    int item, row, off, blocks;
    ${SELECT}
    const int o = item / blocks;
    const int j0 = (item - o * blocks) * ${BLOCK};
    const int j1 = min(j0 + ${BLOCK}, row);
    GLOBAL const ${T}* x = src + o * row;
    GLOBAL ${T}* y = out + o * ${OUT_ROW} + off;
    for (int j = j0; j < j1; ++j) y[j] = x[j];
}
