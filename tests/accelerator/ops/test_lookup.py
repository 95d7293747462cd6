"""EMBEDDING_LOOKUP, GATHER and HASHTABLE_LOOKUP on each accelerator device vs the reference (exact);
out-of-range runtime indices fail the execution as on the reference."""
import numpy as np
import pytest

import gpu_driver

from .harness import check_op, compare
from .models import F32, I32T, OP, OT, Q8A, Const, In, Out, i32, random_data, single_op

F16 = OT.TENSOR_FLOAT16
Q8AS = OT.TENSOR_QUANT8_ASYMM_SIGNED
ALL_TYPES = [F32, F16, I32T, Q8A, Q8AS]


def quant(vtype):
    return {Q8A: (0.5, 3), Q8AS: (0.25, -7)}.get(vtype, ())


def expect_failure(device, model, inputs):
    with pytest.raises(gpu_driver.DriverError) as err:
        device.prepare_model(model).execute(inputs)
    assert err.value.status == gpu_driver.ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("vtype", ALL_TYPES)
def test_embedding_lookup(accelerator, vtype):
    rng = np.random.default_rng(21)
    q = quant(vtype)
    check_op(accelerator, OP.EMBEDDING_LOOKUP, [Const(I32T, [2, 0, 4, 2]), In(vtype, (5, 3, 2), *q)],
             [Out(vtype, *q)], rng)


@pytest.mark.parametrize("vtype", [F32, Q8A, I32T])
def test_embedding_lookup_runtime_indices(accelerator, vtype):
    """Runtime lookups: checked by the kernel (status word); in-range executions match the reference."""
    rng = np.random.default_rng(23)
    q = quant(vtype)
    model, _ = single_op(OP.EMBEDDING_LOOKUP, [In(I32T, (4,)), In(vtype, (5, 3, 2), *q)], [Out(vtype, *q)])
    assert accelerator.get_supported_operations(model) == [True]
    values = random_data(In(vtype, (5, 3, 2), *q), rng)
    compare(accelerator, model, [np.array([4, 0, 0, 2], np.int32), values], what=f"EMBEDDING_LOOKUP {vtype.name}")
    expect_failure(accelerator, model, [np.array([4, 5, 0, 2], np.int32), values])


@pytest.mark.parametrize("vtype", ALL_TYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(accelerator, vtype, axis):
    rng = np.random.default_rng(24)
    q = quant(vtype)
    indices = [[3, 0], [1, 1], [0, 2]]
    check_op(accelerator, OP.GATHER, [In(vtype, (4, 4, 5), *q), i32(axis), Const(I32T, indices)], [Out(vtype, *q)],
             rng, what=f"{vtype.name} axis {axis}")


def test_gather_runtime_indices(accelerator):
    rng = np.random.default_rng(25)
    model, _ = single_op(OP.GATHER, [In(F32, (2, 6, 3)), i32(1), In(I32T, (2, 2))], [Out(F32)])
    assert accelerator.get_supported_operations(model) == [True]
    values = random_data(In(F32, (2, 6, 3)), rng)
    compare(accelerator, model, [values, np.array([[5, 0], [2, 5]], np.int32)], what="GATHER runtime indices")
    expect_failure(accelerator, model, [values, np.array([[5, 0], [-1, 5]], np.int32)])
    expect_failure(accelerator, model, [values, np.array([[6, 0], [1, 5]], np.int32)])


@pytest.mark.parametrize("vtype", [F32, Q8A, I32T])
def test_hashtable_lookup(accelerator, vtype):
    rng = np.random.default_rng(22)
    q = quant(vtype)
    keys = In(I32T, (6,))
    model_args = [In(I32T, (7,)), keys, In(vtype, (6, 4), *q)]
    data = [np.array([5, -3, 9, 100, 5, 0, 2], np.int32), np.array([-3, 0, 1, 5, 9, 12], np.int32),
            random_data(In(vtype, (6, 4), *q), rng)]
    check_op(accelerator, OP.HASHTABLE_LOOKUP, model_args, [Out(vtype, *q), Out(Q8A, 1.0, 0)], rng, data=data)
