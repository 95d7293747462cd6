"""The experimental DENSIFY (code 20000) on the reference device, behind GPU_DRIVER_EXPERIMENTAL.

Values: the AOSP test specs runtime/test/specs/experimental/densify_{1..8,bool8_1,bool8_2}.mod.py
(sparse input, metadata and expected dense output copied as data, each quantized variation with the
spec's scale and zero point), hand-worked cases (column-major order, CSR, non-square blocks walked
in a swapped order, the zero-point fill), and invalid models.  The TF Lite importer's folding of
sparse constants goes through the same routine and is checked on a hand-built SparsityParameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import gpu_driver
from gpu_driver import DriverError, ErrorStatus, ModelBuilder, OperandType as T, OperationType as O
from gpu_driver.hal.model import DataLocation, SymmPerChannelQuantParams
from gpu_driver.hal.types import OPERAND_TYPE_INFO, OperandLifeTime
from gpu_driver.ops.catalog import implemented_feature_level
from gpu_driver.validation import validate_model

INVALID = ErrorStatus.INVALID_ARGUMENT
SWITCH = "GPU_DRIVER_EXPERIMENTAL"


@pytest.fixture
def experimental(monkeypatch):
    """The switch on (validation reads it at every model validation)."""
    monkeypatch.setenv(SWITCH, "1")


@pytest.fixture
def ref():
    return gpu_driver.get_device("reference")


# ---- model building ------------------------------------------------------------------------------------------

@dataclass
class Sparse:
    """A DENSIFY instance: per level its (segments, indices) pair, None for a DENSE level."""

    values: list
    order: list
    block_map: list | None
    formats: list
    sizes: list
    pairs: list
    out_shape: list
    expected: list = field(default_factory=list)


def build(s: Sparse, t=T.TENSOR_FLOAT32, scale=0.0, zp=0, *, metadata_as_inputs=False, out_type=None,
          out_scale=None, out_zp=None, out_shape=None, extra_inputs=0, drop_inputs=0, dense_pairs_given=False,
          relaxed=False, validate=True):
    """The one-operation model of ``s`` and the feeds its inputs take (the values first)."""
    b = ModelBuilder(relax_computation_float32_to_float16=relaxed)
    feeds = []
    ins = [b.add_input(t, [len(s.values)], scale, zp)]
    feeds.append(np.asarray(s.values, OPERAND_TYPE_INFO[t].dtype))

    def vector(v):
        if v is None:
            return b.add_no_value(T.TENSOR_INT32, [])
        v = np.asarray(v, np.int32)
        if metadata_as_inputs:
            feeds.append(v)
            return b.add_input(T.TENSOR_INT32, [v.size])
        return b.add_constant(T.TENSOR_INT32, [v.size], v)

    ins += [vector(s.order), vector(s.block_map), vector(s.formats), vector(s.sizes)]
    for pair in s.pairs:
        if pair is None and dense_pairs_given:
            pair = ([0], [0])
        ins += [vector(None), vector(None)] if pair is None else [vector(pair[0]), vector(pair[1])]
    ins += [vector([0]) for _ in range(extra_inputs)]
    if drop_inputs:
        ins = ins[:-drop_inputs]
    out = b.add_operand(out_type or t, s.out_shape if out_shape is None else out_shape,
                        scale if out_scale is None else out_scale, zp if out_zp is None else out_zp)
    b.add_operation(O.DENSIFY, ins, [out]).set_outputs([out])
    return b.finish(validate=validate), feeds


def run(s: Sparse, t=T.TENSOR_FLOAT32, scale=0.0, zp=0, **kw) -> np.ndarray:
    model, feeds = build(s, t, scale, zp, **kw)
    return gpu_driver.get_device("reference").prepare_model(model).execute(feeds)[0]


def expect_invalid(fn, *args, **kwargs) -> DriverError:
    with pytest.raises(DriverError) as info:
        fn(*args, **kwargs)
    assert info.value.status == INVALID, str(info.value)
    return info.value


# ---- AOSP spec data --------------------------------------------------------------------------------------------

_SEVEN_IN = [0.0] * 210
_SEVEN_IN[0:22:7] = [11.0, 13.0, 17.0, 19.0]
_SEVEN_OUT = [0.0] * 210
_SEVEN_OUT[0:64:21] = [11.0, 13.0, 17.0, 19.0]
_EIGHT_OUT = [0.0] * 210
for _i, _v in ((22, 11.0), (51, 13.0), (80, 17.0), (129, 19.0)):
    _EIGHT_OUT[_i] = _v

AOSP = {
    "densify_1": Sparse([6.0, 0.0, 9.0, 8.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 7.0], [0, 1], None, [0, 0], [3, 4],
                        [None, None], [3, 4], [6.0, 0.0, 9.0, 8.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 7.0]),
    "densify_2": Sparse([1.0, 0.0, 0.0, 4.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 6.0],
                        [0, 1, 2, 3], [0, 1], [0, 0, 0, 0], [2, 2, 2, 2], [None] * 4, [4, 4],
                        [1.0, 0.0, 2.0, 3.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 6.0]),
    "densify_3": Sparse([1.0, 1.0, 0.0, 0.0, 2.0, 2.0, 3.0, 3.0, 0.0, 0.0, 4.0, 4.0, 5.0, 0.0, 0.0, 0.0],
                        [0, 1, 3, 2], [0, 1], [0, 1, 0, 0], [2, 4, 2, 2],
                        [None, ([0, 3, 4], [0, 1, 2, 1]), None, None], [4, 8],
                        [1.0, 0.0, 2.0, 3.0, 0.0, 4.0, 0.0, 0.0, 1.0, 0.0, 2.0, 3.0, 0.0, 4.0, 0.0, 0.0,
                         0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    "densify_4": Sparse([6.0, 9.0, 8.0, 5.0, 7.0], [0, 1, 2], None, [1, 0, 1], [3, 2, 2],
                        [([0, 2], [0, 2]), None, ([0, 1, 3, 4, 5], [0, 0, 1, 0, 1])], [3, 2, 2],
                        [6.0, 0.0, 9.0, 8.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 7.0]),
    "densify_5": Sparse([1.0, 7.0, 5.0, 2.0, 4.0, 8.0, 3.0, 9.0], [0, 2, 1], None, [1, 1, 1], [3, 4, 2],
                        [([0, 2], [0, 2]), ([0, 2, 5], [0, 2, 0, 2, 3]),
                         ([0, 2, 3, 4, 6, 8], [0, 1, 1, 1, 0, 1, 0, 1])], [3, 2, 4],
                        [1.0, 0.0, 0.0, 0.0, 7.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                         0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 3.0, 2.0, 0.0, 8.0, 9.0]),
    "densify_6": Sparse([1.0, 0.0, 0.0, 4.0, 2.0, 3.0, 0.0, 0.0], [0, 1, 2, 3], [0, 1], [0, 1, 0, 0], [2, 2, 2, 2],
                        [None, ([0, 2, 2], [0, 1]), None, None], [4, 4],
                        [1.0, 0.0, 2.0, 3.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    "densify_7": Sparse(_SEVEN_IN, [0, 1, 2, 3], [0, 1], [0, 0, 0, 0], [2, 3, 5, 7], [None] * 4, [10, 21],
                        _SEVEN_OUT),
    "densify_8": Sparse([11.0, 13.0, 17.0, 19.0], [0, 1, 2, 3], [0, 1], [0, 0, 1, 1], [2, 3, 5, 7],
                        [None, None, ([0, 1, 2, 3, 4, 4, 4], [1, 2, 3, 1]), ([0, 1, 2, 3, 4], [1, 2, 3, 3])],
                        [10, 21], _EIGHT_OUT),
}
AOSP_BOOL = {
    "densify_bool8_1": Sparse([1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1], [0, 1, 2, 3], [0, 1], [0, 0, 0, 0],
                              [2, 2, 2, 2], [None] * 4, [4, 4],
                              [1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
    "densify_bool8_2": Sparse([1, 1, 1, 1, 1, 1, 1, 1], [0, 2, 1], None, [1, 1, 1], [3, 4, 2],
                              [([0, 2], [0, 2]), ([0, 2, 5], [0, 2, 0, 2, 3]),
                               ([0, 2, 3, 4, 6, 8], [0, 1, 1, 1, 0, 1, 0, 1])], [3, 2, 4],
                              [1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1]),
}
#: each spec's quantized variations: (type, scale, zero point)
AOSP_QUANT = {
    "densify_1": [(T.TENSOR_QUANT8_SYMM, 2.0, 0), (T.TENSOR_QUANT8_ASYMM, 0.5, 4),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.5, -9), (T.TENSOR_QUANT16_SYMM, 3.0, 0),
                  (T.TENSOR_QUANT16_ASYMM, 2.0, 4)],
    "densify_2": [(T.TENSOR_QUANT8_SYMM, 7.0, 0), (T.TENSOR_QUANT8_ASYMM, 0.5, 3),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 1.5, -5), (T.TENSOR_QUANT16_SYMM, 6.0, 0),
                  (T.TENSOR_QUANT16_ASYMM, 2.0, 3)],
    "densify_3": [(T.TENSOR_QUANT8_SYMM, 7.0, 0), (T.TENSOR_QUANT8_ASYMM, 2.25, 3),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.5, -4), (T.TENSOR_QUANT16_SYMM, 3.125, 0),
                  (T.TENSOR_QUANT16_ASYMM, 6.0, 1)],
    "densify_4": [(T.TENSOR_QUANT8_SYMM, 4.375, 0), (T.TENSOR_QUANT8_ASYMM, 3.5, 5),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.0, -3), (T.TENSOR_QUANT16_SYMM, 3.25, 0),
                  (T.TENSOR_QUANT16_ASYMM, 1.625, 10)],
    "densify_5": [(T.TENSOR_QUANT8_SYMM, 3.0, 0), (T.TENSOR_QUANT8_ASYMM, 2.25, 3),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.875, -4), (T.TENSOR_QUANT16_SYMM, 3.25, 0),
                  (T.TENSOR_QUANT16_ASYMM, 6.0, 14)],
    "densify_6": [(T.TENSOR_QUANT8_SYMM, 2.125, 0), (T.TENSOR_QUANT8_ASYMM, 4.5, 2),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.5, 24), (T.TENSOR_QUANT16_SYMM, 3.0, 0),
                  (T.TENSOR_QUANT16_ASYMM, 2.3, 8)],
    "densify_7": [(T.TENSOR_QUANT8_SYMM, 2.0, 0), (T.TENSOR_QUANT8_ASYMM, 0.5, 4),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.5, -9), (T.TENSOR_QUANT16_SYMM, 3.0, 0),
                  (T.TENSOR_QUANT16_ASYMM, 2.0, 4)],
    "densify_8": [(T.TENSOR_QUANT8_SYMM, 3.0, 0), (T.TENSOR_QUANT8_ASYMM, 2.25, 3),
                  (T.TENSOR_QUANT8_ASYMM_SIGNED, 2.875, -4), (T.TENSOR_QUANT16_SYMM, 3.25, 0),
                  (T.TENSOR_QUANT16_ASYMM, 6.0, 14)],
}


def quantized(values, t, scale, zp) -> np.ndarray:
    """The test generator's conversion of real values (the same for input and expected output)."""
    lo, hi = OPERAND_TYPE_INFO[t].quant_range
    return np.clip(np.round(np.asarray(values, np.float64) / scale) + zp, lo, hi).astype(OPERAND_TYPE_INFO[t].dtype)


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("name", sorted(AOSP))
@pytest.mark.parametrize("t", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32])
def test_aosp_spec_unquantized(name, t):
    s = AOSP[name]
    r = run(s, t)
    assert r.dtype == OPERAND_TYPE_INFO[t].dtype and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), np.asarray(s.expected, r.dtype))


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("name", sorted(AOSP))
def test_aosp_spec_relaxed(name):
    s = AOSP[name]
    np.testing.assert_array_equal(run(s, relaxed=True).reshape(-1), np.asarray(s.expected, np.float32))


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("name,t,scale,zp", [(n, *q) for n in sorted(AOSP_QUANT) for q in AOSP_QUANT[n]],
                         ids=[f"{n}-{q[0].name}" for n in sorted(AOSP_QUANT) for q in AOSP_QUANT[n]])
