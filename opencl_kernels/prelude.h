/* gpu_driver shared kernel dialect — OpenCL C 1.2 flavour.
 *
 * Every kernel template in opencl_kernels/ops/ (*.cl files) is written ONCE against the macros below and is
 * compiled either as OpenCL C (this prelude prepended) or as CUDA C++ with NVRTC
 * (cuda_kernels/prelude.cuh prepended instead).  Use only what is listed here plus plain C.
 *
 * Kernel shape (calling convention, see gpu_driver/compiler/ir.py):
 *     KERNEL void ${KERNEL_NAME}(GLOBAL const float* RESTRICT in0, GLOBAL float* RESTRICT out0) {
 *         const int i = GLOBAL_ID(0);
 *         if (i >= ${COUNT}) return;          // ALWAYS bounds-check: the launcher may round the
 *         ...                                 // global size up to a multiple of the local size
 *     }
 *   Parameters: the instance's inputs, then its outputs, each a pointer to its element type
 *   (ir.C_TYPES); every size/stride/constant is a ${NAME} literal substituted by codegen.
 *
 * Qualifiers / launch geometry
 *   KERNEL             kernel entry (OpenCL __kernel, CUDA extern "C" __global__); write "KERNEL void"
 *                      (codegen redefines it as KERNEL_FIXED_LOCAL(x, y, z) around a kernel whose every
 *                      launch has that local size: reqd_work_group_size / __launch_bounds__)
 *   GLOBAL, LOCAL      address spaces (LOCAL: work-group shared arrays declared at kernel scope,
 *                      e.g. "LOCAL float tile[256];"); CONSTANT_AS = constant address space
 *   RESTRICT           restrict-qualifier for pointer parameters
 *   DEVICE_FN          qualifier for helper functions ("DEVICE_FN float f(float x) {...}")
 *   GLOBAL_ID(d), LOCAL_ID(d), GROUP_ID(d), LOCAL_SIZE(d), NUM_GROUPS(d), GLOBAL_SIZE(d)
 *                      int-valued, d = 0, 1, 2 (a literal)
 *   BARRIER            work-group barrier with local-memory fence
 *   Helper functions in a template are emitted once per kernel instance: name them with the
 *   ${KERNEL_NAME} prefix or guard them: #ifndef GD_HELPERS_MYOP / #define GD_HELPERS_MYOP ... #endif
 *
 * Types
 *   uchar, ushort, uint, ulong (CUDA typedefs them), char (signed 8-bit), short, int, float
 *   int64 / uint64     64-bit integers (OpenCL long / CUDA long long)
 *   half               STORAGE ONLY: never compute on half; load/store through
 *   LOAD_HALF(ptr, i)          -> float   (vload_half; PoCL has no cl_khr_fp16)
 *   STORE_HALF(ptr, i, value)  <- float   (vstore_half, round to nearest even)
 *   LOAD_PLAIN(ptr, i)         -> float   ((float)ptr[i]) and STORE_PLAIN(ptr, i, value): the same
 *                      access for any other storage, so a template computing in float takes its
 *                      load/store macro as a literal (${LOAD} / ${STORE}: lowering_helpers.float_io)
 *   Conversions: plain C casts only (no convert_* builtins); ROUND(x) rounds ties away from zero.
 *   FLOATV(n)          float vector of n = 4, 8 or 16 lanes (OpenCL floatn; CUDA a struct of n floats):
 *                      lane v[j]; v + v, v += v, v * v (lane by lane), x * v and v * x with a float x
 *   FLOATV_SPLAT(n, x) the vector with every lane x
 *   FLOATV_LOAD(n, p, i)  the vector p[i*n .. i*n+n-1] of a GLOBAL float pointer (4-byte aligned)
 *   FLOATV_STORE(n, p, i, v)  stores v there
 *   FLOATV_STORE_PRIVATE(n, p, i, v)  the same into a private float array
 *   FLOATV_ACTIVATION(n, v, lo, hi, nan_low, hard_swish)   FUSED_ACTIVATION (activations.h) on every
 *                      lane of the FLOATV lvalue v (on OpenCL as vector operations)
 *                      PoCL vectorises float arrays only 8 lanes wide (256-bit AVX); arithmetic on a
 *                      16-lane FLOATV compiles to 512-bit AVX-512 code
 *   FLOATV_PRELU(n, v, alpha)  each lane of the FLOATV lvalue v that is not >= 0 (a NaN stays NaN)
 *                      times the same lane of the FLOATV alpha
 *
 * Math (float unless noted; all available in both dialects)
 *   min, max (int and float), clamp(x, lo, hi) (int and float), fmin, fmax, fabs, abs (int),
 *   exp, log, sqrt, rsqrt, tanh, floor, ceil, ROUND, pow, sin, cos
 *   gd_exp(x), gd_tanh(x)   exp and tanh for the element-wise kernels: on OpenCL inline, branch-free
 *                      arithmetic that PoCL vectorises across work items (its exp/tanh are scalar
 *                      library calls, 4-8x slower); within 1 ulp (exp) / 1.3 ulp (tanh) over the whole
 *                      float range, special values as C's expf/tanhf (±inf, NaN, overflow to inf,
 *                      gradual underflow, tanh saturating to ±1, tanh(-0) = -0); CUDA: expf / tanhf
 *   FAST_EXP(x), FAST_TANH(x), FAST_RECIP(x)   fast approximations (not for exact-bar ops)
 *   INFINITY, NAN, FLT_MAX, INT_MIN, INT_MAX
 *
 * Quantised fixed point (opencl_kernels/fixed_point.h, appended to either prelude by codegen;
 * operands.md §8.3, exact, 64-bit integer arithmetic; the reference
 * device gpu_driver/quant.py is the oracle and these agree bit for bit):
 *   int SRDHM(int a, int b)              SaturatingRoundingDoublingHighMul
 *   int RDBPOT(int x, int e)             RoundingDivideByPOT, 0 <= e <= 31, ties away from zero
 *   int MBQM(int x, int m, int shift)    MultiplyByQuantizedMultiplier, shift > 0 = left
 *   int MBQM_LT1(int x, int m, int shift)   shift <= 0 ("SmallerThanOneExp")
 *   int MBQM_GT1(int x, int m, int shift)   shift >= 0 ("GreaterThanOne")
 *   int gd_requantize(int acc, int m, int shift, int zo, int lo, int hi)
 *                                        zo + MBQM(acc, m, shift) clamped to [lo, hi]
 *   Multipliers/shifts come from gpu_driver.quant.quantize_multiplier as ${...} literals.
 */
