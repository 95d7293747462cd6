"""Slices of concatenations read the concatenated tensors (compiler/slice_forwarding.py): the
tensor-list update TF Lite writes for a recurrent layer's output sequence collapses to one
concatenation of the items; a slice inside one input reads it; what must stay stays.  Results on
each accelerator device against numpy."""
import numpy as np

import gpu_driver as gd
from gpu_driver.compiler.pipeline import prepare_graph
from gpu_driver.hal.types import OperandType as T, OperationType as O

STEPS, WIDTH = 4, 3


def _i32s(b, values):
    return b.add_constant(T.TENSOR_INT32, [len(values)], np.array(values, np.int32))


def _slice(b, x, begin, size, dims, type=T.TENSOR_FLOAT32, quant=()):
    y = b.add_operand(type, dims, *quant)
    b.add_operation(O.SLICE, [x, _i32s(b, begin), _i32s(b, size)], [y])
    return y


def _concat(b, parts, dims, type=T.TENSOR_FLOAT32, quant=()):
    y = b.add_operand(type, dims, *quant)
    b.add_operation(O.CONCATENATION, [*parts, b.add_scalar(T.INT32, 0)], [y])
    return y


def tensor_list_model():
    """seq = zeros [STEPS, WIDTH]; for t: seq = concat(seq[:t], x_t, seq[t + 1:]) — as TF Lite's
    converter writes a Keras layer's output sequence (the first slice is empty at t = 0)."""
    b = gd.ModelBuilder()
    items = [b.add_input(T.TENSOR_FLOAT32, [1, WIDTH]) for _ in range(STEPS)]
    seq = b.add_constant(T.TENSOR_FLOAT32, [STEPS, WIDTH], np.zeros((STEPS, WIDTH), np.float32))
    for t, item in enumerate(items):
        head = _slice(b, seq, [0, 0], [t, -1], [t, WIDTH] if t else [0, 0])
        tail = _slice(b, seq, [t + 1, 0], [-1, -1], [STEPS - t - 1, WIDTH] if t < STEPS - 1 else [0, 0])
        seq = _concat(b, [head, item, tail], [STEPS, WIDTH])
    b.set_outputs([seq])
    return b.finish()


def _types(graph):
    return [n.type for n in graph.nodes]


def test_tensor_list_updates_become_one_concatenation(accelerator):
    model = tensor_list_model()
    assert _types(prepare_graph(model)) == [O.CONCATENATION]
    rng = np.random.default_rng(5)
    items = [rng.uniform(-1, 1, (1, WIDTH)).astype(np.float32) for _ in range(STEPS)]
    (out,) = accelerator.prepare_model(model).execute(items)
    np.testing.assert_array_equal(out, np.concatenate(items))


def test_a_slice_inside_one_input_reads_it(accelerator):
    # y = concat(a, b)[3:5] with a [2, 2], b [4, 2]: rows 1..2 of b; then a slice of that slice
    b = gd.ModelBuilder()
    a, c = b.add_input(T.TENSOR_FLOAT32, [2, 2]), b.add_input(T.TENSOR_FLOAT32, [4, 2])
    joined = _concat(b, [a, c], [6, 2])
    part = _slice(b, joined, [3, 0], [2, -1], [2, 2])
    last = _slice(b, part, [1, 0], [1, 2], [1, 2])
    b.set_outputs([part, last])
    model = b.finish()
    assert _types(prepare_graph(model)) == [O.SLICE, O.SLICE]          # the concatenation is gone
    av, cv = np.arange(4, dtype=np.float32).reshape(2, 2), np.arange(10, 18, dtype=np.float32).reshape(4, 2)
    got_part, got_last = accelerator.prepare_model(model).execute([av, cv])
    np.testing.assert_array_equal(got_part, [[12, 13], [14, 15]])
    np.testing.assert_array_equal(got_last, [[14, 15]])


def test_a_concatenation_another_operation_reads_stays(accelerator):
    # the slice covers both inputs of the concatenation but an ADD reads it: nothing to splice into;
    # the ADD, an element-wise kernel, then reads the slice's rows of the concatenation in place
    b = gd.ModelBuilder()
    a, c = b.add_input(T.TENSOR_FLOAT32, [1, 2]), b.add_input(T.TENSOR_FLOAT32, [1, 2])
    joined = _concat(b, [a, c, b.add_input(T.TENSOR_FLOAT32, [1, 2])], [3, 2])
    part = _slice(b, joined, [0, 0], [2, 2], [2, 2])
    out = b.add_operand(T.TENSOR_FLOAT32, [2, 2])
    b.add_operation(O.ADD, [part, part, b.add_scalar(T.INT32, 0)], [out])
    b.set_outputs([out])
    model = b.finish()
    assert _types(prepare_graph(model)) == [O.CONCATENATION, O.ADD]
    xs = [np.full((1, 2), v, np.float32) for v in (1, 2, 3)]
    np.testing.assert_array_equal(accelerator.prepare_model(model).execute(xs)[0], [[2, 2], [4, 4]])


def test_quantized_concatenations_are_left_alone():
    q = (0.5, 3)
    b = gd.ModelBuilder()
    a, c = b.add_input(T.TENSOR_QUANT8_ASYMM, [2, 2], *q), b.add_input(T.TENSOR_QUANT8_ASYMM, [2, 2], *q)
    joined = _concat(b, [a, c], [4, 2], T.TENSOR_QUANT8_ASYMM, q)
    b.set_outputs([_slice(b, joined, [2, 0], [2, 2], [2, 2], T.TENSOR_QUANT8_ASYMM, q)])
    assert _types(prepare_graph(b.finish())) == [O.CONCATENATION, O.SLICE]


def test_unfused_graphs_keep_every_operation():
    assert _types(prepare_graph(tensor_list_model(), fuse=False)).count(O.CONCATENATION) == STEPS
