"""Fenced executions, bursts and reusable executions through the service: fences cross the boundary
both ways (a client's own fence as an eventfd, the server's fences by handle), a burst's slots and a
reusable execution's request live on the server."""
import select
import threading

import numpy as np
import pytest

from gpu_driver import DriverError, ErrorStatus, FenceState, MeasureTiming, SharedMemory, SyncFence
from gpu_driver.errors import failure
from gpu_driver.hal.model import DataLocation, Request, RequestArgument

from .models import N, add_pools, add_request, add_request_model



@pytest.fixture(params=["reference", "opencl"])
def prepared(request, remote):
    try:
        device = remote.get_device(request.param)
    except DriverError:
        pytest.skip(f"the service has no {request.param} device")
    return device.prepare_model(add_request_model())


def test_fenced_execution_signals_the_clients_fence(prepared):
    x, y, a, b = add_pools()
    out = SharedMemory(4 * N)
    fence, callback = prepared.execute_fenced(add_request(a, b, out), measure_timing=MeasureTiming.YES)
    assert fence.wait(30) is FenceState.SIGNALED
    launched, fenced = callback.get_execution_info(30)
    assert launched.time_in_driver >= 0 and fenced.time_in_driver >= 0
    np.testing.assert_array_equal(out.array(np.float32), x + y)
    assert select.select([fence.fileno()], [], [], 5)[0]  # pollable like a local fence


def test_fenced_execution_waits_for_a_client_fence(prepared):
    x, y, a, b = add_pools()
    out = SharedMemory(4 * N)
    gate = SyncFence()
    fence, _ = prepared.execute_fenced(add_request(a, b, out), [gate])
    assert fence.wait(0.3) is FenceState.ACTIVE  # the server waits for the client's fence
    assert not out.array(np.float32).any()
    gate.signal()
    assert fence.wait(30) is FenceState.SIGNALED
    np.testing.assert_array_equal(out.array(np.float32), x + y)


def test_a_failed_client_fence_fails_the_execution(prepared):
    _, _, a, b = add_pools()
    gate = SyncFence()
    fence, callback = prepared.execute_fenced(add_request(a, b, SharedMemory(4 * N)), [gate])
    threading.Timer(0.1, lambda: gate.signal(failure("client side trouble"))).start()
    assert fence.wait(30) is FenceState.ERROR
    with pytest.raises(DriverError) as err:
        callback.get_execution_info(1)
    assert err.value.status == ErrorStatus.GENERAL_FAILURE
    failed = SyncFence()
    failed.signal(failure("already failed"))
    assert prepared.execute_fenced(add_request(a, b, SharedMemory(4 * N)), [failed])[0].wait(30) is FenceState.ERROR


def test_fenced_chain_on_server_fences_runs_in_order(prepared):
    x, y, a, b = add_pools()
    mid, out = SharedMemory(4 * N), SharedMemory(4 * N)
    gate = SyncFence()
    first, _ = prepared.execute_fenced(add_request(a, b, mid), [gate])
    second, _ = prepared.execute_fenced(add_request(mid, b, out), [first])  # waits on the server's fence by handle
    gate.signal()
    assert second.wait(30) is FenceState.SIGNALED and first.get_state() is FenceState.SIGNALED
    np.testing.assert_array_equal(out.array(np.float32), x + 2 * y)


def test_fenced_validation_errors_raise_at_once(prepared):
    _, _, a, b = add_pools()
    bad = Request(add_request(a, b, a).inputs, [RequestArgument(DataLocation(9, 0, 64))], [a, b])
    with pytest.raises(DriverError) as err:
        prepared.execute_fenced(bad)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(DriverError) as err:
        prepared.execute_fenced(add_request(a, b, SharedMemory(4 * N)), ["not a fence"])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_burst_reuses_slots_on_the_server(prepared):
    x, y, a, b = add_pools()
    out = SharedMemory(4 * N)
    burst = prepared.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in (a, b, out)]
    request = add_request(a, b, out)
    for k in range(5):
        a.write(0, (x * k).tobytes())
        shapes, _ = burst.execute_synchronously(request, slots)
        assert shapes[0].dimensions == [1, N]
        np.testing.assert_array_equal(out.array(np.float32), x * k + y)
    burst.free_memory(slots[2])
    with pytest.raises(DriverError) as err:
        burst.execute_synchronously(request, slots)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(DriverError) as err:
        burst.execute_synchronously(request, [slots[0], slots[1], 99])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    slots[2] = burst.cache_memory(out)
    burst.execute_synchronously(request, slots)
    np.testing.assert_array_equal(out.array(np.float32), x * 4 + y)


