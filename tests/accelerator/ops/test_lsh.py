"""LSH_PROJECTION on each accelerator device with fp64 vs the reference device: exact equality of the
I32 outputs.

Covers every LSH type (DENSE with weights, the sparse kinds without), item types F32/F16/I32/Q8A,
item sizes that put the key (4 seed bytes ‖ item bytes) in every FarmHash length branch (0–16,
17–32, 33–64, >64 and the boundaries between them), several num_hash/num_bits, constants and model
inputs, F16 hashes; plus a direct probe of the kernel's Fingerprint64 (compiled and run by the
device's backend) against gpu_driver.reference.farmhash for every length 0..MAX_PROBE, and cases that
would catch FMA contraction or denormal flushing in the weighted double sum.
"""
import string

import numpy as np
import pytest

import gpu_driver
from gpu_driver.compiler.codegen import instance_source
from gpu_driver.compiler.ir import KernelInstance
from gpu_driver.farmhash import fingerprint64

from .harness import compare
from .models import F32, I32T, OP, OT, Q8A, Const, In, NoValue, Out, i32, single_op

F16 = OT.TENSOR_FLOAT16
SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3
QPARAMS = {Q8A: (0.5, 3)}

# item shapes per item type, chosen for their item bytes → key lengths (4 + bytes)
ITEM_SHAPES = {
    Q8A: [(3,), (2, 8), (3, 13), (2, 20), (3, 40), (2, 100), (2, 3, 100)],        # keys 5, 12, 17, 24, 44, 104, 304
    F32: [(3,), (3, 5), (2, 10), (2, 75)],                                        # keys 8, 24, 44, 304
    I32T: [(2, 3), (3, 5), (2, 10), (2, 5, 15)],                                  # keys 16, 24, 44, 304
    F16: [(3,), (3, 10), (2, 20), (2, 50)],                                       # keys 6, 24, 44, 104
}
# branch boundaries: keys 16|17, 32|33, 64|65, 128|129 (Q8A items of 12, 13, 28, 29, 60, 61, 124, 125 bytes)
BOUNDARY_SHAPES = [(2, b) for b in (12, 13, 28, 29, 60, 61, 124, 125)]
HASH_SHAPES = [(4, 5), (1, 32), (7, 16), (2, 31), (3, 1), (5, 12)]  # valid for SPARSE too


@pytest.fixture
def device(accelerator):
    """An accelerator device with double arithmetic (the LSH kernel's weighted sum is a double)."""
    if "fp64" not in accelerator.backend.features:
        pytest.skip(f"{accelerator.name} has no fp64")
    return accelerator


def _item_data(t, shape, rng):
    if t == Q8A:
        return rng.integers(0, 256, shape).astype(np.uint8)
    if t == I32T:
        return rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    return rng.normal(size=shape).astype(np.float16 if t == F16 else np.float32)


def _lsh_model(lsh_type, htype, cases, rng):
    """One model with an LSH_PROJECTION per case (item type, item shape, hash shape); alternates
    constants and model inputs.  Returns (model, input data)."""
    b = gpu_driver.ModelBuilder()
    data, outs = [], []
    hdtype = np.float16 if htype == F16 else np.float32
    for n, (itype, ishape, hshape) in enumerate(cases):
        hv = rng.normal(size=hshape).astype(hdtype)
        xv = _item_data(itype, ishape, rng)
        q = QPARAMS.get(itype, (0.0, 0))
        if n % 2 == 0:
            h = b.add_constant(htype, hshape, hv)
            x = b.add_input(itype, ishape, *q)
            data.append(xv)
        else:
            h = b.add_input(htype, hshape)
            data.append(hv)
            x = b.add_constant(itype, ishape, xv, *q)
        if lsh_type == DENSE:
            wv = rng.normal(size=(ishape[0],)).astype(hdtype)
            if n % 3 == 1:
                w = b.add_constant(htype, wv.shape, wv)
            else:
                w = b.add_input(htype, wv.shape)
                data.append(wv)
        else:
            w = b.add_no_value(htype)
        y = b.add_operand(OT.TENSOR_INT32)
        b.add_operation(OP.LSH_PROJECTION, [h, x, w, b.add_scalar(OT.INT32, lsh_type)], [y])
        outs.append(y)
    b.set_outputs(outs)
    return b.finish(), data


def _check(device, lsh_type, htype, cases, seed):
    rng = np.random.default_rng(seed)
    model, data = _lsh_model(lsh_type, htype, cases, rng)
    support = device.get_supported_operations(model)
    assert all(support), support
    act, exp = compare(device, model, data, what=f"LSH type {lsh_type}")
    for a, e in zip(act, exp):
        assert a.dtype == np.int32 and np.array_equal(a, e)
    return act, exp


