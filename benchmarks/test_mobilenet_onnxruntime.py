"""MobileNet v1/v2 (gpu_driver.zoo, float32, 1.0, 224²) on the OpenCL device against ONNX Runtime
(CPUExecutionProvider, 2 intra-op threads) on the same weights, and the quant8 MobileNet against the
float one, in one process with alternating runs: each round runs ours, then the peer (pytest-benchmark's
untimed setup, timed here), on the same input; each timed run follows 50 ms of untimed runs of the
same engine (ONNX Runtime's pool spins 20-50 ms after a run; steady state:
gpu_driver.latency.steady_latency_ms).  The zoo model is exported to ONNX by walking its
graph (NHWC → NCHW at the input; the same constants); the outputs are compared before timing.
The quant8 model is the float one with every tensor quantized (uint8, per-tensor weights, int32 bias,
fixed activation ranges): the same work in quant8 arithmetic.

The results page (model table, quant8 table, per-layer GFLOP/s from benchmarks/test_conv_layers.py):

    python -m benchmarks.test_mobilenet_onnxruntime --out benchmarks/results/2026-11-25-mobilenet-onnxruntime.md
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pytest

from benchmarks.machine import cpu_model
from gpu_driver import zoo
from gpu_driver.builder import ModelBuilder
from gpu_driver.graph import build_graph
from gpu_driver.hal.types import OperandType as T, OperationType as O
from gpu_driver.latency import steady_latency_ms, warm_up

ROUNDS = 30
THREADS = 2
MODELS = {"mobilenet_v1": zoo.mobilenet_v1, "mobilenet_v2": zoo.mobilenet_v2}


# ---- ONNX export ----------------------------------------------------------------------------------

def to_onnx(bm: zoo.BenchModel) -> bytes:
    """The zoo model as an ONNX graph (opset 13) with the same constants: input NHWC, transposed to NCHW."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = build_graph(bm.model, bm.model.main)
    nodes, inits = [], []
    names = {graph.subgraph.input_indexes[0]: "nchw_input"}
    nodes.append(helper.make_node("Transpose", ["input"], ["nchw_input"], perm=[0, 3, 1, 2]))

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    for node in graph.nodes:
        out = f"t{node.outputs[0]}"
        src = names.get(node.inputs[0], f"t{node.inputs[0]}")
        p = node.params
        if node.type in (O.CONV_2D, O.DEPTHWISE_CONV_2D):
            w = graph.tensors[node.inputs[1]].value
            b = graph.tensors[node.inputs[2]].value
            depthwise = node.type == O.DEPTHWISE_CONV_2D
            weight = np.transpose(w, (3, 0, 1, 2)) if depthwise else np.transpose(w, (0, 3, 1, 2))
            relu6 = p.float_min == 0.0 and p.float_max == 6.0
            nodes.append(helper.make_node(
                "Conv", [src, const(out + "_w", weight), const(out + "_b", b)], [out + "_pre" if relu6 else out],
                strides=[p.stride_h, p.stride_w], group=p.out_c if depthwise else 1,
                kernel_shape=[p.kernel_h, p.kernel_w], pads=[p.pad_top, p.pad_left, p.pad_bottom, p.pad_right]))
            if relu6:
                nodes.append(helper.make_node("Clip", [out + "_pre", const(out + "_lo", np.float32(0)),
                                                       const(out + "_hi", np.float32(6))], [out]))
        elif node.type == O.ADD:
            nodes.append(helper.make_node("Add", [src, names.get(node.inputs[1], f"t{node.inputs[1]}")], [out]))
        elif node.type == O.AVERAGE_POOL_2D:
            nodes.append(helper.make_node("GlobalAveragePool", [src], [out]))
        elif node.type == O.RESHAPE:
            nodes.append(helper.make_node("Flatten", [src], [out]))
        elif node.type == O.FULLY_CONNECTED:
            w = graph.tensors[node.inputs[1]].value
            b = graph.tensors[node.inputs[2]].value
            nodes.append(helper.make_node("Gemm", [src, const(out + "_w", w), const(out + "_b", b)], [out], transB=1))
        elif node.type == O.SOFTMAX:
            nodes.append(helper.make_node("Softmax", [src], [out], axis=1))
        else:
            raise NotImplementedError(node.type.name)
    result = f"t{graph.subgraph.output_indexes[0]}"
    g = helper.make_graph(nodes, bm.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, bm.input_shape)],
                          [helper.make_tensor_value_info(result, TensorProto.FLOAT,
                                                         list(graph.tensors[graph.subgraph.output_indexes[0]].dims()))],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 9)  # readable by older onnxruntime releases too
    onnx.checker.check_model(model)
    return model.SerializeToString()


