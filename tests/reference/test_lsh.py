"""LSH_PROJECTION (15) and FarmHash Fingerprint64 on the reference device.

Expected values: AOSP conformance specs (lsh_projection, lsh_projection_2, lsh_projection_float16)
and LSHProjectionTest.cpp; FarmHash vectors and the hand-worked cases' hashes were produced by the
FarmHash C++ reference (pyfarmhash bindings), not by the code under test.
"""
import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver import ErrorStatus, OperandType as T, OperationType as O
from gpu_driver.errors import DriverError
from gpu_driver.farmhash import fingerprint64, fingerprint64_signed

F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16


@pytest.mark.parametrize("data,expected", [
    (b"", 0x9AE16A3B2F90404F),
    (b"a", 0xB3454265B6DF75E3),
    (b"abc", 0x24A5B3A074E7F369),
    (b"abcd", 0x1A5502DE4A1F8101),
    (b"hello world!", 0x3F87E91E111FCF64),                                  # 8..16 bytes
    (b"0123456789abcdefXYZ", 0xBC0429DAA98222FA),                           # 17..32
    (b"The quick brown fox jumps over the lazy dog", 0xABBE83F33B1B5134),   # 33..64
    (bytes(range(100)), 0x3CFF0F886D8D6195),                                # > 64, one block + tail
    (bytes(range(256)) * 2, 0xD5B849BBE69CBBE2),                            # 8 blocks
])
def test_fingerprint64_vectors(data, expected):
    assert fingerprint64(data) == expected


def test_fingerprint64_signed():
    assert fingerprint64_signed(b"") == 0x9AE16A3B2F90404F - (1 << 64)
    assert fingerprint64_signed(b"hello world!") == 0x3F87E91E111FCF64


def lsh_model(hash_type, hash_values, hash_shape, input_type, input_shape, lsh_type, weight="none",
              weight_values=None, input_scale=0.0):
    """weight: "none" (NO_VALUE), "const", or "input" (a model input, maybe omitted at execution)."""
    b = gd.ModelBuilder()
    h = b.add_constant(hash_type, hash_shape, hash_values)
    x = b.add_input(input_type, input_shape, scale=input_scale)
    if weight == "none":
        w = b.add_no_value(hash_type, [input_shape[0]])
    elif weight == "const":
        w = b.add_constant(hash_type, [len(weight_values)], weight_values)
    else:
        w = b.add_input(hash_type, [input_shape[0]])
    t = b.add_scalar(T.INT32, lsh_type)
    n_out = hash_shape[0] * hash_shape[1] if lsh_type == 2 else hash_shape[0]
    out = b.add_operand(T.TENSOR_INT32, [n_out])
    b.add_operation(O.LSH_PROJECTION, [h, x, w, t], [out]).set_outputs([out])
    return gd.get_device("reference").prepare_model(b.finish())


HASH = [0.123, 0.456, -0.321, -0.654, 1.234, 5.678, -4.321, -8.765]
LOOKUP = np.array([12345, 54321, 67890, 9876, -12345678, -87654321], np.int32).reshape(3, 2)
WEIGHT = [0.12, 0.34, 0.56]


@pytest.mark.parametrize("lsh_type,expected", [(1, [1, 2, 2, 0]), (3, [1, 6, 10, 12])])
def test_sparse_conformance(lsh_type, expected):
    # lsh_projection.mod.py (SPARSE_DEPRECATED) and LSHProjectionTest SparseWithTwoInputs (SPARSE)
    pm = lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], lsh_type)
    (out,) = pm.execute([LOOKUP])
    assert out.dtype == np.int32 and out.tolist() == expected