@pytest.mark.parametrize("lsh_type", [SPARSE_DEPRECATED, DENSE, SPARSE])
@pytest.mark.parametrize("itype", [F32, I32T, Q8A, F16], ids=["f32", "i32", "q8a", "f16"])
def test_lsh_projection(device, lsh_type, itype):
    cases = [(itype, s, HASH_SHAPES[n % len(HASH_SHAPES)]) for n, s in enumerate(ITEM_SHAPES[itype])]
    _, exp = _check(device, lsh_type, F32, cases, seed=100 + 10 * lsh_type + list(ITEM_SHAPES).index(itype))
    if lsh_type == DENSE:  # the data must exercise both outcomes
        allbits = np.concatenate(exp)
        assert 0 < allbits.sum() < allbits.size


@pytest.mark.parametrize("lsh_type", [SPARSE_DEPRECATED, DENSE, SPARSE])
def test_lsh_projection_branch_boundaries(device, lsh_type):
    cases = [(Q8A, s, HASH_SHAPES[n % len(HASH_SHAPES)]) for n, s in enumerate(BOUNDARY_SHAPES)]
    _check(device, lsh_type, F32, cases, seed=200 + lsh_type)


@pytest.mark.parametrize("lsh_type", [SPARSE_DEPRECATED, DENSE, SPARSE])
def test_lsh_projection_f16_hash(device, lsh_type):
    cases = [(t, ITEM_SHAPES[t][k], HASH_SHAPES[n]) for n, (t, k) in
             enumerate([(Q8A, 2), (F16, 3), (F32, 3), (I32T, 0)])]
    _check(device, lsh_type, F16, cases, seed=300 + lsh_type)


def test_lsh_projection_largest_item(device):
    """Items of MAX_ITEM_BYTES (1024) run; one byte more is refused."""
    _check(device, SPARSE, F32, [(Q8A, (2, 1024), (2, 7)), (F32, (2, 16, 16), (3, 4))], seed=5)
    model, _ = single_op(OP.LSH_PROJECTION, [In(F32, (2, 3)), In(Q8A, (2, 1025), 0.5, 3), NoValue(), i32(SPARSE)],
                         [Out(I32T)])
    assert device.get_supported_operations(model) == [False]


def test_lsh_projection_undecided_weights(device):
    # sparse projection with a weight whose presence is only known at execution: runs when the request
    # omits it (the reference's answer), fails that execution like the reference when it is given
    model, _ = single_op(OP.LSH_PROJECTION, [In(F32, (2, 3)), In(F32, (4, 2)), In(F32, (4,)), i32(SPARSE)],
                         [Out(I32T)])
    assert device.get_supported_operations(model) == [True]
    rng = np.random.default_rng(9)
    hashes, items = rng.uniform(-1, 1, (2, 3)).astype(np.float32), rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    want = gpu_driver.get_device("reference").prepare_model(model).execute([hashes, items, None])
    prepared = device.prepare_model(model)
    np.testing.assert_array_equal(prepared.execute([hashes, items, None])[0], want[0])
    with pytest.raises(gpu_driver.DriverError) as err:
        prepared.execute([hashes, items, np.ones(4, np.float32)])
    assert err.value.status == gpu_driver.ErrorStatus.INVALID_ARGUMENT
    # DENSE with a model-input weight is supported (it must be given at execution)
    model, _ = single_op(OP.LSH_PROJECTION, [In(F32, (2, 3)), In(F32, (4, 2)), In(F32, (4,)), i32(DENSE)],
                         [Out(I32T)])
    assert device.get_supported_operations(model) == [True]


def test_weighted_sum_is_not_fused(device):
    """Two identical items weighted w and -w: the reference's sum w·h + (-w·h) is exactly 0 (bit 0);
    an FMA-contracted sum would leave the rounding error of w·h and set about half the bits."""
    rng = np.random.default_rng(7)
    item = rng.integers(-2**31, 2**31, (1, 9), dtype=np.int64).astype(np.int32)
    model, _ = single_op(OP.LSH_PROJECTION, [In(F32, (16, 32)), Const(I32T, np.concatenate([item, item])),
                                             In(F32, (2,)), i32(DENSE)], [Out(I32T)])
    wv = np.float32(rng.uniform(0.3, 3.0))
    data = [rng.normal(size=(16, 32)).astype(np.float32), np.array([wv, -wv], np.float32)]
    act, exp = compare(device, model, data, what="cancellation")
    assert not exp[0].any() and np.array_equal(act[0], exp[0])


