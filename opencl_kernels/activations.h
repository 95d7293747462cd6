/* Dialect-neutral activation helpers shared by kernel templates (appended to either prelude by
 * gpu_driver/compiler/codegen.py, after fixed_point.h). */
/* TFLite activation enum of the recurrent ops: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid */
DEVICE_FN float gd_sigmoid(float x) { return 1.0f / (1.0f + gd_exp(-x)); }
DEVICE_FN float gd_recurrent_act(float x, int code) {
    if (code == 1) return fmax(x, 0.0f);
    if (code == 3) return fmin(fmax(x, 0.0f), 6.0f);
    if (code == 4) return gd_tanh(x);
    if (code == 6) return gd_sigmoid(x);
    return x;
}