def test_aosp_spec_quantized(name, t, scale, zp):
    s = AOSP[name]
    q = Sparse(**{**s.__dict__, "values": quantized(s.values, t, scale, zp).tolist()})
    r = run(q, t, scale, zp)
    assert r.dtype == OPERAND_TYPE_INFO[t].dtype and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), quantized(s.expected, t, scale, zp))


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("name", sorted(AOSP_BOOL))
def test_aosp_spec_bool8(name):
    s = AOSP_BOOL[name]
    r = run(s, T.TENSOR_BOOL8)
    assert r.dtype == np.bool_ and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), np.asarray(s.expected, bool))


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("name", ["densify_3", "densify_5", "densify_8"])
def test_aosp_spec_with_every_tensor_a_model_input(name, ref):
    # AOSP's "all_tensors_as_inputs" variation: the metadata arrive with the request, so the output
    # shape is decided at execution
    s = AOSP[name]
    model, feeds = build(s, metadata_as_inputs=True)
    assert ref.get_supported_operations(model) == [True]
    r = ref.prepare_model(model).execute(feeds)[0]
    np.testing.assert_array_equal(r.reshape(-1), np.asarray(s.expected, np.float32))


# ---- hand-worked cases -------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("experimental")
def test_column_major_dense_order():
    # level 0 walks dimension 1 (size 3), level 1 dimension 0 (size 2): the values fill column by column
    s = Sparse([1, 2, 3, 4, 5, 6], [1, 0], None, [0, 0], [3, 2], [None, None], [2, 3])
    np.testing.assert_array_equal(run(s), [[1, 3, 5], [2, 4, 6]])


