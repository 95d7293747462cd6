"""The shared kernel dialect on OpenCL: fixed-point helpers agree bit for bit with gpu_driver.quant
(the reference's arithmetic), half storage round-trips; exercised through the backend's parts."""
import numpy as np

from gpu_driver import quant

from .helpers import opencl_device

_SRC = """
KERNEL void probe(GLOBAL const int* RESTRICT a, GLOBAL const int* RESTRICT b, GLOBAL const half* RESTRICT h,
                  GLOBAL int* RESTRICT o, GLOBAL half* RESTRICT ho) {
    const int i = GLOBAL_ID(0);
    if (i >= 64) return;
    const int shift = (i % 7) - 3;
    o[i] = MBQM(a[i], b[i], shift);
    o[64 + i] = MBQM_LT1(a[i], b[i] > 0 ? b[i] : 1073741824, -(i % 5));
    o[128 + i] = RDBPOT(a[i], i % 32);
    o[192 + i] = SRDHM(a[i], b[i]);
    STORE_HALF(ho, i, LOAD_HALF(h, i) * 2.0f);
}
"""


def test_fixed_point_and_half_bit_exact():
    backend = opencl_device().backend
    allocator, launcher = backend.allocator, backend.launcher
    program = launcher.load(backend.compiler.compile(backend.compiler.prelude + _SRC), ["probe"])
    rng = np.random.default_rng(0)
    a = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    a[:8] = [-2**31, 2**31 - 1, 0, -1, 1, 12345, -12345, 77]
    b[0] = -2**31
    h = rng.standard_normal(64).astype(np.float16)
    bufs = [allocator.alloc(n) for n in (256, 256, 128, 1024, 128)]
    for buf, arr in zip(bufs, (a, b, h)):
        allocator.upload(buf, arr)
    launcher.enqueue([launcher.make_launch(program, "probe", bufs, (64,), (16,))])
    launcher.finish()
    o = allocator.download(bufs[3], np.empty(256, np.int32))
    ho = allocator.download(bufs[4], np.empty(64, np.float16))
    i = np.arange(64)
    m_lt1 = np.where(b > 0, b, 1073741824)
    np.testing.assert_array_equal(o[:64], quant.multiply_by_quantized_multiplier(a, b, i % 7 - 3))
    np.testing.assert_array_equal(o[64:128], quant.multiply_by_quantized_multiplier_smaller_than_one(a, m_lt1, -(i % 5)))
    np.testing.assert_array_equal(o[128:192], quant.rounding_divide_by_pot(a, i % 32))
    np.testing.assert_array_equal(o[192:], quant.srdhm(a, b))
    np.testing.assert_array_equal(ho, (h.astype(np.float32) * 2).astype(np.float16))


def test_views_and_device_copy():
    allocator = opencl_device().backend.allocator
    root = allocator.alloc(4096)
    v = allocator.view(root, 1024, 512)
    data = np.arange(128, dtype=np.float32)
    allocator.upload(v, data)
    whole = allocator.download(root, np.zeros(1024, np.float32))
    np.testing.assert_array_equal(whole[256:384], data)
    other = allocator.alloc(512)
    allocator.copy(v, other, 512)
    np.testing.assert_array_equal(allocator.download(other, np.zeros(128, np.float32)), data)


_MATH_SRC = """
KERNEL void math_probe(GLOBAL const float* RESTRICT x, GLOBAL float* RESTRICT o) {
    const int i = GLOBAL_ID(0);
    if (i >= COUNT) return;
    o[i] = gd_exp(x[i]);
    o[COUNT + i] = gd_tanh(x[i]);
}
"""


def _ulps(y, ref):
    """|y - ref| in units of the last place of the float32 nearest ref (denormals: 2^-149)."""
    r = np.abs(ref.astype(np.float32).astype(np.float64))
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(r, 2.0 ** -126))) - 23)
    return np.abs(y.astype(np.float64) - ref) / ulp


def test_gd_exp_and_tanh_accuracy_and_special_values():
    """gd_exp / gd_tanh within 1.5 ulp of the float64 functions (overflow, denormal underflow and the
    polynomial/exp switch of tanh included) and C's special values (signed zero, ±inf, NaN)."""
    backend = opencl_device().backend
    allocator, launcher = backend.allocator, backend.launcher
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, 89.0, -87.3365, -100.0, -103.3,
                         -103.98, -104.5, 1e-30, -1e-30, 1e-45, 0.625, -0.625, 0.6249999, 9.0, -9.0, 50.0], np.float32)
    rng = np.random.default_rng(0)
    x = np.concatenate([specials, np.linspace(-110, 95, 40000, dtype=np.float32),
                        (rng.standard_normal(20000) * 3).astype(np.float32),
                        np.float32(10.0) ** rng.uniform(-38, 1, 4000).astype(np.float32)])
    n = x.size
    src = backend.compiler.prelude + _MATH_SRC.replace("COUNT", str(n))
    program = launcher.load(backend.compiler.compile(src), ["math_probe"])
    bx, bo = allocator.alloc(4 * n), allocator.alloc(8 * n)
    allocator.upload(bx, x)
    launcher.enqueue([launcher.make_launch(program, "math_probe", [bx, bo], ((n + 63) // 64 * 64,), (64,))])
    launcher.finish()
    o = allocator.download(bo, np.empty(2 * n, np.float32))
    with np.errstate(over="ignore", invalid="ignore"):
        for y, ref in ((o[:n], np.exp(x.astype(np.float64))), (o[n:], np.tanh(x.astype(np.float64)))):
            ref32 = ref.astype(np.float32)
            finite = np.isfinite(ref32)
            assert _ulps(y[finite], ref[finite]).max() <= 1.5
            np.testing.assert_array_equal(y[~finite], ref32[~finite])  # inf and NaN
            number = ~np.isnan(ref32)
            np.testing.assert_array_equal(np.signbit(y[number]), np.signbit(ref32[number]))  # tanh(-0) = -0