def test_special_seeds_and_weights(device):
    """Seeds -0, ±inf, NaNs with payloads, subnormals (F32 and F16 bit patterns reach the key exactly);
    subnormal F32 weights (a kernel flushing them would score 0, i.e. all bits 0)."""
    rng = np.random.default_rng(9)
    f32_bits = np.array([0x80000000, 0x00000000, 0x7f800000, 0xff800000, 0x7fc00001, 0x7f800123, 0xffc12345,
                         0x00000001, 0x807fffff, 0x00400000, 0x3f800000, 0xbf800000], np.uint32)
    f16_bits = np.array([0x8000, 0x0000, 0x7c00, 0xfc00, 0x7e01, 0x7c01, 0xfd55, 0x0001, 0x83ff, 0x0200,
                         0x3c00, 0xbc00], np.uint16)
    for htype, hv in ((F32, f32_bits.view(np.float32)), (F16, f16_bits.view(np.float16))):
        for lsh_type in (SPARSE_DEPRECATED, DENSE):
            w = In(htype, (3,)) if lsh_type == DENSE else NoValue(htype)
            model, _ = single_op(OP.LSH_PROJECTION, [In(htype, (4, 3)), In(Q8A, (3, 7), 0.5, 3), w, i32(lsh_type)],
                                 [Out(I32T)])
            assert device.get_supported_operations(model) == [True]
            for draw in range(6):  # a wrong seed flips its bit with probability 1/2 per draw
                data = [hv.reshape(4, 3), rng.integers(0, 256, (3, 7)).astype(np.uint8)]
                if lsh_type == DENSE:
                    data.append(rng.normal(size=3).astype(hv.dtype))
                compare(device, model, data, what=f"special seeds {htype.name} type {lsh_type} draw {draw}")
    # subnormal weights: the sign of a tiny weighted sum
    model, _ = single_op(OP.LSH_PROJECTION, [In(F32, (8, 32)), In(F32, (3, 5)), In(F32, (3,)), i32(DENSE)],
                         [Out(I32T)])
    wv = (rng.integers(1, 1 << 23, 3).astype(np.uint32) | (np.array([0, 1, 0], np.uint32) << 31)).view(np.float32)
    data = [rng.normal(size=(8, 32)).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32), wv]
    _, exp = compare(device, model, data, what="subnormal weights")
    assert 0 < exp[0].sum() < exp[0].size


# ---- Fingerprint64 itself ---------------------------------------------------------------------------

MAX_PROBE = 300

_PROBE = """
KERNEL void lsh_probe(GLOBAL const uchar* RESTRICT data, GLOBAL uint64* RESTRICT out) {
    const int n = GLOBAL_ID(0);
    const int off = GLOBAL_ID(1);
    if (n > ${MAX}) return;
    uchar key[${MAX} + 1];
    for (int b = 0; b < n; ++b) key[b] = data[off + b];
    out[off * (${MAX} + 1) + n] = gd_lsh_fingerprint64(key, n);
}
"""


def test_fingerprint64_every_length(device):
    """The kernel's Fingerprint64 equals farmhash.fingerprint64 for every length 0..MAX_PROBE (all four
    length paths, 1–5 iterations of the 64-byte loop), over several byte offsets of random data."""
    backend = device.backend
    defines = {k: 1 for k in ("STAGE", "LSH_TYPE", "NUM_HASH", "NUM_BITS", "NUM_ITEMS", "ITEM_BYTES", "KEY_LEN",
                              "HAS_W", "HASH_F16")}
    defines.update(TH="float", TX="uchar")
    lsh = instance_source(KernelInstance("lsh.cl", defines, [], [], (1,)), "lsh_pack_unused")
    src = backend.compiler.prelude + "\n" + lsh + string.Template(_PROBE).substitute(MAX=MAX_PROBE)
    allocator, launcher = backend.allocator, backend.launcher
    program = launcher.load(backend.compiler.compile(src), ["lsh_probe"])
    rng = np.random.default_rng(11)
    offsets = 3
    data = rng.integers(0, 256, MAX_PROBE + offsets).astype(np.uint8)
    data[:16] = 0xff  # high bytes in the first words
    out = np.zeros((offsets, MAX_PROBE + 1), np.uint64)
    dbuf, obuf = allocator.alloc(data.nbytes), allocator.alloc(out.nbytes)
    allocator.upload(dbuf, data)
    launcher.enqueue([launcher.make_launch(program, "lsh_probe", [dbuf, obuf], (MAX_PROBE + 1, offsets), None)])
    launcher.finish()
    allocator.download(obuf, out)
    raw = data.tobytes()
    expected = np.array([[fingerprint64(raw[o:o + n]) for n in range(MAX_PROBE + 1)] for o in range(offsets)],
                        np.uint64)
    bad = np.argwhere(out != expected)
    assert bad.size == 0, f"Fingerprint64 mismatch at (offset, length) {bad[:5].tolist()}"


def test_lsh_projection_needs_fp64():
    # the weighted sum is a double: a device without fp64 must report LSH unsupported
    from gpu_driver.compiler.support import supported_nodes

    model, _ = single_op(OP.LSH_PROJECTION, [Const(F32, np.ones((2, 3))), In(F32, (4, 2)), In(F32, (4,)), i32(2)],
                         [Out(OT.TENSOR_INT32)])
    assert supported_nodes(model, frozenset({"fp64"})) == [True]
    assert supported_nodes(model, frozenset()) == [False]