#ifndef GD_PRELUDE
#define GD_PRELUDE
#define GD_OPENCL 1

#define KERNEL_ANY_LOCAL __kernel
#define KERNEL_FIXED_LOCAL(x, y, z) __kernel __attribute__((reqd_work_group_size(x, y, z)))
#define KERNEL KERNEL_ANY_LOCAL
#define GLOBAL __global
#define LOCAL __local
#define CONSTANT_AS __constant
#define RESTRICT restrict
#define DEVICE_FN static inline

#define GLOBAL_ID(d) ((int)get_global_id(d))
#define LOCAL_ID(d) ((int)get_local_id(d))
#define GROUP_ID(d) ((int)get_group_id(d))
#define LOCAL_SIZE(d) ((int)get_local_size(d))
#define NUM_GROUPS(d) ((int)get_num_groups(d))
#define GLOBAL_SIZE(d) ((int)get_global_size(d))
#define BARRIER barrier(CLK_LOCAL_MEM_FENCE)

typedef long int64;
typedef ulong uint64;

#define LOAD_HALF(ptr, i) vload_half((size_t)(i), (ptr))
#define STORE_HALF(ptr, i, v) vstore_half_rte((float)(v), (size_t)(i), (ptr))
#define LOAD_PLAIN(ptr, i) ((float)(ptr)[i])
#define STORE_PLAIN(ptr, i, v) ((ptr)[i] = (v))