def onnxruntime_session(onnx_bytes: bytes, threads: int = THREADS):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])


# ---- the quant8 model -----------------------------------------------------------------------------

INPUT_Q = (2.0 / 255, 128)            # the zoo input is uniform in [-1, 1]
RELU6_Q = (6.0 / 255, 0)
LINEAR_Q = (0.08, 128)
SOFTMAX_Q = (1.0 / 256, 0)


def quantized(bm: zoo.BenchModel) -> zoo.BenchModel:
    """The zoo model with every tensor TENSOR_QUANT8_ASYMM (weights per tensor, uint8 around 128;
    int32 bias): the same layers and work in quant8 arithmetic."""
    graph = build_graph(bm.model, bm.model.main)
    b = ModelBuilder()
    q: dict[int, tuple[float, int]] = {}
    ids: dict[int, int] = {}
    (x,) = graph.subgraph.input_indexes
    ids[x] = b.add_input(T.TENSOR_QUANT8_ASYMM, bm.input_shape, *INPUT_Q)
    q[x] = INPUT_Q

    def scalar(i: int) -> int:
        t = graph.tensors[i]
        return b.add_scalar(t.type, t.value.item() if hasattr(t.value, "item") else t.value)

    for node in graph.nodes:
        p, (o,) = node.params, node.outputs
        shape = graph.tensors[o].dims()
        src = ids[node.inputs[0]]
        s_in = q[node.inputs[0]][0]
        if node.type in (O.CONV_2D, O.DEPTHWISE_CONV_2D, O.FULLY_CONNECTED):
            w = graph.tensors[node.inputs[1]].value
            s_w = float(np.abs(w).max()) / 127
            wq = b.add_constant(T.TENSOR_QUANT8_ASYMM, w.shape, (np.rint(w / s_w) + 128).astype(np.uint8), s_w, 128)
            bias = graph.tensors[node.inputs[2]].value
            bq = b.add_constant(T.TENSOR_INT32, bias.shape, np.rint(bias / (s_in * s_w)).astype(np.int32), s_in * s_w)
            q[o] = RELU6_Q if p.float_max == 6.0 else LINEAR_Q
            args = [src, wq, bq, *(scalar(i) for i in node.inputs[3:])]
        elif node.type == O.ADD:
            q[o] = LINEAR_Q
            args = [src, ids[node.inputs[1]], scalar(node.inputs[2])]
        elif node.type == O.SOFTMAX:
            q[o] = SOFTMAX_Q
            args = [src, scalar(node.inputs[1])]
        else:   # AVERAGE_POOL_2D, RESHAPE: the input's quantization
            q[o] = q[node.inputs[0]]
            args = [src, *(scalar(i) if graph.tensors[i].type in (T.INT32, T.FLOAT32) else
                          b.add_constant(T.TENSOR_INT32, graph.tensors[i].dims(), graph.tensors[i].value)
                          for i in node.inputs[1:])]
        ids[o] = b.add_operand(T.TENSOR_QUANT8_ASYMM, shape, *q[o])
        b.add_operation(node.type, args, [ids[o]])
    b.set_outputs([ids[i] for i in graph.subgraph.output_indexes])
    result = zoo.BenchModel(bm.name + "_quant8", b.finish(), bm.input_shape, bm.flops, bm.conv_flops, bm.layers)
    return result


