"""Per-execution overhead: a one-ADD model (16 floats), target < 100 µs per execution on PoCL.

Both the numpy convenience API and the HAL executeSynchronously path (pre-built request, no allocation)
are measured.  Peers in the same run: bare PyOpenCL doing the same work with blocking copies (3 host
waits), the same with non-blocking copies and one wait (the floor of this design), and one empty
host wait alone.  Every host wait wakes PoCL's worker threads; on an idle VM that costs far more than
on a busy host (see benchmarks/results), so the wait count matters more than the Python."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import DataLocation, Request, RequestArgument

from gpu_driver.zoo import add_model


def _request(shape):
    n = int(np.prod(shape)) * 4
    pool_in, pool_out = gd.SharedMemory(2 * n), gd.SharedMemory(n)
    pool_in.write(0, np.ones(shape, np.float32).tobytes())
    pool_in.write(n, np.ones(shape, np.float32).tobytes())
    return Request([RequestArgument(DataLocation(0, 0, n), []), RequestArgument(DataLocation(0, n, n), [])],
                   [RequestArgument(DataLocation(1, 0, n), [])], [pool_in, pool_out])


@pytest.mark.parametrize("device_name", ["opencl", "reference"])
def test_execute_synchronously_overhead(benchmark, device_name, pocl, reference):
    device = pocl if device_name == "opencl" else reference
    bm = add_model()
    pm = device.prepare_model(bm.model)
    req = _request(bm.input_shape)
    benchmark.group = "overhead-hal"
    benchmark.extra_info["device"] = device.name
    benchmark.pedantic(pm.execute_synchronously, args=(req,), rounds=2000, iterations=1, warmup_rounds=50)


def test_numpy_api_overhead(benchmark, pocl):
    bm = add_model()
    pm = pocl.prepare_model(bm.model)
    x = np.ones(bm.input_shape, np.float32)
    benchmark.group = "overhead-numpy"
    benchmark.pedantic(pm.execute, args=([x, x],), rounds=1000, iterations=1, warmup_rounds=50)


def _bare_add(pocl):
    """The one-ADD workload written directly in PyOpenCL: (queue, kernel, A, B, O, host in, host out)."""
    import pyopencl as cl
    ctx, q = pocl.backend.session.context, pocl.backend.session.queue
    prg = cl.Program(ctx, "__kernel void add(__global const float* a, __global const float* b, __global float* o)"
                          "{ int i = get_global_id(0); o[i] = a[i] + b[i]; }").build()
    a = np.ones(16, np.float32)
    bufs = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64) for _ in range(3)]
    k = prg.add
    k.set_args(*bufs)
    return q, k, *bufs, a, np.empty_like(a)


def test_bare_pyopencl_floor(benchmark, pocl):
    import pyopencl as cl
    q, k, A, B, O, a, out = _bare_add(pocl)

    def run():
        cl.enqueue_copy(q, A, a, is_blocking=True)
        cl.enqueue_copy(q, B, a, is_blocking=True)
        cl.enqueue_nd_range_kernel(q, k, (16,), None)
        cl.enqueue_copy(q, out, O, is_blocking=True)

    benchmark.group = "overhead-hal"
    benchmark.extra_info["device"] = "bare pyopencl"
    benchmark.pedantic(run, rounds=2000, iterations=1, warmup_rounds=50)


def test_bare_pyopencl_one_wait(benchmark, pocl):
    import pyopencl as cl
    q, k, A, B, O, a, out = _bare_add(pocl)

    def run():
        e1 = cl.enqueue_copy(q, A, a, is_blocking=False)
        e2 = cl.enqueue_copy(q, B, a, is_blocking=False)
        cl.enqueue_nd_range_kernel(q, k, (16,), None)
        e3 = cl.enqueue_copy(q, out, O, is_blocking=False)
        q.finish()
        del e1, e2, e3

    benchmark.group = "overhead-hal"
    benchmark.extra_info["device"] = "bare pyopencl, one wait"
    benchmark.pedantic(run, rounds=2000, iterations=1, warmup_rounds=50)


def test_one_host_wait(benchmark, pocl):
    import pyopencl as cl
    q = pocl.backend.session.queue
    prg = cl.Program(pocl.backend.session.context, "__kernel void nop(__global int* a) { }").build()
    buf = cl.Buffer(pocl.backend.session.context, cl.mem_flags.READ_WRITE, 4)
    k = prg.nop
    k.set_args(buf)

    def run():
        cl.enqueue_nd_range_kernel(q, k, (1,), None)
        q.finish()

    benchmark.group = "overhead-hal"
    benchmark.extra_info["device"] = "one empty kernel + wait"
    benchmark.pedantic(run, rounds=2000, iterations=1, warmup_rounds=50)