@pytest.mark.usefixtures("experimental")
def test_csr_matrix():
    # rows dense, columns CSR: row 0 holds columns 1 and 3, row 1 nothing, row 2 column 0
    s = Sparse([10, 20, 30], [0, 1], None, [0, 1], [3, 4], [None, ([0, 2, 2, 3], [1, 3, 0])], [3, 4])
    np.testing.assert_array_equal(run(s), [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]])


@pytest.mark.usefixtures("experimental")
def test_sparse_vector():
    s = Sparse([7, 8], [0], None, [1], [5], [([0, 2], [1, 4])], [5])
    np.testing.assert_array_equal(run(s, T.TENSOR_INT32), [0, 7, 0, 0, 8])


@pytest.mark.usefixtures("experimental")
def test_non_square_blocks_walked_in_swapped_order():
    # a [2, 6] tensor in 2×3 blocks: block grid [1, 2] (its column CSR: only block column 1 stored),
    # then inside a block dimension 3 (the block's columns, 3) before dimension 2 (its rows, 2):
    # value (c, r) goes to row r, column 3 + c
    s = Sparse([1, 2, 3, 4, 5, 6], [0, 1, 3, 2], [0, 1], [0, 1, 0, 0], [1, 2, 3, 2],
               [None, ([0, 1], [1]), None, None], [2, 6])
    np.testing.assert_array_equal(run(s), [[0, 0, 0, 1, 3, 5], [0, 0, 0, 2, 4, 6]])


