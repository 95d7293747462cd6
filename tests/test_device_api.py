"""Device discovery and the HAL argument checks every device shares (reference device)."""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.hal import (UINT64_MAX, DataLocation, DeviceType, MeasureTiming, Request, RequestArgument,
                            boot_time_ns)
from gpu_driver.memory import SharedMemory
from gpu_driver.ops.catalog import implemented_feature_level


def add_model(n=4):
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [n])
    y = b.add_input(T.TENSOR_FLOAT32, [n])
    act = b.add_scalar(T.INT32, 0)
    z = b.add_operand(T.TENSOR_FLOAT32, [n])
    b.add_operation(O.ADD, [x, y, act], [z]).set_outputs([z])
    return b.finish()


@pytest.fixture(scope="module")
def ref():
    return gd.get_device("reference")


def test_reference_device_is_listed_and_named(ref):
    assert "reference" in [d.name for d in gd.get_devices()]
    assert ref.get_type() == DeviceType.CPU
    assert ref.get_version_string().startswith("gpu_driver-")
    assert ref.get_feature_level() == implemented_feature_level() >= 4
    caps = ref.get_capabilities()
    types = [p.type for p in caps.operand_performance]
    assert types == sorted(types) and len(set(types)) == len(types)
    assert T.SUBGRAPH not in types
    assert all(p.info.exec_time > 0 and p.info.power_usage > 0 for p in caps.operand_performance)


def test_unknown_device_name():
    with pytest.raises(gd.DriverError) as err:
        gd.get_device("tpu:7")
    assert err.value.status == ErrorStatus.DEVICE_UNAVAILABLE
    with pytest.raises(gd.DriverError) as err:
        gd.get_device(3)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("kwargs, status", [
    ({"preference": 7}, ErrorStatus.INVALID_ARGUMENT),
    ({"priority": -1}, ErrorStatus.INVALID_ARGUMENT),
    ({"deadline": -5}, ErrorStatus.INVALID_ARGUMENT),
    ({"deadline": "soon"}, ErrorStatus.INVALID_ARGUMENT),
    ({"deadline": 1}, ErrorStatus.MISSED_DEADLINE_PERSISTENT),  # 1 ns after boot: long gone
    ({"token": b"short", "model_cache": [0]}, ErrorStatus.INVALID_ARGUMENT),
])
def test_prepare_argument_checks(ref, kwargs, status):
    with pytest.raises(gd.DriverError) as err:
        ref.prepare_model(add_model(), **kwargs)
    assert err.value.status == status


def _request(n=4, out_len=None):
    pool = SharedMemory(3 * 4 * n)
    pool.write(0, np.arange(n, dtype=np.float32).tobytes())
    pool.write(4 * n, np.full(n, 10, dtype=np.float32).tobytes())
    args_in = [RequestArgument(DataLocation(0, 0, 4 * n)), RequestArgument(DataLocation(0, 4 * n, 4 * n))]
    out = RequestArgument(DataLocation(0, 8 * n, 4 * n if out_len is None else out_len))
    return Request(args_in, [out], [pool]), pool


def test_execute_synchronously_hal_level(ref):
    pm = ref.prepare_model(add_model())
    request, pool = _request()
    shapes, timing = pm.execute_synchronously(request)
    assert np.frombuffer(pool.read(32, 16), np.float32).tolist() == [10.0, 11.0, 12.0, 13.0]
    assert timing.time_on_device == UINT64_MAX and timing.time_in_driver == UINT64_MAX
    shapes, timing = pm.execute_synchronously(request, MeasureTiming.YES)
    assert timing.time_in_driver != UINT64_MAX
    assert timing.time_on_device == UINT64_MAX or timing.time_on_device <= timing.time_in_driver


