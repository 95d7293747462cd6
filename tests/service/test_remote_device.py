"""A device through the service answers as the local device does: queries, preparation, synchronous
and asynchronous executions, the numpy convenience, memory pools of every fd-backed kind, driver
buffers, preparation from the client's cache files, and errors."""
import os

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import DriverError, ErrorStatus, MmapFd, SharedMemory
from gpu_driver.hal.model import BufferDesc, BufferRole, DataLocation, Request, RequestArgument

from .models import add_request_model, check, four_models


def _add_request(n=16):
    x = np.arange(n, dtype=np.float32)
    y = np.linspace(-1, 1, n).astype(np.float32)
    pool_in, pool_out = SharedMemory(8 * n), SharedMemory(4 * n)
    pool_in.write(0, x.tobytes())
    pool_in.write(4 * n, y.tobytes())
    request = Request([RequestArgument(DataLocation(0, 0, 4 * n)), RequestArgument(DataLocation(0, 4 * n, 4 * n))],
                      [RequestArgument(DataLocation(1, 0, 4 * n))], [pool_in, pool_out])
    return request, x + y


def _status(fn):
    with pytest.raises(DriverError) as err:
        fn()
    return err.value.status


def test_queries_answer_as_the_local_device(device_pair):
    local, remote = device_pair
    assert isinstance(remote, gd.Device)
    assert remote.get_name() == local.name
    assert remote.get_type() == local.get_type()
    assert remote.get_version_string() == local.get_version_string()
    assert remote.get_feature_level() == local.get_feature_level()
    assert remote.get_capabilities() == local.get_capabilities()
    assert remote.get_number_of_cache_files_needed() == local.get_number_of_cache_files_needed()
    assert remote.get_status() == gd.DeviceStatus.AVAILABLE
    model = add_request_model()
    assert remote.get_supported_operations(model) == local.get_supported_operations(model) == [True]


def test_execute_synchronously_writes_the_client_pools(device_pair):
    _, remote = device_pair
    prepared = remote.prepare_model(add_request_model())
    request, expected = _add_request()
    shapes, timing = prepared.execute_synchronously(request, gd.MeasureTiming.YES)
    assert shapes[0].dimensions == [1, 16] and shapes[0].is_sufficient
    assert timing.time_in_driver != gd.UINT64_MAX
    np.testing.assert_array_equal(request.pools[1].array(np.float32), expected)
    request.pools[0].write(0, np.full(16, 10, np.float32).tobytes())  # the same pool, new values
    prepared.execute_synchronously(request)
    np.testing.assert_array_equal(request.pools[1].array(np.float32), 10 + request.pools[0].array(np.float32)[16:])


def test_the_same_code_runs_against_local_and_remote(device_pair):
    for device in device_pair:
        for model, inputs, expected in four_models():
            check(device.prepare_model(model).execute(inputs), expected)


def test_mmap_fd_and_hardware_buffer_pools(device_pair, tmp_path):
    _, remote = device_pair
    prepared = remote.prepare_model(add_request_model())
    path = tmp_path / "pool.bin"
    x, y = np.arange(16, dtype=np.float32), np.full(16, 0.5, np.float32)
    path.write_bytes(b"\0" * 4096 + x.tobytes() + y.tobytes())
    fd = os.open(path, os.O_RDWR)
    try:
        pool_in = MmapFd(fd, 128, offset=4096)
        pool_out = gd.HardwareBuffer.blob(64)
        request = Request([RequestArgument(DataLocation(0, 0, 64)), RequestArgument(DataLocation(0, 64, 64))],
                          [RequestArgument(DataLocation(1, 0, 64))], [pool_in, pool_out])
        prepared.execute_synchronously(request)
        np.testing.assert_array_equal(np.frombuffer(pool_out.read(0, 64), np.float32), x + y)
    finally:
        os.close(fd)


def test_bad_requests_are_invalid_argument(device_pair):
    _, remote = device_pair
    prepared = remote.prepare_model(add_request_model())
    request, _ = _add_request()
    bad_pool = Request(request.inputs, [RequestArgument(DataLocation(5, 0, 64))], request.pools)
    assert _status(lambda: prepared.execute_synchronously(bad_pool)) == ErrorStatus.INVALID_ARGUMENT
    too_few = Request(request.inputs[:1], request.outputs, request.pools)
    assert _status(lambda: prepared.execute_synchronously(too_few)) == ErrorStatus.INVALID_ARGUMENT
    assert _status(lambda: prepared.execute_synchronously("request")) == ErrorStatus.INVALID_ARGUMENT
    assert _status(lambda: prepared.execute([np.zeros(3)])) == ErrorStatus.INVALID_ARGUMENT
    assert _status(lambda: remote.prepare_model("model")) == ErrorStatus.INVALID_ARGUMENT
    prepared.execute_synchronously(request)  # the connection is still good