@pytest.mark.usefixtures("experimental")
def test_a_block_on_one_dimension_only():
    # a [2, 4] tensor with blocks of 2 along dimension 1 only: grid [2, 2] (CSR columns), block [2]
    s = Sparse([1, 2, 3, 4], [0, 1, 2], [1], [0, 1, 0], [2, 2, 2], [None, ([0, 1, 2], [1, 0]), None], [2, 4])
    np.testing.assert_array_equal(run(s), [[0, 0, 1, 2], [3, 4, 0, 0]])


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("t,zp", [(T.TENSOR_QUANT8_ASYMM, 7), (T.TENSOR_QUANT8_ASYMM_SIGNED, -5),
                                  (T.TENSOR_QUANT16_ASYMM, 300), (T.TENSOR_QUANT8_SYMM, 0),
                                  (T.TENSOR_QUANT16_SYMM, 0)])
def test_elements_not_stored_are_the_zero_point(t, zp):
    s = Sparse([1, 2], [0, 1], None, [0, 1], [2, 2], [None, ([0, 1, 2], [1, 0])], [2, 2])
    np.testing.assert_array_equal(run(s, t, 0.5, zp), [[zp, 1], [2, zp]])


@pytest.mark.usefixtures("experimental")
def test_output_of_unknown_shape_is_inferred():
    s = AOSP["densify_5"]
    r = run(s, out_shape=[0, 0, 0])
    assert r.shape == (3, 2, 4)


