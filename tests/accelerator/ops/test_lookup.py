"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP on each accelerator device vs the reference (exact)."""
import numpy as np
import pytest

from .harness import check_op, compare
from .models import F32, I32T, OP, Q8A, Const, In, Out, random_data, single_op


@pytest.mark.parametrize("vtype", [F32, Q8A, I32T])
def test_embedding_lookup(accelerator, vtype):
    rng = np.random.default_rng(21)
    q = (0.5, 3) if vtype == Q8A else ()
    check_op(accelerator, OP.EMBEDDING_LOOKUP, [Const(I32T, [2, 0, 4, 2]), In(vtype, (5, 3, 2), *q)],
             [Out(vtype, *q)], rng)


@pytest.mark.parametrize("vtype", [F32, Q8A, I32T])
def test_embedding_lookup_runtime_indices(accelerator, vtype):
    """Runtime lookups: checked by the kernel (status word); in-range executions match the reference."""
    rng = np.random.default_rng(23)
    q = (0.5, 3) if vtype == Q8A else ()
    model, _ = single_op(OP.EMBEDDING_LOOKUP, [In(I32T, (4,)), In(vtype, (5, 3, 2), *q)], [Out(vtype, *q)])
    assert accelerator.get_supported_operations(model) == [True]
    values = random_data(In(vtype, (5, 3, 2), *q), rng)
    compare(accelerator, model, [np.array([4, 0, 0, 2], np.int32), values], what=f"EMBEDDING_LOOKUP {vtype.name}")


@pytest.mark.parametrize("vtype", [F32, Q8A, I32T])
def test_hashtable_lookup(accelerator, vtype):
    rng = np.random.default_rng(22)
    q = (0.5, 3) if vtype == Q8A else ()
    keys = In(I32T, (6,))
    model_args = [In(I32T, (7,)), keys, In(vtype, (6, 4), *q)]
    data = [np.array([5, -3, 9, 100, 5, 0, 2], np.int32), np.array([-3, 0, 1, 5, 9, 12], np.int32),
            (rng.integers(0, 256, (6, 4)).astype(np.uint8) if vtype == Q8A else
             rng.integers(-50, 50, (6, 4)).astype(np.int32) if vtype == I32T else
             rng.normal(size=(6, 4)).astype(np.float32))]
    check_op(accelerator, OP.HASHTABLE_LOOKUP, model_args, [Out(vtype, *q), Out(Q8A, 1.0, 0)], rng, data=data)