def test_output_insufficient_size_carries_the_shapes(device_pair):
    _, remote = device_pair
    b = gd.ModelBuilder()
    x, y = b.add_input(gd.OperandType.TENSOR_FLOAT32, [1, 16]), b.add_input(gd.OperandType.TENSOR_FLOAT32, [1, 16])
    o = b.add_operand(gd.OperandType.TENSOR_FLOAT32, [0, 0])  # shape known only at execution
    b.add_operation(gd.OperationType.ADD, [x, y, b.add_scalar(gd.OperandType.INT32, 0)], [o])
    prepared = remote.prepare_model(b.set_outputs([o]).finish())
    request, expected = _add_request()
    assert prepared.execute([np.arange(16, dtype=np.float32).reshape(1, 16)] * 2)[0].shape == (1, 16)  # retried
    small = Request(request.inputs, [RequestArgument(DataLocation(1, 0, 8))], request.pools)
    with pytest.raises(DriverError) as err:
        prepared.execute_synchronously(small)
    assert err.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert err.value.output_shapes[0].dimensions == [1, 16] and not err.value.output_shapes[0].is_sufficient


def test_execute_asynchronously(device_pair):
    _, remote = device_pair
    prepared = remote.prepare_model(add_request_model())
    request, expected = _add_request()
    shapes, _ = prepared.execute_asynchronously(request).result(timeout=30)
    assert shapes[0].dimensions == [1, 16]
    np.testing.assert_array_equal(request.pools[1].array(np.float32), expected)
    bad = Request(request.inputs, [RequestArgument(DataLocation(7, 0, 64))], request.pools)
    assert _status(lambda: prepared.execute_asynchronously(bad)) == ErrorStatus.INVALID_ARGUMENT  # at launch


def test_driver_buffers(device_pair):
    _, remote = device_pair
    prepared = remote.prepare_model(add_request_model())
    buffer, token = remote.allocate(BufferDesc([1, 16]), [prepared], [BufferRole(0, 0)], [BufferRole(0, 0)])
    assert buffer.get_token() == token > 0
    x = np.arange(16, dtype=np.float32)
    buffer.copy_from(SharedMemory.from_bytes(x.tobytes()), [1, 16])
    y, out = SharedMemory.from_bytes(np.ones(16, np.float32).tobytes()), SharedMemory(64)
    request = Request([RequestArgument(DataLocation(0, 0, 0)), RequestArgument(DataLocation(1, 0, 64))],
                      [RequestArgument(DataLocation(2, 0, 64))], [token, y, out])
    prepared.execute_synchronously(request)
    np.testing.assert_array_equal(out.array(np.float32), x + 1)
    back = SharedMemory(64)
    buffer.copy_to(back)
    np.testing.assert_array_equal(back.array(np.float32), x)
    assert _status(lambda: buffer.copy_to(SharedMemory(8))) == ErrorStatus.INVALID_ARGUMENT
    # another client cannot name this client's buffer
    other = gd.connect(remote.connection.path)
    try:
        theirs = other.get_device(remote.name).prepare_model(add_request_model())
        assert _status(lambda: theirs.execute_synchronously(request)) == ErrorStatus.INVALID_ARGUMENT
    finally:
        other.close()


def test_prepare_from_the_clients_cache_files(remote, tmp_path):
    devices = [d for d in remote.get_devices() if d.get_number_of_cache_files_needed() != (0, 0)]
    if not devices:
        pytest.skip("no served device caches compilations")
    device = devices[0]
    model, inputs, expected = four_models()[1]
    token = bytes(range(32))
    with open(tmp_path / "m", "w+b") as mc, open(tmp_path / "d", "w+b") as dc:
        device.prepare_model(model, model_cache=[mc], data_cache=[dc], token=token)
        assert os.path.getsize(tmp_path / "m") > 0  # the server wrote the client's file
        prepared = device.prepare_model_from_cache([mc], [dc], token)
    check(prepared.execute(inputs), expected)
    with open(tmp_path / "m", "r+b") as mc, open(tmp_path / "d", "r+b") as dc:
        assert _status(lambda: device.prepare_model_from_cache([mc], [dc], bytes(32))) == ErrorStatus.GENERAL_FAILURE


def test_no_server_is_device_unavailable(socket_dir):
    assert _status(lambda: gd.connect(socket_dir / "nobody.sock")) == ErrorStatus.DEVICE_UNAVAILABLE


def test_memory_without_a_descriptor_is_refused(device_pair):
    local, remote = device_pair
    if local.name == "reference":
        pytest.skip("the reference device's hardware buffers are host memory")
    prepared = remote.prepare_model(add_request_model())
    request, _ = _add_request()
    resident = gd.HardwareBuffer.blob(64, device=local)  # lives in the local device's memory
    on_device = Request(request.inputs, request.outputs, [request.pools[0], resident])
    with pytest.raises(DriverError) as err:
        prepared.execute_synchronously(on_device)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "file descriptor" in err.value.message


def test_default_socket_path(monkeypatch, tmp_path):
    from gpu_driver.service import default_socket_path

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_socket_path() == tmp_path / "gpu_driver.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path / "state"))
    assert default_socket_path() == tmp_path / "state" / "gpu_driver.sock"


def test_serve_command_stops_cleanly_on_sigterm(spawn_server):
    import signal

    proc, path = spawn_server(None, "--max-prepared-models", "1")
    with gd.connect(path) as conn:
        assert [d.name for d in conn.get_devices()][0] == "reference"
        kept = conn.get_device("reference").prepare_model(add_request_model())  # noqa: F841
        with pytest.raises(DriverError) as err:
            conn.get_device("reference").prepare_model(add_request_model())
        assert err.value.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    assert not path.exists()  # the socket is removed
    assert b"serving" in proc.stderr.read()  # it logs