# ---- invalid models ----------------------------------------------------------------------------------------------

CSR = Sparse([10, 20, 30], [0, 1], None, [0, 1], [3, 4], [None, ([0, 2, 2, 3], [1, 3, 0])], [3, 4])


def _with(**changes) -> Sparse:
    return Sparse(**{**CSR.__dict__, **changes})


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("kw,words", [
    (dict(extra_inputs=2), "expected 9"),          # 11 inputs for 2 levels
    (dict(extra_inputs=1), "5 + 2"),               # an even count
    (dict(drop_inputs=2), "expected 9"),           # 7 inputs for 2 levels
    (dict(drop_inputs=4), "illegal operand count"),  # 5 inputs
    (dict(out_type=T.TENSOR_FLOAT16), "output 0"),
    (dict(out_shape=[4, 3]), "declared dimensions"),
    (dict(out_shape=[12]), "rank"),
    (dict(dense_pairs_given=True), "must be NO_VALUE"),
])
def test_invalid_operation_layout(kw, words):
    err = expect_invalid(build, CSR, **kw)
    assert words in err.message, err.message


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("changes,words", [
    (dict(sizes=[3]), "shape [2]"),                          # sizes and order of different lengths
    (dict(formats=[0, 1, 0]), "shape [2]"),
    (dict(formats=[0, 2]), "format 2"),
    (dict(order=[0, 0]), "permutation"),
    (dict(order=[1, 2]), "permutation"),
    (dict(sizes=[3, 0]), "≥ 1"),
    (dict(block_map=[0, 1]), "dense rank"),                  # k = n + ... : no dimension left
    (dict(order=[0, 1, 2], formats=[0, 1, 0], sizes=[3, 4, 2], block_map=[2],
          pairs=[None, ([0, 2, 2, 3], [1, 3, 0]), None]), "block map"),   # block of a dimension ≥ n
    (dict(pairs=[None, None]), "must be given"),             # a CSR level without its arrays
    (dict(pairs=[None, ([0, 2, 3], [1, 3, 0])]), "array segments"),      # 3 segments for 3 rows
    (dict(pairs=[None, ([1, 2, 2, 3], [1, 3, 0])]), "start at 0"),
    (dict(pairs=[None, ([0, 2, 1, 3], [1, 3, 0])]), "never decrease"),
    (dict(pairs=[None, ([0, 2, 2, 2], [1, 3, 0])]), "end at"),
    (dict(pairs=[None, ([0, 2, 2, 3], [1, 4, 0])]), "[0, 4)"),
    (dict(values=[10, 20, 30, 40]), "metadata store 3"),
])
def test_invalid_sparse_metadata(changes, words):
    err = expect_invalid(build, _with(**changes))
    assert words in err.message, err.message