def test_sparse_with_weight_model_input_omitted_at_execution():
    # lsh_projection.mod.py declares the weight as a model input and leaves it unset in the request
    pm = lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 1, weight="input")
    (out,) = pm.execute([LOOKUP, None])
    assert out.tolist() == [1, 2, 2, 0]
    with pytest.raises(DriverError) as err:                # given at execution: SPARSE forbids it
        pm.execute([LOOKUP, np.array(WEIGHT, np.float32)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("weight", ["const", "input"])
def test_dense_float32(weight):
    # LSHProjectionTest DenseWithThreeInputs
    pm = lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 2, weight=weight, weight_values=WEIGHT)
    ins = [LOOKUP] + ([np.array(WEIGHT, np.float32)] if weight == "input" else [])
    (out,) = pm.execute(ins)
    assert out.tolist() == [1, 1, 1, 0, 1, 1, 1, 0]


def test_dense_float16():
    # lsh_projection_float16.mod.py: the f16 hash seeds round differently, so different bits
    pm = lsh_model(F16, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 2, weight="input")
    (out,) = pm.execute([LOOKUP, np.array(WEIGHT, np.float16)])
    assert out.tolist() == [1, 1, 1, 1, 1, 0, 0, 0]


# Hand-worked: seeds 1.0, −2.5, 0.75; items hashed as 4 seed bytes ‖ item bytes.  int64 fingerprints
# (FarmHash reference) of the two uint8 items [1, 2, 3] and [250, 0, 7]:
#   seed 1.0 : −933359750798636440,   7360126903537898197  → Σ > 0 → 1;  0.5·a − 1.5·b < 0 → 0
#   seed −2.5: −1251030957012201653, −5640515268572684221  → Σ < 0 → 0;  0.5·a − 1.5·b > 0 → 1
#   seed 0.75: −7436904013766468262,  6983706129806408313  → Σ < 0 → 0;  0.5·a − 1.5·b < 0 → 0
# hash row 0 = (1.0, −2.5, 0.75), row 1 = (0.75, 1.0, −2.5)
#   unweighted bits: row 0 = 100b = 4, row 1 = 010b = 2;  SPARSE adds i·2^3: [4, 10]
#   weighted (DENSE, w = [0.5, −1.5]): row 0 = (0, 1, 0), row 1 = (0, 0, 1)
Q8_ITEMS = np.array([[1, 2, 3], [250, 0, 7]], np.uint8)
HAND_HASH = [1.0, -2.5, 0.75, 0.75, 1.0, -2.5]


@pytest.mark.parametrize("lsh_type,expected", [(1, [4, 2]), (3, [4, 10])])
def test_hand_worked_quant8_items_sparse(lsh_type, expected):
    pm = lsh_model(F32, HAND_HASH, [2, 3], T.TENSOR_QUANT8_ASYMM, [2, 3], lsh_type, input_scale=1.0)
    assert pm.execute([Q8_ITEMS])[0].tolist() == expected


def test_hand_worked_quant8_items_dense():
    pm = lsh_model(F32, HAND_HASH, [2, 3], T.TENSOR_QUANT8_ASYMM, [2, 3], 2, weight="const",
                   weight_values=[0.5, -1.5], input_scale=1.0)
    assert pm.execute([Q8_ITEMS])[0].tolist() == [0, 1, 0, 0, 0, 1]


def test_hand_worked_float16_items_rank3():
    # items of an f16 [2, 1, 2] input are 4 bytes each: [0.5, −1.0] and [2.0, 3.0]; fingerprints:
    #   seed 1.0 : −8061844889739838377, −2258098063985780496  → unweighted 0, weighted 0
    #   seed −2.5:  3226909180920990409, −7746166998821330418  → unweighted 0, weighted 1
    #   seed 0.75: −8846842136876321696,  5377514304504671262  → unweighted 0, weighted 0
    items = np.array([[[0.5, -1.0]], [[2.0, 3.0]]], np.float16)
    pm = lsh_model(F16, HAND_HASH[:3], [1, 3], F16, [2, 1, 2], 2, weight="const", weight_values=[0.5, -1.5])
    assert pm.execute([items])[0].tolist() == [0, 1, 0]
    pm = lsh_model(F16, HAND_HASH[:3], [1, 3], F16, [2, 1, 2], 3)
    assert pm.execute([items])[0].tolist() == [0]


def _expect_invalid(fn):
    with pytest.raises(DriverError) as err:
        fn()
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_presence_rules():
    # DENSE requires the weight; SPARSE kinds require it omitted (operations.md App. B)
    _expect_invalid(lambda: lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 2))
    _expect_invalid(lambda: lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 1, "const", WEIGHT))
    _expect_invalid(lambda: lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 3, "const", WEIGHT))
    pm = lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 2, weight="input")
    _expect_invalid(lambda: pm.execute([LOOKUP, None]))


@pytest.mark.parametrize("lsh_type", [0, 4, -1])
def test_bad_type(lsh_type):
    _expect_invalid(lambda: lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], lsh_type))


def test_bad_shapes():
    # more than 32 bits per hash
    _expect_invalid(lambda: lsh_model(F32, [0.5] * 33, [1, 33], T.TENSOR_INT32, [3, 2], 1))
    # weight length must equal the number of items
    _expect_invalid(lambda: lsh_model(F32, HASH, [4, 2], T.TENSOR_INT32, [3, 2], 2, "const", [0.1, 0.2]))
    # SPARSE: num_bits + ceil(log2(num_hash)) <= 32
    _expect_invalid(lambda: lsh_model(F32, [0.5] * 96, [3, 32], T.TENSOR_INT32, [3, 2], 3))


def test_prepare_time_shapes_with_undecided_weight():
    # a model-input weight may still be omitted: the output shape is known at prepare anyway
    from gpu_driver.graph import build_graph
    b = gd.ModelBuilder()
    ins = [b.add_constant(F32, [4, 2], HASH), b.add_input(T.TENSOR_INT32, [3, 2]), b.add_input(F32, [3]),
           b.add_scalar(T.INT32, 3)]
    out = b.add_operand(T.TENSOR_INT32, [0])
    b.add_operation(O.LSH_PROJECTION, ins, [out]).set_outputs([out])
    model = b.finish()
    params = build_graph(model, model.main).nodes[0].params
    assert params.output_shapes == [(4,)] and params.has_weight is None
    (res,) = gd.get_device("reference").prepare_model(model).execute([LOOKUP, None])
    assert res.tolist() == [1, 6, 10, 12]
