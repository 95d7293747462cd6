/* gpu_driver shared kernel dialect — CUDA C++ flavour (NVRTC, no headers needed).
 *
 * The macro set is documented in opencl_kernels/prelude.h; this file maps it to CUDA so that the
 * templates in opencl_kernels/ops/ (the .cl files) compile unchanged with NVRTC.
 */
#ifndef GD_PRELUDE
#define GD_PRELUDE
#define GD_CUDA 1

#define KERNEL_ANY_LOCAL extern "C" __global__
#define KERNEL_FIXED_LOCAL(x, y, z) extern "C" __global__ __launch_bounds__((x) * (y) * (z))
#define KERNEL KERNEL_ANY_LOCAL
#define GLOBAL
#define LOCAL __shared__
#define CONSTANT_AS
#define RESTRICT __restrict__
#define DEVICE_FN static __device__ __forceinline__

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;
typedef long long int64;
typedef unsigned long long uint64;
/* half is storage only (16-bit pattern); converted with PTX cvt, so no cuda_fp16.h is needed */
typedef unsigned short half;

static __device__ __forceinline__ int gd_global_id(int d) {
    return d == 0 ? (int)(blockIdx.x * blockDim.x + threadIdx.x)
         : d == 1 ? (int)(blockIdx.y * blockDim.y + threadIdx.y)
                  : (int)(blockIdx.z * blockDim.z + threadIdx.z);
}
static __device__ __forceinline__ int gd_local_id(int d) {
    return d == 0 ? (int)threadIdx.x : d == 1 ? (int)threadIdx.y : (int)threadIdx.z;
}
static __device__ __forceinline__ int gd_group_id(int d) {
    return d == 0 ? (int)blockIdx.x : d == 1 ? (int)blockIdx.y : (int)blockIdx.z;
}
static __device__ __forceinline__ int gd_local_size(int d) {
    return d == 0 ? (int)blockDim.x : d == 1 ? (int)blockDim.y : (int)blockDim.z;
}
static __device__ __forceinline__ int gd_num_groups(int d) {
    return d == 0 ? (int)gridDim.x : d == 1 ? (int)gridDim.y : (int)gridDim.z;
}
#define GLOBAL_ID(d) gd_global_id(d)
#define LOCAL_ID(d) gd_local_id(d)
#define GROUP_ID(d) gd_group_id(d)
#define LOCAL_SIZE(d) gd_local_size(d)
#define NUM_GROUPS(d) gd_num_groups(d)
#define GLOBAL_SIZE(d) (gd_num_groups(d) * gd_local_size(d))
#define BARRIER __syncthreads()

static __device__ __forceinline__ float gd_load_half(const half* p, long long i) {
    float f;
    unsigned short h = p[i];
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
static __device__ __forceinline__ void gd_store_half(half* p, long long i, float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    p[i] = h;
}
#define LOAD_HALF(ptr, i) gd_load_half((ptr), (long long)(i))
#define STORE_HALF(ptr, i, v) gd_store_half((ptr), (long long)(i), (float)(v))
#define LOAD_PLAIN(ptr, i) ((float)(ptr)[i])
#define STORE_PLAIN(ptr, i, v) ((ptr)[i] = (v))

/* FLOATV: n floats with the OpenCL vector operators the kernels use */
template <int N> struct gd_floatv {
    float s[N];
    __device__ __forceinline__ float& operator[](int j) { return s[j]; }
    __device__ __forceinline__ float operator[](int j) const { return s[j]; }
    __device__ __forceinline__ gd_floatv& operator+=(const gd_floatv& o) {
#pragma unroll
        for (int j = 0; j < N; ++j) s[j] += o.s[j];
        return *this;
    }
};
template <int N> static __device__ __forceinline__ gd_floatv<N> gd_floatv_splat(float x) {
    gd_floatv<N> v;
#pragma unroll
    for (int j = 0; j < N; ++j) v.s[j] = x;
    return v;
}
template <int N> static __device__ __forceinline__ gd_floatv<N> gd_floatv_load(const float* p, long long i) {
    gd_floatv<N> v;
#pragma unroll
    for (int j = 0; j < N; ++j) v.s[j] = p[i * N + j];
    return v;
}
template <int N> static __device__ __forceinline__ void gd_floatv_store(float* p, long long i, const gd_floatv<N>& v) {
#pragma unroll
    for (int j = 0; j < N; ++j) p[i * N + j] = v.s[j];
}
template <int N> static __device__ __forceinline__ gd_floatv<N> operator+(gd_floatv<N> a, const gd_floatv<N>& b) {
    return a += b;
}
template <int N> static __device__ __forceinline__ gd_floatv<N> operator*(float x, gd_floatv<N> v) {
#pragma unroll
    for (int j = 0; j < N; ++j) v.s[j] *= x;
    return v;
}
template <int N> static __device__ __forceinline__ gd_floatv<N> operator*(gd_floatv<N> v, float x) { return x * v; }
template <int N> static __device__ __forceinline__ gd_floatv<N> operator*(gd_floatv<N> a, const gd_floatv<N>& b) {
#pragma unroll
    for (int j = 0; j < N; ++j) a.s[j] *= b.s[j];
    return a;
}
#define FLOATV(n) gd_floatv<n>
#define FLOATV_SPLAT(n, x) gd_floatv_splat<n>(x)
#define FLOATV_LOAD(n, p, i) gd_floatv_load<n>((p), (long long)(i))
#define FLOATV_STORE(n, p, i, v) gd_floatv_store<n>((p), (long long)(i), (v))
#define FLOATV_STORE_PRIVATE(n, p, i, v) gd_floatv_store<n>((p), (long long)(i), (v))
#define FLOATV_ACTIVATION(n, v, lo, hi, nan_low, hard_swish) \
    do { _Pragma("unroll") for (int j_ = 0; j_ < (n); ++j_) \
        FUSED_ACTIVATION((v)[j_], lo, hi, nan_low, hard_swish); } while (0)
#define FLOATV_PRELU(n, v, alpha) \
    do { const gd_floatv<n> a_ = (alpha); _Pragma("unroll") for (int j_ = 0; j_ < (n); ++j_) \
        (v)[j_] = (v)[j_] >= 0.0f ? (v)[j_] : (v)[j_] * a_[j_]; } while (0)

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef INT_MIN
#define INT_MIN (-2147483647 - 1)
#endif

/* OpenCL builtins missing from CUDA */
static __device__ __forceinline__ float clamp(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }
static __device__ __forceinline__ int clamp(int x, int lo, int hi) { return min(max(x, lo), hi); }
static __device__ __forceinline__ long long clamp(long long x, long long lo, long long hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}
#define ROUND(x) roundf(x)
#define FAST_EXP(x) __expf(x)
#define FAST_TANH(x) tanhf(x)
#define FAST_RECIP(x) __frcp_rn(x)
static __device__ __forceinline__ float gd_exp(float x) { return expf(x); }
static __device__ __forceinline__ float gd_tanh(float x) { return tanhf(x); }

/* the quantised fixed-point helpers (opencl_kernels/fixed_point.h) are appended by codegen */

#endif /* GD_PRELUDE */