@pytest.mark.usefixtures("experimental")
def test_invalid_operand_types_and_omissions():
    model, _ = build(CSR, validate=False)
    op = model.main.operations[0]
    # metadata must be TENSOR_INT32
    model.main.operands[op.inputs[3]].type = T.TENSOR_FLOAT32
    err = expect_invalid(validate_model, model)
    assert "input 3" in err.message and "TENSOR_INT32" in err.message
    # the traversal order cannot be omitted
    model, _ = build(CSR, validate=False)
    order = model.main.operands[model.main.operations[0].inputs[1]]
    order.lifetime, order.location = OperandLifeTime.NO_VALUE, DataLocation()
    err = expect_invalid(validate_model, model)
    assert "input 1" in err.message and "NO_VALUE" in err.message


@pytest.mark.usefixtures("experimental")
def test_a_per_channel_tensor_is_not_a_densify_type():
    model, _ = build(CSR, validate=False)
    for i in (0, model.main.output_indexes[0]):
        o = model.main.operands[i]
        o.type, o.extra_params = T.TENSOR_QUANT8_SYMM_PER_CHANNEL, SymmPerChannelQuantParams([1.0] * o.dimensions[0], 0)
    err = expect_invalid(validate_model, model)
    assert "TENSOR_QUANT8_SYMM_PER_CHANNEL is not supported" in err.message, err.message


@pytest.mark.usefixtures("experimental")
@pytest.mark.parametrize("t", [T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_SYMM])
def test_output_quantization_equals_the_input(t):
    err = expect_invalid(build, CSR, t, 0.5, 0, out_scale=0.25)
    assert "scale/zeroPoint" in err.message, err.message


@pytest.mark.usefixtures("experimental")
def test_bad_metadata_brought_by_the_request_fails_that_execution(ref):
    model, feeds = build(CSR, metadata_as_inputs=True)
    prepared = ref.prepare_model(model)
    np.testing.assert_array_equal(prepared.execute(feeds)[0], [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]])
    bad = list(feeds)
    bad[-1] = np.array([1, 3, 9], np.int32)  # a column index outside [0, 4)
    with pytest.raises(DriverError) as info:
        prepared.execute(bad)
    assert info.value.status == INVALID and "[0, 4)" in info.value.message


# ---- the switch ----------------------------------------------------------------------------------------------------

def test_switch_off_refuses_the_code(monkeypatch, ref):
    monkeypatch.delenv(SWITCH, raising=False)
    model, _ = build(CSR, validate=False)
    for call in (validate_model, ref.get_supported_operations, ref.prepare_model):
        err = expect_invalid(call, model)
        assert SWITCH in err.message and "DENSIFY" in err.message and "experimental" in err.message
    err = expect_invalid(build, CSR)  # ModelBuilder.finish validates
    assert SWITCH in err.message


def test_switch_is_read_at_every_validation(monkeypatch, ref):
    model, feeds = build(CSR, validate=False)
    monkeypatch.setenv(SWITCH, "0")
    expect_invalid(ref.prepare_model, model)
    monkeypatch.setenv(SWITCH, "1")
    np.testing.assert_array_equal(ref.prepare_model(model).execute(feeds)[0][0], [0, 10, 0, 20])
    monkeypatch.delenv(SWITCH)
    expect_invalid(validate_model, model)


