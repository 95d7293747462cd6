"""IDevice::allocate: every validation rule of interface.md §6.1, on the reference and OpenCL devices."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import BufferDesc, BufferRole
from gpu_driver.hal.types import ErrorStatus, OperandType, OperationType

from .conftest import add_model

INVALID = ErrorStatus.INVALID_ARGUMENT
FAILURE = ErrorStatus.GENERAL_FAILURE


def typed_add(t: OperandType, shape=(2, 3), scale=0.0, zp=0) -> gd.Model:
    b = gd.ModelBuilder()
    a = b.add_input(t, list(shape), scale, zp)
    c = b.add_input(t, list(shape), scale, zp)
    none = b.add_scalar(OperandType.INT32, 0)
    out = b.add_operand(t, list(shape), scale, zp)
    b.add_operation(OperationType.ADD, [a, c, none], [out])
    b.set_outputs([out])
    return b.finish()


@pytest.fixture(scope="module")
def models(device):
    """Prepared models on ``device``: f32 (2,3) twice, f32 (4,3), f32 unknown dims, int32, two quant8."""
    def prepare(model):
        try:
            return device.prepare_model(model)
        except gd.DriverError:  # a type the device does not run (yet): the cases using it skip
            return None

    return {
        "f32": device.prepare_model(add_model()),
        "f32b": device.prepare_model(add_model()),
        "f32_4x3": device.prepare_model(add_model((4, 3))),
        "i32": prepare(typed_add(OperandType.TENSOR_INT32)),
        "q8_s1": prepare(typed_add(OperandType.TENSOR_QUANT8_ASYMM, scale=0.5, zp=3)),
        "q8_s2": prepare(typed_add(OperandType.TENSOR_QUANT8_ASYMM, scale=0.25, zp=3)),
        "q8_z": prepare(typed_add(OperandType.TENSOR_QUANT8_ASYMM, scale=0.5, zp=4)),
    }


def _status(device, desc, pms, ins, outs):
    with pytest.raises(gd.DriverError) as e:
        device.allocate(desc, pms, ins, outs)
    return e.value.status


def test_success_token_and_merged_dims(device, models):
    pm = models["f32"]
    buf, token = device.allocate(BufferDesc([0, 3]), [pm], [BufferRole(0, 0), BufferRole(0, 1)],
                                 [BufferRole(0, 0, 0.5)])
    buf2, token2 = device.allocate(BufferDesc([]), [pm], [], [BufferRole(0, 0)])
    assert token > 0 and token2 > 0 and token != token2
    assert buf.get_token() == token and buf.token == token
    assert buf.dimensions == (2, 3) and buf2.dimensions == (2, 3)
    assert not buf.initialized and buf.nbytes == 24
    assert device.resolve_buffer_token(token) is buf


def test_rank_and_dims_unknown_buffer(reference):
    pm = reference.prepare_model(add_model((0, 0)))
    buf, _ = reference.allocate(BufferDesc([]), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    assert buf.dimensions == (0, 0) and buf.nbytes is None
    buf, _ = reference.allocate(BufferDesc([0, 5]), [pm], [BufferRole(0, 0)], [])
    assert buf.dimensions == (0, 5)


@pytest.mark.parametrize("case", [
    "no_models", "not_a_model", "no_roles", "model_index", "input_index", "output_index",
    "probability_0", "probability_big", "probability_nan", "duplicate", "duplicate_same_model_twice",
    "type_mismatch", "scale_mismatch", "zero_point_mismatch", "desc_dims", "desc_rank", "roles_dims",
    "desc_not_uint32", "role_not_a_role", "desc_not_a_desc",
])
def test_invalid_allocations(device, models, case):
    pm = models["f32"]
    desc, pms, ins, outs = BufferDesc([]), [pm], [BufferRole(0, 0)], []
    if case == "no_models":
        pms = []
    elif case == "not_a_model":
        pms = [None]
    elif case == "no_roles":
        ins = []
    elif case == "model_index":
        ins = [BufferRole(1, 0)]
    elif case == "input_index":
        ins = [BufferRole(0, 2)]
    elif case == "output_index":
        outs = [BufferRole(0, 1)]
    elif case == "probability_0":
        ins = [BufferRole(0, 0, 0.0)]
    elif case == "probability_big":
        ins = [BufferRole(0, 0, 1.5)]
    elif case == "probability_nan":
        ins = [BufferRole(0, 0, math.nan)]
    elif case == "duplicate":
        ins = [BufferRole(0, 0), BufferRole(0, 0, 0.5)]
    elif case == "duplicate_same_model_twice":
        pms = [pm, pm]
        ins = [BufferRole(0, 0), BufferRole(1, 0)]
    elif case == "type_mismatch":
        pms = [pm, models["i32"]]
        ins = [BufferRole(0, 0), BufferRole(1, 0)]
    elif case == "scale_mismatch":
        pms = [models["q8_s1"], models["q8_s2"]]
        ins = [BufferRole(0, 0), BufferRole(1, 0)]
    elif case == "zero_point_mismatch":
        pms = [models["q8_s1"], models["q8_z"]]
        ins = [BufferRole(0, 0), BufferRole(1, 0)]
    elif case == "desc_dims":
        desc = BufferDesc([2, 4])
    elif case == "desc_rank":
        desc = BufferDesc([2, 3, 1])
    elif case == "roles_dims":
        pms = [pm, models["f32_4x3"]]
        ins = [BufferRole(0, 0)]
        outs = [BufferRole(1, 0)]
    elif case == "desc_not_uint32":
        desc = BufferDesc([-1, 3])
    elif case == "role_not_a_role":
        ins = [(0, 0)]
    elif case == "desc_not_a_desc":
        desc = [2, 3]
    if any(p is None for p in pms) and case != "not_a_model":
        pytest.skip(f"{device.name} does not run the typed model this case needs")
    assert _status(device, desc, pms, ins, outs) == INVALID


def test_distinct_models_with_same_index_are_not_duplicates(device, models):
    buf, _ = device.allocate(BufferDesc([]), [models["f32"], models["f32b"]], [BufferRole(0, 0), BufferRole(1, 0)],
                             [BufferRole(0, 0)])
    assert buf.has_role(models["f32b"], "in", 0) and not buf.has_role(models["f32b"], "out", 0)


def test_prepared_model_of_another_device(opencl, reference):
    pm = reference.prepare_model(add_model())
    assert _status(opencl, BufferDesc([]), [pm], [BufferRole(0, 0)], []) == INVALID
    pm = opencl.prepare_model(add_model())
    assert _status(reference, BufferDesc([]), [pm], [BufferRole(0, 0)], []) == INVALID


def test_too_large_is_a_general_failure(reference):
    pm = reference.prepare_model(add_model((0, 0)))
    assert _status(reference, BufferDesc([1 << 16, 1 << 16]), [pm], [BufferRole(0, 0)], []) == FAILURE


def test_scalar_buffers(reference):
    b = gd.ModelBuilder()
    a = b.add_input(OperandType.TENSOR_FLOAT32, [2])
    b.add_input(OperandType.FLOAT32)  # input 1: a scalar the operation does not read
    none = b.add_scalar(OperandType.INT32, 0)
    out = b.add_operand(OperandType.TENSOR_FLOAT32, [2])
    b.add_operation(OperationType.ADD, [a, a, none], [out])
    m = b.finish()
    pm = reference.prepare_model(m)
    assert _status(reference, BufferDesc([1]), [pm], [BufferRole(0, 1)], []) == INVALID
    buf, _ = reference.allocate(BufferDesc([]), [pm], [BufferRole(0, 1)], [])
    assert buf.dimensions == () and buf.nbytes == 4 and not buf.is_tensor
    src = gd.SharedMemory.from_bytes(np.float32(2.5).tobytes())
    with pytest.raises(gd.DriverError) as e:
        buf.copy_from(src, [1])
    assert e.value.status == INVALID and not buf.initialized
    buf.copy_from(src, [])
    dst = gd.SharedMemory(4)
    buf.copy_to(dst)
    assert dst.array(np.float32)[0] == 2.5
