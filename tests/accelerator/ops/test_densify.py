"""The experimental DENSIFY (code 20000) on each accelerator device, behind GPU_DRIVER_EXPERIMENTAL.

Expected values are data, not the reference device: the AOSP test specs
runtime/test/specs/experimental/densify_{1..8,bool8_1,bool8_2}.mod.py (carried as data by
tests/reference/test_densify.py, every type and quantized variation of the specs) and hand-worked
cases.  The sparse values are always a model input (constant values would be folded at
preparation); the metadata are constants (checked at preparation) or, as in AOSP's
"all_tensors_as_inputs" variations, arrive with the request (checked on the device).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpu_driver import DriverError, ErrorStatus, OperandType as T
from gpu_driver.hal.types import OPERAND_TYPE_INFO

from ...reference.test_densify import AOSP, AOSP_BOOL, AOSP_QUANT, CSR, SWITCH, Sparse, build, quantized

pytestmark = pytest.mark.usefixtures("experimental")

UNQUANTIZED = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32]
QUANT_CASES = [(n, *q) for n in sorted(AOSP_QUANT) for q in AOSP_QUANT[n]]


def _type_breadth(params: list[tuple], fast) -> list:
    """``params`` as pytest params, those ``fast(spec index, type index)`` rejects marked slow: the
    default selection runs every spec and every type, not every spec in every type."""
    specs = sorted({p[0] for p in params})
    types = list(dict.fromkeys(p[1] for p in params))
    return [pytest.param(*p, id="-".join(str(getattr(v, "name", v)) for v in p[:2]),
                         marks=() if fast(specs.index(p[0]), types.index(p[1])) else pytest.mark.slow)
            for p in params]


#: float32 for every spec, each other type for two of them
UNQUANTIZED_CASES = _type_breadth([(n, t) for n in sorted(AOSP) for t in UNQUANTIZED],
                                  lambda spec, t: t == 0 or spec % 4 == t)
#: each quantized type for two specs (each spec with one or two types)
QUANTIZED_CASES = _type_breadth(QUANT_CASES, lambda spec, t: (spec + t) % 4 == 0)


@pytest.fixture
def experimental(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")


def densify(device, s: Sparse, t=T.TENSOR_FLOAT32, scale=0.0, zp=0, **kw) -> np.ndarray:
    """``s`` densified on ``device``, which must report it supported."""
    model, feeds = build(s, t, scale, zp, **kw)
    assert device.get_supported_operations(model) == [True], device.name
    return device.prepare_model(model).execute(feeds)[0]


@pytest.mark.parametrize("as_inputs", [False, True], ids=["constant_metadata", "metadata_as_inputs"])
@pytest.mark.parametrize("name,t", UNQUANTIZED_CASES)
def test_aosp_spec_unquantized(accelerator, name, t, as_inputs):
    s = AOSP[name]
    r = densify(accelerator, s, t, metadata_as_inputs=as_inputs)
    assert r.dtype == OPERAND_TYPE_INFO[t].dtype and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), np.asarray(s.expected, r.dtype))


@pytest.mark.parametrize("name", sorted(AOSP))
def test_aosp_spec_relaxed(accelerator, name):
    s = AOSP[name]
    np.testing.assert_array_equal(densify(accelerator, s, relaxed=True).reshape(-1),
                                  np.asarray(s.expected, np.float32))


@pytest.mark.parametrize("as_inputs", [False, True], ids=["constant_metadata", "metadata_as_inputs"])
@pytest.mark.parametrize("name,t,scale,zp", QUANTIZED_CASES)
def test_aosp_spec_quantized(accelerator, name, t, scale, zp, as_inputs):
    s = AOSP[name]
    q = Sparse(**{**s.__dict__, "values": quantized(s.values, t, scale, zp).tolist()})
    r = densify(accelerator, q, t, scale, zp, metadata_as_inputs=as_inputs)
    assert r.dtype == OPERAND_TYPE_INFO[t].dtype and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), quantized(s.expected, t, scale, zp))


@pytest.mark.parametrize("as_inputs", [False, True], ids=["constant_metadata", "metadata_as_inputs"])
@pytest.mark.parametrize("name", sorted(AOSP_BOOL))
def test_aosp_spec_bool8(accelerator, name, as_inputs):
    s = AOSP_BOOL[name]
    r = densify(accelerator, s, T.TENSOR_BOOL8, metadata_as_inputs=as_inputs)
    assert r.dtype == np.bool_ and r.shape == tuple(s.out_shape)
    np.testing.assert_array_equal(r.reshape(-1), np.asarray(s.expected, bool))


# ---- hand-worked cases -------------------------------------------------------------------------------------------

HAND_WORKED = {
    # level 0 walks dimension 1 (size 3), level 1 dimension 0 (size 2): the values fill column by column
    "column_major": (Sparse([1, 2, 3, 4, 5, 6], [1, 0], None, [0, 0], [3, 2], [None, None], [2, 3]),
                     [[1, 3, 5], [2, 4, 6]]),
    # rows dense, columns CSR: row 0 holds columns 1 and 3, row 1 nothing, row 2 column 0
    "csr_matrix": (CSR, [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]]),
    # the same with row 0's columns listed 3 then 1 (not increasing: the kernel scans)
    "csr_unsorted": (Sparse([20, 10, 30], [0, 1], None, [0, 1], [3, 4], [None, ([0, 2, 2, 3], [3, 1, 0])], [3, 4]),
                     [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]]),
    # columns dense, rows CSR (column-major CSC): column 0 holds row 2, column 2 rows 0 and 1
    "csc_matrix": (Sparse([5, 6, 7], [1, 0], None, [0, 1], [3, 3], [None, ([0, 1, 1, 3], [2, 0, 1])], [3, 3]),
                   [[0, 0, 6], [0, 0, 7], [5, 0, 0]]),
    "sparse_vector": (Sparse([7, 8], [0], None, [1], [5], [([0, 2], [1, 4])], [5]), [0, 7, 0, 0, 8]),
    # a [2, 6] tensor in 2×3 blocks, only block column 1 stored, walked column-first inside the block
    "swapped_blocks": (Sparse([1, 2, 3, 4, 5, 6], [0, 1, 3, 2], [0, 1], [0, 1, 0, 0], [1, 2, 3, 2],
                              [None, ([0, 1], [1]), None, None], [2, 6]),
                       [[0, 0, 0, 1, 3, 5], [0, 0, 0, 2, 4, 6]]),
    # a [2, 4] tensor with blocks of 2 along dimension 1 only
    "one_dimension_blocked": (Sparse([1, 2, 3, 4], [0, 1, 2], [1], [0, 1, 0], [2, 2, 2],
                                     [None, ([0, 1, 2], [1, 0]), None], [2, 4]),
                              [[0, 0, 1, 2], [3, 4, 0, 0]]),
    # a rank-3 tensor [2, 2, 3]: dimension 0 CSR (only 1 stored), 1 dense, 2 CSR
    "rank3_two_sparse_levels": (Sparse([1, 2, 3], [0, 1, 2], None, [1, 0, 1], [2, 2, 3],
                                       [([0, 1], [1]), None, ([0, 1, 3], [2, 0, 1])], [2, 2, 3]),
                                [[[0, 0, 0], [0, 0, 0]], [[0, 0, 1], [2, 3, 0]]]),
}


@pytest.mark.parametrize("as_inputs", [False, True], ids=["constant_metadata", "metadata_as_inputs"])
@pytest.mark.parametrize("name", sorted(HAND_WORKED))
def test_hand_worked(accelerator, name, as_inputs):
    s, want = HAND_WORKED[name]
    np.testing.assert_array_equal(densify(accelerator, s, T.TENSOR_INT32, metadata_as_inputs=as_inputs), want)


@pytest.mark.parametrize("t,zp", [(T.TENSOR_QUANT8_ASYMM, 7), (T.TENSOR_QUANT8_ASYMM_SIGNED, -5),
                                  (T.TENSOR_QUANT16_ASYMM, 300), (T.TENSOR_QUANT8_SYMM, 0),
                                  (T.TENSOR_QUANT16_SYMM, 0)], ids=lambda v: getattr(v, "name", str(v)))
def test_elements_not_stored_are_the_zero_point(accelerator, t, zp):
    s = Sparse([1, 2], [0, 1], None, [0, 1], [2, 2], [None, ([0, 1, 2], [1, 0])], [2, 2])
    np.testing.assert_array_equal(densify(accelerator, s, t, 0.5, zp), [[zp, 1], [2, zp]])


def test_float16_bits_pass_unchanged(accelerator):
    # NaN, −0 and infinities are moved, not computed on
    values = np.array([np.nan, -0.0, np.inf, -np.inf], np.float16)
    s = Sparse(values.tolist(), [0, 1], None, [0, 1], [2, 3], [None, ([0, 2, 4], [0, 2, 1, 2])], [2, 3])
    r = densify(accelerator, s, T.TENSOR_FLOAT16)
    bits = r.view(np.uint16).reshape(-1)
    want = np.zeros(6, np.float16)
    want[[0, 2, 4, 5]] = values
    np.testing.assert_array_equal(bits, want.view(np.uint16))


@pytest.mark.parametrize("bad,words", [
    ((-1, np.array([1, 3, 9], np.int32)), "contradict"),            # a column index outside [0, 4)
    ((-2, np.array([0, 2, 1, 3], np.int32)), "contradict"),         # segments decrease
    ((-2, np.array([1, 2, 2, 3], np.int32)), "contradict"),         # segments do not start at 0
    ((-1, np.array([1, 3], np.int32)), "their lengths"),             # 2 indices for 3 values
    ((-2, np.array([0, 2, 3], np.int32)), "their lengths"),          # 2 rows of segments for 3 rows
])
def test_bad_metadata_brought_by_the_request_fails_that_execution(accelerator, bad, words):
    model, feeds = build(CSR, metadata_as_inputs=True)
    main = model.main
    operands = list(main.operands)
    for idx in main.input_indexes[-2:]:  # the lengths of segments and indices decided by the request
        operands[idx] = dataclasses.replace(operands[idx], dimensions=[0])
    model = dataclasses.replace(model, main=dataclasses.replace(main, operands=operands))
    prepared = accelerator.prepare_model(model)
    good = [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 0]]
    np.testing.assert_array_equal(prepared.execute(feeds)[0], good)
    position, value = bad
    broken = list(feeds)
    broken[position] = value
    with pytest.raises(DriverError) as info:
        prepared.execute(broken)
    assert info.value.status == ErrorStatus.GENERAL_FAILURE and words in info.value.message
    np.testing.assert_array_equal(prepared.execute(feeds)[0], good)  # the next execution is fine again


# ---- a block-sparse matrix encoded here from its dense form ----------------------------------------------------------

def _block_csr(dense: np.ndarray, block: tuple[int, int]) -> Sparse:
    """``dense`` [R, C] as rows of blocks dense, block columns CSR (only blocks with a non-zero
    element stored, in increasing order), each stored block row-major: the BCSR layout of TF Lite."""
    (rows, cols), (br, bc) = dense.shape, block
    grid = dense.reshape(rows // br, br, cols // bc, bc).transpose(0, 2, 1, 3)   # [Rb, Cb, br, bc]
    stored = np.any(grid != 0, axis=(2, 3))
    segments = np.concatenate([[0], np.cumsum(stored.sum(axis=1))]).tolist()
    indices = np.nonzero(stored)[1].tolist()
    return Sparse(grid[stored].reshape(-1).tolist(), [0, 1, 2, 3], [0, 1], [0, 1, 0, 0],
                  [rows // br, cols // bc, br, bc], [None, (segments, indices), None, None], [rows, cols])


@pytest.mark.parametrize("as_inputs", [False, True], ids=["constant_metadata", "metadata_as_inputs"])
def test_block_sparse_matrix_after_another_operation(accelerator, as_inputs):
    """A 48 × 40 matrix in 4 × 5 blocks, about a third of them stored; the values come from an ADD
    inside the model (DENSIFY reads an intermediate).  Expected: the dense matrix it was encoded from."""
    import gpu_driver as gd
    from gpu_driver import OperationType as O
    rng = np.random.default_rng(5)
    dense = rng.uniform(-1, 1, (48, 40)).astype(np.float32)
    keep = rng.random((12, 8)) < 0.35
    dense *= np.repeat(np.repeat(keep, 4, axis=0), 5, axis=1)
    s = _block_csr(dense, (4, 5))
    b = gd.ModelBuilder()
    raw = b.add_input(T.TENSOR_FLOAT32, [len(s.values)])
    values = b.add_operand(T.TENSOR_FLOAT32, [len(s.values)])
    b.add_operation(O.ADD, [raw, b.add_constant(T.TENSOR_FLOAT32, [1], np.array([0.5], np.float32)),
                            b.add_scalar(T.INT32, 0)], [values])
    feeds = [np.asarray(s.values, np.float32) - np.float32(0.5)]

    def vector(v):
        v = np.asarray(v, np.int32)
        if as_inputs:
            feeds.append(v)
            return b.add_input(T.TENSOR_INT32, [v.size])
        return b.add_constant(T.TENSOR_INT32, [v.size], v)

    (segments, indices) = s.pairs[1]
    args = [values, vector(s.order), vector(s.block_map), vector(s.formats), vector(s.sizes),
            b.add_no_value(T.TENSOR_INT32), b.add_no_value(T.TENSOR_INT32), vector(segments), vector(indices),
            *(b.add_no_value(T.TENSOR_INT32) for _ in range(4))]
    out = b.add_operand(T.TENSOR_FLOAT32, [48, 40])
    b.add_operation(O.DENSIFY, args, [out]).set_outputs([out])
    model = b.finish()
    assert accelerator.get_supported_operations(model) == [True, True]
    got = accelerator.prepare_model(model).execute(feeds)[0]
    np.testing.assert_allclose(got, dense, atol=1e-6)