typedef float4 __attribute__((aligned(4))) gd_floatv4_unaligned;
typedef float8 __attribute__((aligned(4))) gd_floatv8_unaligned;
typedef float16 __attribute__((aligned(4))) gd_floatv16_unaligned;
#define FLOATV(n) float##n
#define FLOATV_SPLAT(n, x) ((float##n)(x))
#define FLOATV_LOAD(n, p, i) (*(GLOBAL const gd_floatv##n##_unaligned*)((p) + (size_t)(i) * (n)))
#define FLOATV_STORE(n, p, i, v) (*(GLOBAL gd_floatv##n##_unaligned*)((p) + (size_t)(i) * (n)) = (v))
#define FLOATV_STORE_PRIVATE(n, p, i, v) (*(gd_floatv##n##_unaligned*)((p) + (size_t)(i) * (n)) = (v))
/* FUSED_ACTIVATION (activations.h) on every lane of a FLOATV lvalue: the clamp's comparisons and
 * selections as vector operations, HARD_SWISH as gd_hard_swish does it */
#define GD_HARD_SWISH_V(n) DEVICE_FN float##n gd_hard_swish##n(float##n x) { \
        const float##n r6 = 0.0f < x + 3.0f ? x + 3.0f : (float##n)(0.0f); \
        return x * (r6 < 6.0f ? r6 : (float##n)(6.0f)) / 6.0f; }
GD_HARD_SWISH_V(4)
GD_HARD_SWISH_V(8)
GD_HARD_SWISH_V(16)
#define FLOATV_ACTIVATION(n, v, lo, hi, nan_low, hard_swish) \
    (FUSED_CLAMP(v, lo, hi, nan_low), (v) = (hard_swish) ? gd_hard_swish##n(v) : (v))
#define FLOATV_PRELU(n, v, alpha) ((v) = (v) >= 0.0f ? (v) : (v) * (alpha))

#define ROUND(x) round(x)
#define FAST_EXP(x) native_exp(x)
#define FAST_TANH(x) tanh(x)
#define FAST_RECIP(x) native_recip(x)

/* exp: n = round(x / ln 2) through the 1.5·2^23 shifter (its bit pattern gives n without a float to
 * int conversion), r = x - n·ln 2 in two parts (Cody-Waite; exact head for |n| <= 255), exp(r) by
 * cephes' degree-6 polynomial on |r| <= ln 2 / 2, scaled by 2^(n/2)·2^(n - n/2) so that results near
 * overflow and in the denormal range are rounded once.  x is first bounded to [-104, 88.8] (exp is
 * inf above and 0 below both); a NaN passes the comparisons and the polynomial keeps it NaN. */
DEVICE_FN float gd_exp(float x) {
    float xc = x > 88.8f ? 88.8f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    const float t = xc * 1.44269504088896341f + 12582912.0f;
    const float k = t - 12582912.0f;
    const int n = as_int(t) - 0x4B400000;
    const float r = (xc - k * 0.693359375f) - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const int n1 = n >> 1;
    return p * as_float((uint)(n1 + 127) << 23) * as_float((uint)(n - n1 + 127) << 23);
}
/* tanh of |x| with x's sign put back: cephes' odd polynomial for |x| < 0.625 (tiny x exact, -0 stays
 * -0), else 1 - 2 / (exp(2|x|) + 1) (1 once exp overflows); both are computed and one selected. */
DEVICE_FN float gd_tanh(float x) {
    const float a = as_float(as_int(x) & 0x7FFFFFFF);
    const float z = a * a;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * a + a;
    const float big = 1.0f - 2.0f / (gd_exp(2.0f * a) + 1.0f);
    return as_float(as_int(a < 0.625f ? small : big) | (as_int(x) & (int)0x80000000));
}

#endif /* GD_PRELUDE */
