"""Every public call answers garbage arguments with DriverError (and a HAL status), nothing else."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.hal import BufferDesc, BufferRole, Request, RequestArgument

GARBAGE = [None, "x", -1, 3.5, b"\x00" * 3, [None], {"a": 1}, object(), [[-1]], np.zeros(2)]
LEGAL_STATUSES = {ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE, ErrorStatus.DEVICE_UNAVAILABLE}


def _model():
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [4])
    act = b.add_scalar(T.INT32, 0)
    y = b.add_operand(T.TENSOR_FLOAT32, [4])
    b.add_operation(O.ADD, [x, x, act], [y]).set_outputs([y])
    return b.finish()


def _devices():
    names = ["reference"] + [d.name for d in gd.get_devices() if d.name.startswith("opencl")][:1]
    return [gd.get_device(n) for n in names]


def _only_driver_errors(call):
    try:
        call()
    except gd.DriverError as err:
        assert err.status in LEGAL_STATUSES, err
    # success is acceptable only where the argument happens to be legal (checked by callers)


@pytest.mark.parametrize("device", _devices(), ids=lambda d: d.name)
@pytest.mark.parametrize("bad", GARBAGE, ids=lambda v: type(v).__name__)
def test_device_calls_reject_garbage(device, bad):
    model = _model()
    prepared = device.prepare_model(model)
    calls = [
        lambda: device.prepare_model(bad),
        lambda: device.prepare_model(model, preference=bad),
        lambda: device.prepare_model(model, priority=bad),
        lambda: device.prepare_model(model, deadline=bad),
        lambda: device.prepare_model(model, model_cache=bad, data_cache=bad, token=bad),
        lambda: device.get_supported_operations(bad),
        lambda: device.prepare_model_from_cache(bad, bad, bad),
        lambda: device.prepare_model_from_cache([bad], [bad], b"t" * 32),
        lambda: device.allocate(bad, [prepared], [], [BufferRole(0, 0)]),
        lambda: device.allocate(BufferDesc([4]), bad, [], [BufferRole(0, 0)]),
        lambda: device.allocate(BufferDesc([4]), [prepared], bad, bad),
        lambda: device.allocate(BufferDesc([4]), [prepared], [], [BufferRole(bad, bad, bad)]),
        lambda: prepared.execute_synchronously(bad),
        lambda: prepared.execute_synchronously(Request([RequestArgument()], [RequestArgument()], [bad])),
        lambda: prepared.execute_synchronously(Request(bad, bad, bad)),
        lambda: prepared.execute([bad]),
        lambda: prepared.execute(bad),
        lambda: prepared.execute([np.ones(4, np.float32)], measure_timing=bad),
        lambda: prepared.execute([np.ones(4, np.float32)], loop_timeout_duration=bad),
    ]
    buffer, _token = device.allocate(BufferDesc([4]), [prepared], [BufferRole(0, 0)], [BufferRole(0, 0)])
    calls += [lambda: buffer.copy_to(bad), lambda: buffer.copy_from(bad), lambda: buffer.copy_from(bad, bad),
              lambda: buffer.copy_from(gd.SharedMemory(16), bad)]
    for call in calls:
        _only_driver_errors(call)
    # the device still works afterwards
    assert prepared.execute([np.ones(4, np.float32)])[0].tolist() == [2.0] * 4


@pytest.mark.parametrize("bad", GARBAGE, ids=lambda v: type(v).__name__)
def test_library_helpers_reject_garbage(bad, tmp_path):
    for call in [
        lambda: gd.get_device(bad),
        lambda: gd.SharedMemory(bad),
        lambda: gd.MmapFd(bad, 16),
        lambda: gd.MmapFd(0, bad),
        lambda: gd.HardwareBuffer(bad),
        lambda: gd.HardwareBuffer.blob(16).lock(bad),
        lambda: gd.ModelBuilder().add_input(bad, [1]),
        lambda: gd.ModelBuilder().add_constant(T.TENSOR_FLOAT32, [2], bad),
        lambda: gd.CompilationCache(tmp_path).prepare(gd.get_device("reference"), bad),
        lambda: gd.hal.serialize.unpack(bad if isinstance(bad, bytes) else b"\xc1"),
    ]:
        _only_driver_errors(call)
