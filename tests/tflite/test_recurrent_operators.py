"""The importer on TF Lite's lookup, hashing and recurrent operators: one-operator models run by
LiteRT (the independent oracle) from a fresh interpreter (zero state), and, imported, on every
device.  Recurrent state lives in TF Lite variable tensors; the import starts from the zero state."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_driver
from gpu_driver import tflite
from gpu_driver.hal.types import OperationType
from gpu_driver.ops.catalog import lookup
from gpu_driver.tflite.writer import TfliteWriter

from .oracle import litert

RNG = np.random.default_rng(11)
B, I, U, T_STEPS = 2, 3, 4, 5


def f32(*shape):
    return RNG.uniform(-0.8, 0.8, shape).astype(np.float32)


class OneOp:
    """A one-operator TF Lite model under construction: inputs fed at run time, constants, variable
    (state) tensors and omitted optional inputs (-1)."""

    def __init__(self):
        self.w = TfliteWriter()
        self.ins, self.model_inputs, self.feed = [], [], []

    def input(self, shape, ttype="FLOAT32", values=None):
        t = self.w.tensor(f"in{len(self.ins)}", shape, ttype)
        self.model_inputs.append(t)
        self.feed.append(f32(*shape) if values is None else values)
        self.ins.append(t)

    def const(self, value, ttype="FLOAT32", **quant):
        value = np.asarray(value)
        self.ins.append(self.w.tensor(f"c{len(self.ins)}", value.shape, ttype, data=value, **quant))

    def state(self, shape):
        self.ins.append(self.w.tensor(f"state{len(self.ins)}", shape, "FLOAT32", variable=True))

    def omitted(self):
        self.ins.append(-1)

    def finish(self, name, output_shapes, options=None, out_types=None):
        outs = [self.w.tensor(f"out{k}", s, (out_types or {}).get(k, "FLOAT32")) for k, s in enumerate(output_shapes)]
        self.w.operator(name, self.ins, outs, options=options)
        return self.w.finish(self.model_inputs, outs), self.feed


def run_everywhere(device_name, data, feed, atol=1e-5):
    expected = litert(data, feed)
    imported = tflite.load_model(data)
    needed = {op.type for op in imported.model.main.operations}
    missing = [t.name for t in needed if lookup(t) is None]
    if missing:
        pytest.skip(f"{missing} not implemented by this driver")
    device = gpu_driver.get_device(device_name)
    supported = device.get_supported_operations(imported.model)
    if not all(supported) and device_name != "reference":
        pytest.skip(f"{[t.name for t in needed]} not yet supported on {device_name}")
    actual = device.prepare_model(imported.model).execute(feed)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"shape {a.shape} vs LiteRT {e.shape}"
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, atol=atol, rtol=1e-4)
        else:
            np.testing.assert_array_equal(a, e)
    return imported


DEVICES = [d.name for d in gpu_driver.get_devices()]


# ---- lookups and hashing -----------------------------------------------------------------------------

@pytest.mark.parametrize("device_name", DEVICES)
def test_embedding_lookup(device_name):
    m = OneOp()
    m.input([3], "INT32", np.array([4, 0, 2], np.int32))
    m.const(f32(5, 2, 3))
    run_everywhere(device_name, *m.finish("EMBEDDING_LOOKUP", [[3, 2, 3]]))


@pytest.mark.parametrize("device_name", DEVICES)
def test_embedding_lookup_of_a_quantized_table_is_dequantized_at_import(device_name):
    m = OneOp()
    m.input([2], "INT32", np.array([1, 3], np.int32))
    m.const(RNG.integers(-127, 128, (4, 3)), "INT8", scale=0.05, zero_point=0)
    imported = run_everywhere(device_name, *m.finish("EMBEDDING_LOOKUP", [[2, 3]]))
    assert [op.type for op in imported.model.main.operations] == [OperationType.EMBEDDING_LOOKUP]


@pytest.mark.parametrize("device_name", DEVICES)
def test_hashtable_lookup_output_and_hits(device_name):
    m = OneOp()
    m.input([4], "INT32", np.array([7, 3, 100, -2], np.int32))
    m.const(np.array([-2, 3, 7, 9], np.int32), "INT32")
    m.const(f32(4, 2))
    data, feed = m.finish("HASHTABLE_LOOKUP", [[4, 2], [4]], out_types={1: "UINT8"})
    expected = litert(data, feed)
    assert list(expected[1]) == [1, 1, 0, 1]   # 100 is not a key
    run_everywhere(device_name, data, feed)


@pytest.mark.parametrize("kind", [1, 2], ids=["sparse", "dense"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_lsh_projection(device_name, kind):
    m = OneOp()
    m.const(RNG.uniform(-1, 1, (4, 3)).astype(np.float32))
    m.input([3, 2])
    if kind == 2:
        m.const(np.array([0.5, -1.0, 2.0], np.float32))
    shape = [4] if kind == 1 else [12]
    data, feed = m.finish("LSH_PROJECTION", [shape], ("LSHProjectionOptions", {"Type": kind}), out_types={0: "INT32"})
    run_everywhere(device_name, data, feed)


# ---- recurrent networks --------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", [1, 4], ids=["relu", "tanh"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_rnn(device_name, activation):
    m = OneOp()
    m.input([B, I])
    m.const(f32(U, I))
    m.const(f32(U, U))
    m.const(f32(U))
    m.state([B, U])
    run_everywhere(device_name, *m.finish("RNN", [[B, U]], ("RNNOptions", {"FusedActivationFunction": activation})))


@pytest.mark.parametrize("device_name", DEVICES)
def test_svdf_rank_2(device_name):
    rank, memory = 2, 3
    filters = U * rank
    m = OneOp()
    m.input([B, I])
    m.const(f32(filters, I))
    m.const(f32(filters, memory))
    m.const(f32(U))
    m.state([B, memory * filters])
    run_everywhere(device_name, *m.finish("SVDF", [[B, U]], ("SVDFOptions", {"Rank": rank})))


def _lstm_cell(m: OneOp, units: int, output: int, inputs: int, cifg=False, peephole=False, projection=False):
    """The 17 cell tensors of TF Lite's (and NNAPI's) LSTM order, weights drawn at random."""
    for gate in range(4):                        # input-to-{input, forget, cell, output}
        m.omitted() if cifg and gate == 0 else m.const(f32(units, inputs))
    for gate in range(4):                        # recurrent-to-*
        m.omitted() if cifg and gate == 0 else m.const(f32(units, output))
    for gate in range(3):                        # peephole cell-to-{input, forget, output}
        m.const(f32(units)) if peephole and not (cifg and gate == 0) else m.omitted()
    for gate in range(4):                        # gate biases
        m.omitted() if cifg and gate == 0 else m.const(f32(units))
    if projection:
        m.const(f32(output, units))
        m.const(f32(output))
    else:
        m.omitted()
        m.omitted()


LSTM_VARIANTS = {
    "basic": dict(),
    "cifg_peephole": dict(cifg=True, peephole=True),
    "projection_peephole": dict(peephole=True, projection=True),
}


@pytest.mark.parametrize("variant", sorted(LSTM_VARIANTS))
@pytest.mark.parametrize("device_name", DEVICES)
def test_lstm(device_name, variant):
    kw = LSTM_VARIANTS[variant]
    out = 3 if kw.get("projection") else U
    m = OneOp()
    m.input([B, I])
    _lstm_cell(m, U, out, I, **kw)
    m.state([B, out])
    m.state([B, U])
    opts = ("LSTMOptions", {"FusedActivationFunction": 4, "CellClip": 3.0, "ProjClip": 0.0 if not kw else 2.0})
    run_everywhere(device_name, *m.finish("LSTM", [[B, out]], opts), atol=1e-4)


@pytest.mark.parametrize("time_major", [True, False], ids=["time_major", "batch_major"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_unidirectional_sequence_lstm(device_name, time_major):
    m = OneOp()
    m.input([T_STEPS, B, I] if time_major else [B, T_STEPS, I])
    _lstm_cell(m, U, U, I, peephole=True)
    m.state([B, U])
    m.state([B, U])
    shape = [T_STEPS, B, U] if time_major else [B, T_STEPS, U]
    opts = ("UnidirectionalSequenceLSTMOptions", {"FusedActivationFunction": 4, "TimeMajor": time_major})
    run_everywhere(device_name, *m.finish("UNIDIRECTIONAL_SEQUENCE_LSTM", [shape], opts), atol=1e-4)


@pytest.mark.parametrize("merge", [False, True], ids=["separate", "merged"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_bidirectional_sequence_lstm(device_name, merge):
    m = OneOp()
    m.input([T_STEPS, B, I])
    _lstm_cell(m, U, U, I)                       # forward
    _lstm_cell(m, U, U, I, cifg=True)            # backward: CIFG (LiteRT needs equal cell sizes)
    for _ in range(4):
        m.state([B, U])
    for _ in range(9):                           # no auxiliary input or weights
        m.omitted()
    shapes = [[T_STEPS, B, 2 * U]] if merge else [[T_STEPS, B, U], [T_STEPS, B, U]]
    opts = ("BidirectionalSequenceLSTMOptions", {"FusedActivationFunction": 4, "MergeOutputs": merge,
                                                 "TimeMajor": True})
    run_everywhere(device_name, *m.finish("BIDIRECTIONAL_SEQUENCE_LSTM", shapes, opts), atol=1e-4)


@pytest.mark.parametrize("time_major", [True, False], ids=["time_major", "batch_major"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_unidirectional_sequence_rnn(device_name, time_major):
    m = OneOp()
    m.input([T_STEPS, B, I] if time_major else [B, T_STEPS, I])
    m.const(f32(U, I))
    m.const(f32(U, U))
    m.const(f32(U))
    m.state([B, U])
    shape = [T_STEPS, B, U] if time_major else [B, T_STEPS, U]
    opts = ("SequenceRNNOptions", {"FusedActivationFunction": 4, "TimeMajor": time_major})
    run_everywhere(device_name, *m.finish("UNIDIRECTIONAL_SEQUENCE_RNN", [shape], opts))


@pytest.mark.parametrize("merge", [False, True], ids=["separate", "merged"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_bidirectional_sequence_rnn(device_name, merge):
    m = OneOp()
    m.input([T_STEPS, B, I])
    for units in (U, 3):
        m.const(f32(units, I))
        m.const(f32(units, units))
        m.const(f32(units))
        m.state([B, units])
    for _ in range(3):                           # no auxiliary input or weights
        m.omitted()
    shapes = [[T_STEPS, B, U + 3]] if merge else [[T_STEPS, B, U], [T_STEPS, B, 3]]
    opts = ("BidirectionalSequenceRNNOptions", {"FusedActivationFunction": 1, "MergeOutputs": merge,
                                                "TimeMajor": True})
    run_everywhere(device_name, *m.finish("BIDIRECTIONAL_SEQUENCE_RNN", shapes, opts))


def test_basic_lstm_kernel_is_refused_with_its_reason():
    m = OneOp()
    m.input([B, I])
    data, _ = m.finish("LSTM", [[B, U]], ("LSTMOptions", {"KernelType": 1}))
    with pytest.raises(gpu_driver.DriverError) as err:
        tflite.load_model(data)
    assert "BASIC LSTM" in err.value.message
