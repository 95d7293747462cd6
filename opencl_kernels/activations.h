/* Dialect-neutral activation helpers shared by kernel templates (appended to either prelude by
 * gpu_driver/compiler/codegen.py, after fixed_point.h). */
/* The clamp of a float fused activation to [lo, hi], v an lvalue: std::min(std::max(v, lo), hi), so a
 * NaN goes through; with nan_low 1 (a RELU operation fused into its producer)
 * std::min(std::max(lo, v), hi), so a NaN gives lo, as the RELU operation's own kernel does. */
#define FUSED_CLAMP(v, lo, hi, nan_low) \
    ((v) = (nan_low) ? ((lo) < (v) ? (v) : (lo)) : ((v) < (lo) ? (lo) : (v)), (v) = (hi) < (v) ? (hi) : (v))
/* HARD_SWISH (float): x * std::min(6, std::max(0, x + 3)) / 6 */
DEVICE_FN float gd_hard_swish(float x) {
    const float r6 = 0.0f < x + 3.0f ? x + 3.0f : 0.0f;
    return x * (r6 < 6.0f ? r6 : 6.0f) / 6.0f;
}
/* The epilogue of an operation with a fused activation: FUSED_CLAMP, then gd_hard_swish where a
 * float HARD_SWISH operation was fused into the producer (hard_swish 1). */
#define FUSED_ACTIVATION(v, lo, hi, nan_low, hard_swish) \
    (FUSED_CLAMP(v, lo, hi, nan_low), (v) = (hard_swish) ? gd_hard_swish(v) : (v))
/* TFLite activation enum of the recurrent ops: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid */
DEVICE_FN float gd_sigmoid(float x) { return 1.0f / (1.0f + gd_exp(-x)); }
DEVICE_FN float gd_recurrent_act(float x, int code) {
    if (code == 1) return fmax(x, 0.0f);
    if (code == 3) return fmin(fmax(x, 0.0f), 6.0f);
    if (code == 4) return gd_tanh(x);
    if (code == 6) return gd_sigmoid(x);
    return x;
}