def test_execution_argument_checks(ref):
    pm = ref.prepare_model(add_model())
    request, _ = _request()
    for kwargs, status in [({"measure_timing": 3}, ErrorStatus.INVALID_ARGUMENT),
                           ({"deadline": -1}, ErrorStatus.INVALID_ARGUMENT),
                           ({"loop_timeout_duration": 16_000_000_000}, ErrorStatus.INVALID_ARGUMENT),
                           ({"loop_timeout_duration": -1}, ErrorStatus.INVALID_ARGUMENT),
                           ({"deadline": 1}, ErrorStatus.MISSED_DEADLINE_PERSISTENT)]:
        with pytest.raises(gd.DriverError) as err:
            pm.execute_synchronously(request, **kwargs)
        assert err.value.status == status, kwargs
    # a deadline in the future is fine
    pm.execute_synchronously(request, deadline=boot_time_ns() + 10_000_000_000)


def test_execute_convenience_converts_and_checks(ref):
    pm = ref.prepare_model(add_model(3))
    out, = pm.execute([[1, 2, 3], np.array([0.5, 0.5, 0.5])])
    assert out.dtype == np.float32 and out.tolist() == [1.5, 2.5, 3.5]
    with pytest.raises(gd.DriverError) as err:
        pm.execute([[1, 2, 3]])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(gd.DriverError):
        pm.execute([["a", "b", "c"], [1, 2, 3]])


def test_driver_error_carries_status_and_message():
    e = gd.DriverError(ErrorStatus.GENERAL_FAILURE, "boom")
    assert e.status == ErrorStatus.GENERAL_FAILURE and "boom" in str(e) and e.output_shapes == []


def test_execute_refuses_integer_inputs_that_would_wrap(ref):
    b = gd.ModelBuilder()
    x = b.add_input(T.TENSOR_INT32, [2])
    act = b.add_scalar(T.INT32, 0)
    y = b.add_operand(T.TENSOR_INT32, [2])
    b.add_operation(O.ADD, [x, x, act], [y]).set_outputs([y])
    pm = ref.prepare_model(b.finish())
    assert pm.execute([np.array([1, 2], np.int64)])[0].tolist() == [2, 4]   # int64 that fits: fine
    with pytest.raises(gd.DriverError) as err:
        pm.execute([np.array([2 ** 31, 0], np.int64)])                        # would wrap to -2^31
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def _if_model(else_op):
    """y = IF cond THEN x + 1 ELSE else_op(x), on a float32 [2] tensor."""
    then_b = gd.ModelBuilder()
    a = then_b.add_input(T.TENSOR_FLOAT32, [2])
    one = then_b.add_constant(T.TENSOR_FLOAT32, [2], [1.0, 1.0])
    r = then_b.add_operand(T.TENSOR_FLOAT32, [2])
    then_b.add_operation(O.ADD, [a, one, then_b.add_scalar(T.INT32, 0)], [r]).set_outputs([r])
    else_b = gd.ModelBuilder()
    a2 = else_b.add_input(T.TENSOR_FLOAT32, [2])
    r2 = else_b.add_operand(T.TENSOR_FLOAT32, [2])
    else_b.add_operation(else_op, [a2], [r2]).set_outputs([r2])
    b = gd.ModelBuilder()
    cond, x = b.add_input(T.TENSOR_BOOL8, [1]), b.add_input(T.TENSOR_FLOAT32, [2])
    y = b.add_operand(T.TENSOR_FLOAT32, [2])
    b.add_operation(O.IF, [cond, b.add_subgraph(then_b), b.add_subgraph(else_b), x], [y]).set_outputs([y])
    return b.finish()


def test_control_flow_support_follows_the_branches(ref):
    # the reference runs IF when it runs every operation of both branches; FLOOR has a definition,
    # OEM_OPERATION (vendor-defined) has none in this driver
    assert ref.get_supported_operations(_if_model(O.FLOOR)) == [True]
    assert ref.get_supported_operations(_if_model(O.OEM_OPERATION)) == [False]
    with pytest.raises(gd.DriverError) as err:
        ref.prepare_model(_if_model(O.OEM_OPERATION))
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT and "IF" in err.value.message


def test_accelerators_run_control_flow_when_they_run_the_branches():
    accelerators = [d for d in gd.get_devices() if d.name != "reference"]
    if not accelerators:
        pytest.skip("no accelerator device")
    for device in accelerators:
        assert device.get_supported_operations(_if_model(O.FLOOR)) == [True], device.name
        assert device.get_supported_operations(_if_model(O.OEM_OPERATION)) == [False], device.name