def quant_input(bm: zoo.BenchModel, seed: int = 0) -> np.ndarray:
    x = bm.random_input(seed)
    return np.clip(np.rint(x / INPUT_Q[0]) + INPUT_Q[1], 0, 255).astype(np.uint8)


# ---- measurement ----------------------------------------------------------------------------------

def alternate_rounds(runs: dict, rounds: int = ROUNDS) -> dict[str, list[float]]:
    """Seconds per call of each callable of ``runs`` in each round, all of them in turn each round
    after 3 warm-up rounds; each timed call after 50 ms of untimed calls of the same callable (steady
    state: gpu_driver.latency.steady_latency_ms)."""
    for _ in range(3):
        for run in runs.values():
            run()
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            times[name].append(steady_latency_ms(run) / 1e3)
    return times


def alternate_all(runs: dict, rounds: int = ROUNDS) -> dict[str, float]:
    """Median seconds per call of each callable of ``runs`` over :func:`alternate_rounds`."""
    return {name: statistics.median(t) for name, t in alternate_rounds(runs, rounds).items()}


def round_ratios(ours: list[float], peer: list[float]) -> tuple[float, float, float, float]:
    """Of the per-round ratios ours ÷ peer (each round's two runs a few ms apart, so a slow phase of
    the machine weighs on both): (lower quartile, median, upper quartile, share of rounds ≤ 1)."""
    ratios = sorted(o / p for o, p in zip(ours, peer))
    q1, median, q3 = statistics.quantiles(ratios, n=4)
    return q1, median, q3, sum(r <= 1.0 for r in ratios) / len(ratios)


def alternate(ours, peer, rounds: int = ROUNDS) -> tuple[float, float]:
    """Median seconds of ``ours()`` and ``peer()`` run alternately after warm-ups."""
    medians = alternate_all({"ours": ours, "peer": peer}, rounds)
    return medians["ours"], medians["peer"]


