"""Accelerator specialisations on the values of model inputs an operation reads (a scalar argument
or a tensor argument listed in the operation's ``value_inputs``) and on omitted optional inputs."""
import numpy as np

import gpu_driver
from gpu_driver.compiler.support import value_input_positions
from gpu_driver.hal.types import OperandType as OT, OperationType as OP


def _add_with_activation_input():
    m = gpu_driver.ModelBuilder()
    a = m.add_input(OT.TENSOR_FLOAT32, [2, 2])
    b = m.add_input(OT.TENSOR_FLOAT32, [2, 2])
    act = m.add_input(OT.INT32)
    out = m.add_operand(OT.TENSOR_FLOAT32, [2, 2])
    m.add_operation(OP.ADD, [a, b, act], [out])
    m.set_outputs([out])
    return m.finish()


def test_scalar_argument_given_as_input_is_specialised_per_value(accelerator):
    model = _add_with_activation_input()
    assert value_input_positions(model) == [2]
    assert accelerator.get_supported_operations(model) == [True]
    prepared = accelerator.prepare_model(model)
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    # fused activation NONE, then RELU (hand-worked: 2x, then max(2x, 0)), then NONE again (cached)
    np.testing.assert_array_equal(prepared.execute([x, x, 0])[0], [[-2.0, 4.0], [6.0, -8.0]])
    np.testing.assert_array_equal(prepared.execute([x, x, 1])[0], [[0.0, 4.0], [6.0, 0.0]])
    np.testing.assert_array_equal(prepared.execute([x, x, 0])[0], [[-2.0, 4.0], [6.0, -8.0]])
    assert len(prepared._specs) == 2


def test_invalid_value_fails_the_execution_not_the_driver(accelerator):
    prepared = accelerator.prepare_model(_add_with_activation_input())
    x = np.ones((2, 2), np.float32)
    try:
        prepared.execute([x, x, 7])  # not a fused activation code
    except gpu_driver.DriverError as exc:
        assert exc.status in (gpu_driver.ErrorStatus.INVALID_ARGUMENT, gpu_driver.ErrorStatus.GENERAL_FAILURE)
    else:
        raise AssertionError("fuse code 7 was accepted")
