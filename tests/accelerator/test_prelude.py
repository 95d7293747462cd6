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