def _ours_vs_onnxruntime(device, name: str):
    bm = MODELS[name]()
    prepared = device.prepare_model(bm.model)
    x = bm.random_input()
    session = onnxruntime_session(to_onnx(bm))
    ours, = prepared.execute([x])
    theirs, = session.run(None, {"input": x})
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-3)
    return bm, prepared, x, session


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mobilenet_vs_onnxruntime(benchmark, pocl, name):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    bm, prepared, x, session = _ours_vs_onnxruntime(pocl, name)
    for _ in range(3):
        prepared.execute([x])
        session.run(None, {"input": x})
    peer_ms = []

    def run_peer():
        peer_ms.append(steady_latency_ms(lambda: session.run(None, {"input": x})))
        warm_up(lambda: prepared.execute([x]))
        return ([x],), {}

    benchmark.group = name
    benchmark.pedantic(prepared.execute, setup=run_peer, rounds=ROUNDS, iterations=1)
    if benchmark.stats is None:   # --benchmark-disable: run once, nothing to report
        return
    ours_ms, theirs_ms = benchmark.stats.stats.median * 1e3, statistics.median(peer_ms)
    benchmark.extra_info.update(device=pocl.name, ours_median_ms=ours_ms, onnxruntime_median_ms=theirs_ms,
                                ratio=ours_ms / theirs_ms, onnxruntime_threads=THREADS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_quant8_vs_float(benchmark, pocl, name):
    bm = MODELS[name]()
    qbm = quantized(bm)
    fprep, qprep = pocl.prepare_model(bm.model), pocl.prepare_model(qbm.model)
    x, xq = bm.random_input(), quant_input(bm)
    for _ in range(3):
        qprep.execute([xq])
        fprep.execute([x])
    float_ms = []

    def run_float():
        float_ms.append(steady_latency_ms(lambda: fprep.execute([x])))
        warm_up(lambda: qprep.execute([xq]))
        return ([xq],), {}

    benchmark.group = name + " quant8"
    benchmark.pedantic(qprep.execute, setup=run_float, rounds=ROUNDS, iterations=1)
    if benchmark.stats is None:
        return
    q_ms, f_ms = benchmark.stats.stats.median * 1e3, statistics.median(float_ms)
    benchmark.extra_info.update(device=pocl.name, quant8_median_ms=q_ms, float_median_ms=f_ms, ratio=q_ms / f_ms)


# ---- the results page -----------------------------------------------------------------------------

def write_page(path: str, rounds: int = ROUNDS) -> str:
    import onnxruntime

    import gpu_driver as gd
    from benchmarks.test_conv_layers import layer_rows
    from gpu_driver.compiler import autotune

    device = gd.get_device("opencl")
    lines = [f"# MobileNet on PoCL vs ONNX Runtime — {time.strftime('%Y-%m-%d', time.gmtime())}", "",
             f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; "
             f"`uptime` load before: {os.getloadavg()[0]:.2f}; device {device.name} "
             f"({device.get_version_string()}); ONNX Runtime {onnxruntime.__version__} CPUExecutionProvider, "
             f"{THREADS} threads; tile tuning {'on' if autotune.enabled() else 'off'}; "
             f"POCL_AFFINITY={os.environ.get('POCL_AFFINITY', 'unset')}.", "",
             "Command: `python -m benchmarks.test_mobilenet_onnxruntime --out PAGE`. One process, "
             f"alternating runs ({rounds} rounds after 3 warm-ups, medians; each timed run after 50 ms of untimed "
             "runs of the same engine, in which the other's threads stop spinning; "
             "`PreparedModel.execute` with "
             "its copies vs `InferenceSession.run`), same weights (the zoo model exported to ONNX; outputs "
             "compared first).", "",
             "The per-round columns pair each round's two runs, taken a few milliseconds apart: this VM has "
             "slow phases that last seconds and weigh on both engines, but not equally.", "",
             "| model (float32, 1.0, 224²) | PoCL ms | ONNX Runtime ms | PoCL ÷ ORT | per-round PoCL ÷ ORT, "
             "median [quartiles] | rounds PoCL ≤ ORT |", "|---|---|---|---|---|---|"]
    for name in sorted(MODELS):
        bm, prepared, x, session = _ours_vs_onnxruntime(device, name)
        times = alternate_rounds({"ours": lambda: prepared.execute([x]),
                                  "peer": lambda: session.run(None, {"input": x})}, rounds)
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["peer"])
        q1, median, q3, share = round_ratios(times["ours"], times["peer"])
        lines.append(f"| {name} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.2f} | "
                     f"{median:.2f} [{q1:.2f}, {q3:.2f}] | {share:.0%} |")
    lines += ["", "| model | quant8 ms | float32 ms | quant8 ÷ float |", "|---|---|---|---|"]
    for name in sorted(MODELS):
        bm = MODELS[name]()
        qbm = quantized(bm)
        fprep, qprep = device.prepare_model(bm.model), device.prepare_model(qbm.model)
        x, xq = bm.random_input(), quant_input(bm)
        qt, ft = alternate(lambda: qprep.execute([xq]), lambda: fprep.execute([x]), rounds)
        lines.append(f"| {name} | {qt * 1e3:.2f} | {ft * 1e3:.2f} | {qt / ft:.2f} |")
    lines += ["", "Per layer (float32 + RELU6; device time of the layer's kernels after 0.15 s of untimed runs, "
              "in which numpy's BLAS threads stop spinning, median; numpy sgemm 2048² timed after each run, "
              "median):", "",
              "| layer | ms | GFLOP/s | sgemm peak GFLOP/s | fraction of peak |", "|---|---|---|---|---|"]
    for row in layer_rows(device):
        lines.append(f"| {row['layer']} | {row['ms']:.3f} | {row['gflops']:.1f} | {row['peak_gflops']:.0f} | "
                     f"{row['fraction_of_peak']:.0%} |")
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write the MobileNet vs ONNX Runtime results page.")
    parser.add_argument("--out", required=True, help="markdown file to write")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(write_page(args.out, args.rounds))