def test_burst_binds_more_requests_than_it_keeps(prepared):
    """More distinct requests than a burst keeps bound, round robin: every execution writes where its
    request says (least recently used bindings are replaced); settings a compact message carries
    (timing, deadline, loop timeout) and ones it cannot (a bad measure value, refused) both work."""
    from gpu_driver.service.session import MAX_BURST_BINDINGS
    from gpu_driver.runtime.execution_limits import boot_time_ns

    x, y, a, b = add_pools()
    n = MAX_BURST_BINDINGS + 3
    out = SharedMemory(4 * N * n)
    burst = prepared.configure_execution_burst()
    slots = [burst.cache_memory(p) for p in (a, b, out)]
    arg = lambda pool, offset: RequestArgument(DataLocation(pool, offset, 4 * N))  # noqa: E731
    requests = [Request([arg(0, 0), arg(1, 0)], [arg(2, 4 * N * i)], []) for i in range(n)]
    for rnd in range(3):
        for i, request in enumerate(requests):
            a.write(0, (x * (rnd + i)).tobytes())
            burst.execute_synchronously(request, slots, MeasureTiming.YES if i % 2 else MeasureTiming.NO,
                                        boot_time_ns() + 10**10 if i % 3 == 0 else None, 10**9 if i % 5 == 0 else None)
            np.testing.assert_array_equal(out.array(np.float32)[N * i:N * (i + 1)], x * (rnd + i) + y)
    _, timing = burst.execute_synchronously(requests[0], slots, MeasureTiming.YES)
    assert 0 < timing.time_in_driver < 10**7
    with pytest.raises(DriverError) as err:
        burst.execute_synchronously(requests[0], slots, measure_timing=7)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(DriverError) as err:
        burst.execute_synchronously(requests[0], slots, deadline=-5)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    burst.free_memory(slots[2])  # every binding with the output slot is gone, here and on the server
    with pytest.raises(DriverError) as err:
        burst.execute_synchronously(requests[1], slots)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    slots[2] = burst.cache_memory(out)
    a.write(0, (x * 9).tobytes())
    burst.execute_synchronously(requests[1], slots)
    np.testing.assert_array_equal(out.array(np.float32)[N:2 * N], x * 9 + y)


def test_reusable_execution_computes_again_and_again(prepared):
    x, y, a, b = add_pools()
    out = SharedMemory(4 * N)
    execution = prepared.create_reusable_execution(add_request(a, b, out))
    for k in range(3):
        b.write(0, np.full(N, k, np.float32).tobytes())
        execution.compute()
        np.testing.assert_array_equal(out.array(np.float32), x + k)
    gate = SyncFence()
    fence, callback = execution.compute_fenced([gate])
    gate.signal()
    assert fence.wait(30) is FenceState.SIGNALED
    callback.get_execution_info(1)
    bad = Request(add_request(a, b, out).inputs, [RequestArgument(DataLocation(9, 0, 64))], [a, b])
    with pytest.raises(DriverError) as err:
        prepared.create_reusable_execution(bad)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_completion_callbacks_may_call_the_service(prepared):
    """A future's or a fence's done-callback runs where the notification is read; a call it makes
    reads its own reply there instead of waiting for itself."""
    x, y, a, b = add_pools()
    out, out2, out3 = SharedMemory(4 * N), SharedMemory(4 * N), SharedMemory(4 * N)
    results = []
    done = threading.Event()

    def then_execute(_):
        results.append(prepared.execute_synchronously(add_request(out, b, out2))[0][0].dimensions)
        done.set()

    gate = SyncFence()
    fence, _ = prepared.execute_fenced(add_request(a, b, out), [gate])
    fence.add_done_callback(lambda _f: prepared.execute_asynchronously(add_request(a, a, out3))
                            .add_done_callback(then_execute))
    gate.signal()
    assert done.wait(30), "a call made by a completion callback never got its reply"
    assert results == [[1, N]]
    np.testing.assert_array_equal(out2.array(np.float32), x + 2 * y)
    np.testing.assert_array_equal(out3.array(np.float32), 2 * x)


def test_many_threads_share_one_connection(prepared):
    """Threads calling at once through one connection (sync, async, fenced, and calls refused before
    they are sent) each get their own answers; nobody is left waiting."""
    errors = []

    def worker(k):
        try:
            x, y = np.full(N, k, np.float32), np.arange(N, dtype=np.float32)
            a, b = SharedMemory.from_bytes(x.tobytes()), SharedMemory.from_bytes(y.tobytes())
            for i in range(15):
                out = SharedMemory(4 * N)
                mode = (k + i) % 4
                if mode == 0:
                    prepared.execute_synchronously(add_request(a, b, out))
                elif mode == 1:
                    prepared.execute_asynchronously(add_request(a, b, out)).result(timeout=30)
                elif mode == 2:
                    assert prepared.execute_fenced(add_request(a, b, out))[0].wait(30) is FenceState.SIGNALED
                else:
                    bad = Request(add_request(a, b, out).inputs, add_request(a, b, out).outputs, [a, b, "x"])
                    with pytest.raises(DriverError):
                        prepared.execute_synchronously(bad)  # refused while the call is being built
                    continue
                np.testing.assert_array_equal(out.array(np.float32), x + y)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a call was left waiting"
    assert not errors, errors[0]