def test_switch_changes_neither_the_feature_level_nor_other_models(monkeypatch, ref):
    monkeypatch.delenv(SWITCH, raising=False)
    off = (implemented_feature_level(), [d.get_feature_level() for d in gpu_driver.get_devices()])
    monkeypatch.setenv(SWITCH, "1")
    on = (implemented_feature_level(), [d.get_feature_level() for d in gpu_driver.get_devices()])
    assert off == on and off[0] == 7
    b = ModelBuilder()
    x = b.add_input(T.TENSOR_FLOAT32, [2])
    y = b.add_operand(T.TENSOR_FLOAT32, [2])
    b.add_operation(O.FLOOR, [x], [y]).set_outputs([y])
    assert ref.get_supported_operations(b.finish()) == [True]


@pytest.mark.usefixtures("experimental")
def test_every_device_runs_it(ref):
    # the accelerators' kernels: tests/accelerator/ops/test_densify.py
    model, _ = build(CSR)
    for device in gpu_driver.get_devices():
        assert device.get_supported_operations(model) == [True], device.name


# ---- the TF Lite importer folds sparse constants with the same routine ------------------------------------------

def _sparsity(order, block_map, levels):
    """A tflite SparsityParameters table: ``levels`` are dense sizes (int) or (segments, indices)."""
    import importlib

    import flatbuffers
    import tflite

    DM, IV, SP = (importlib.import_module(f"tflite.{m}") for m in ("DimensionMetadata", "Int32Vector",
                                                                   "SparsityParameters"))

    b = flatbuffers.Builder(256)

    def ints(start, values):
        start(b, len(values))
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    def int32_vector(values):
        vec = ints(IV.StartValuesVector, values)
        IV.Start(b)
        IV.AddValues(b, vec)
        return IV.End(b)

    metas = []
    for level in levels:
        if isinstance(level, int):
            DM.Start(b)
            DM.AddFormat(b, 0)
            DM.AddDenseSize(b, level)
        else:
            seg, idx = int32_vector(level[0]), int32_vector(level[1])
            DM.Start(b)
            DM.AddFormat(b, 1)
            DM.AddArraySegmentsType(b, tflite.SparseIndexVector.Int32Vector)
            DM.AddArraySegments(b, seg)
            DM.AddArrayIndicesType(b, tflite.SparseIndexVector.Int32Vector)
            DM.AddArrayIndices(b, idx)
        metas.append(DM.End(b))
    order_vec = ints(SP.StartTraversalOrderVector, order)
    block_vec = ints(SP.StartBlockMapVector, block_map) if block_map else None
    SP.StartDimMetadataVector(b, len(metas))
    for m in reversed(metas):
        b.PrependUOffsetTRelative(m)
    meta_vec = b.EndVector()
    SP.Start(b)
    SP.AddTraversalOrder(b, order_vec)
    if block_vec is not None:
        SP.AddBlockMap(b, block_vec)
    SP.AddDimMetadata(b, meta_vec)
    b.Finish(SP.End(b))
    return SP.SparsityParameters.GetRootAs(b.Output(), 0)


@pytest.mark.parametrize("order,block_map,levels,values,expected", [
    ([0, 1], [], [3, ([0, 2, 2, 3], [1, 3, 0])], [10, 20, 30], [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]]),
    ([0, 1, 3, 2], [0, 1], [1, ([0, 1], [1]), 3, 2], [1, 2, 3, 4, 5, 6], [[0, 0, 0, 1, 3, 5], [0, 0, 0, 2, 4, 6]]),
], ids=["csr", "swapped-blocks"])
def test_tflite_importer_densifies_sparse_constants(order, block_map, levels, values, expected):
    pytest.importorskip("tflite")
    from gpu_driver.tflite.importer import densify
    from gpu_driver.tflite.reader import Tensor

    expected = np.asarray(expected, np.float32)
    tensor = Tensor(0, "w", expected.shape, expected.shape, 0, np.asarray(values, np.float32), None,
                    _sparsity(order, block_map, levels))
    out = densify(tensor)
    assert out.shape == expected.shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)
