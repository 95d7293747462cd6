"""The HAL execution modes side by side on PoCL: executeSynchronously, execute (asynchronous, submit +
result()), a burst, a reusable execution, executeFenced (submit + fence wait) and a chain of fenced
executions, each waiting on the previous one.

Two workloads, one pytest-benchmark group each:

* ``execution-modes-add16``: the one-ADD model of ``gpu_driver.zoo.add_model`` (16 floats), against the
  same work in bare PyOpenCL with one host wait (the floor of this design: two copies in, the kernel,
  one copy out; test_overhead's kernel) waited for with ``queue.finish`` and with ``wait_for_events``,
  the bare kernel alone (the floor of a design without copies), and
  ONNX Runtime's ``session.run`` of a one-Add ONNX model (CPUExecutionProvider, 2 intra-op threads;
  skipped without ``onnx`` and ``onnxruntime``).  Goal: burst and reusable ≤ 30 µs median.
* ``execution-modes-mobilenet_v2``: MobileNet v2 (1.0, 224×224, float32, zoo weights): sync, burst, and a
  fenced chain of 4 (throughput).

How to read the result: every benchmark runs in the same process, one after the other (not
interleaved), so the ratios between the rows of one group are same-process ratios but carry whatever
drift the machine had between tests; compare rows within a group (the medians), and treat differences
of a few percent as noise.  A ``fenced chain of N`` row times N executions per round: its per-execution
time is its median ÷ N, stored as ``extra_info["per_execution_us"]`` (``executions_per_round`` = N).
``extra_info["mode"]`` names the mode of every row.

With benchmarking enabled, the last test writes ``benchmarks/results/<date>-execution-modes.md``
(every table from this run, the machine, the versions and the load average before and after):
``python -m pytest benchmarks/test_execution_modes.py -p no:cacheprovider --benchmark-json=...``.
"""
import datetime
import os
from pathlib import Path

import numpy as np
import pytest

import gpu_driver as gd
from gpu_driver.hal.model import DataLocation, Request, RequestArgument
from gpu_driver.runtime.sync_fence import FenceState
from gpu_driver.zoo import add_model, mobilenet_v2

from benchmarks.machine import cpu_model, load_average
from benchmarks.test_overhead import _bare_add, _request

ADD_GROUP, MOBILENET_GROUP = "execution-modes-add16", "execution-modes-mobilenet_v2"
ADD_ROUNDS, ADD_CHAIN = 2000, 3
MOBILENET_ROUNDS, MOBILENET_CHAIN = 100, 4
GOAL_US = 30.0  # burst and reusable executions of the one-ADD model, median per execution
RESULTS = Path(__file__).parent / "results"

#: what this run measured, for the results file: group -> mode -> (median per round µs, executions per round)
MEASURED: dict[str, dict[str, tuple[float, int]]] = {}
ALTERNATING: dict[str, float] = {}   # mode -> median µs per execution, all modes interleaved
RUN_INFO: dict[str, str] = {"load_before": load_average()}


def _pedantic(benchmark, group, mode, fn, rounds, per_round=1):
    """Run ``fn`` for ``rounds`` timed rounds; record the mode, and the time per execution when a round
    runs ``per_round`` executions."""
    benchmark.group = group
    benchmark.extra_info.update(mode=mode, executions_per_round=per_round)
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=max(rounds // 40, 2))
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["per_execution_us"] = benchmark.stats.stats.median / per_round * 1e6
        MEASURED.setdefault(group, {})[mode] = (benchmark.stats.stats.median * 1e6, per_round)


def _fenced_chain(pm, request, n):
    """n fenced executions, each waiting on the fence of the previous one, then a wait on the last."""
    def run():
        fence = None
        for _ in range(n):
            fence, _callback = pm.execute_fenced(request, [fence] if fence is not None else ())
        assert fence.wait() is FenceState.SIGNALED
    return run


def _fenced_once(pm, request):
    def run():
        fence, _callback = pm.execute_fenced(request)
        assert fence.wait() is FenceState.SIGNALED
    return run


def _burst(pm, request):
    burst = pm.configure_execution_burst()
    slots = [burst.cache_memory(pool) for pool in request.pools]
    return lambda: burst.execute_synchronously(request, slots)


def _mode(name, pm, request, n_chain):
    """(the callable one round times, executions per round) of the execution mode ``name``."""
    if name == "sync":
        return (lambda: pm.execute_synchronously(request)), 1
    if name == "async":
        return (lambda: pm.execute_asynchronously(request).result()), 1
    if name == "burst":
        return _burst(pm, request), 1
    if name == "reusable":
        return pm.create_reusable_execution(request).compute, 1
    if name == "fenced":
        return _fenced_once(pm, request), 1
    assert name == f"fenced chain of {n_chain}", name
    return _fenced_chain(pm, request, n_chain), n_chain


# ---- one ADD, 16 floats -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def add16(pocl):
    bm = add_model()
    pm = pocl.prepare_model(bm.model)
    request = _request(bm.input_shape)
    pm.execute_synchronously(request)
    np.testing.assert_array_equal(np.frombuffer(request.pools[1].view(), np.float32, 16), 2.0)
    return pm, request


@pytest.mark.parametrize("mode", ["sync", "async", "burst", "reusable", "fenced", f"fenced chain of {ADD_CHAIN}"])
def test_add16_mode(benchmark, mode, add16):
    fn, per_round = _mode(mode, *add16, ADD_CHAIN)
    _pedantic(benchmark, ADD_GROUP, mode, fn, ADD_ROUNDS // per_round, per_round)


def _bare_run(pocl, wait="finish"):
    """The one-ADD work in bare PyOpenCL: non-blocking copies in, the kernel, the copy out, one host wait
    (``wait``: ``"finish"`` = queue.finish, ``"events"`` = cl.wait_for_events on the last copy).  The
    copies' events are kept until the wait: dropping a host copy's NannyEvent waits for that copy."""
    import pyopencl as cl
    q, k, A, B, O, a, out = _bare_add(pocl)

    def run():
        events = [cl.enqueue_copy(q, dst, src, is_blocking=False) for dst, src in ((A, a), (B, a))]
        cl.enqueue_nd_range_kernel(q, k, (16,), None)
        events.append(cl.enqueue_copy(q, out, O, is_blocking=False))
        if wait == "finish":
            q.finish()
        else:
            cl.wait_for_events(events[-1:])
    return run


def _bare_kernel_only(pocl):
    """Bare PyOpenCL, the kernel alone and one wait: what a design without copies (pools the kernels
    read and write in place) could reach."""
    import pyopencl as cl
    q, k, *buffers = _bare_add(pocl)

    def run():
        cl.enqueue_nd_range_kernel(q, k, (16,), None)
        q.finish()
    run.buffers = buffers  # the kernel's arguments live as long as it runs
    return run


#: the bare-PyOpenCL peers: (mode name, factory)
BARE_MODES = {"bare pyopencl, one wait": _bare_run,
              "bare pyopencl, one wait_for_events": lambda pocl: _bare_run(pocl, "events"),
              "bare pyopencl, kernel only": _bare_kernel_only}


@pytest.mark.parametrize("mode", list(BARE_MODES))
def test_add16_bare_pyopencl(benchmark, pocl, mode):
    _pedantic(benchmark, ADD_GROUP, mode, BARE_MODES[mode](pocl), ADD_ROUNDS)


def _onnx_add16():
    """(ONNX Runtime's session.run of a one-Add model on [1, 16] floats, onnxruntime version); skips
    without onnx / onnxruntime."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    io = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 16]) for name in ("a", "b", "o")]
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["o"])], "add16", io[:2], io[2:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 9)  # readable by older onnxruntime releases too
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.ones((1, 16), np.float32)
    feed = {"a": x, "b": x}
    np.testing.assert_array_equal(session.run(None, feed)[0], 2.0)
    return (lambda: session.run(None, feed)), ort.__version__


def test_add16_onnxruntime(benchmark):
    run, version = _onnx_add16()
    _pedantic(benchmark, ADD_GROUP, "onnxruntime session.run", run, ADD_ROUNDS)
    benchmark.extra_info["onnxruntime"] = version
    RUN_INFO["onnxruntime"] = version


ALTERNATING_ROUNDS = 1000


def test_add16_alternating(benchmark, pocl, add16):
    """Every mode once per round, the order rotating from round to round, so each ratio compares
    calls made at the same moments (an idle VM and a busy one differ by 2-5x in wake-up costs).
    The medians in µs and the ratios to sync go to extra_info."""
    import time

    modes = {m: _mode(m, *add16, ADD_CHAIN) for m in ("sync", "async", "burst", "reusable", "fenced",
                                                       f"fenced chain of {ADD_CHAIN}")}
    modes.update({name: (make(pocl), 1) for name, make in BARE_MODES.items()})
    try:
        modes["onnxruntime session.run"] = (_onnx_add16()[0], 1)
    except pytest.skip.Exception:
        pass
    names = list(modes)
    times: dict[str, list[float]] = {n: [] for n in names}
    rotation = [0]

    def one_round():
        start = rotation[0] % len(names)
        rotation[0] += 1
        for name in names[start:] + names[:start]:
            fn, per_round = modes[name]
            t0 = time.perf_counter_ns()
            fn()
            times[name].append((time.perf_counter_ns() - t0) / 1000 / per_round)

    benchmark.group = ADD_GROUP + "-alternating"
    benchmark.pedantic(one_round, rounds=ALTERNATING_ROUNDS, iterations=1, warmup_rounds=20)
    medians = {n: float(np.median(v)) for n, v in times.items()}
    if not benchmark.disabled:
        ALTERNATING.update(medians)
    benchmark.extra_info["median_us"] = medians
    benchmark.extra_info["ratio_to_sync"] = {n: m / medians["sync"] for n, m in medians.items()}


# ---- MobileNet v2 ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mobilenet(pocl):
    bm = mobilenet_v2()
    pm = pocl.prepare_model(bm.model)
    x = bm.random_input()
    out_bytes = int(np.prod(pm.known_output_shape(0))) * 4
    pool_in, pool_out = gd.SharedMemory(x.nbytes), gd.SharedMemory(out_bytes)
    pool_in.write(0, x.tobytes())
    request = Request([RequestArgument(DataLocation(0, 0, x.nbytes), [])],
                      [RequestArgument(DataLocation(1, 0, out_bytes), [])], [pool_in, pool_out])
    pm.execute_synchronously(request)
    np.testing.assert_allclose(np.frombuffer(pool_out.view(), np.float32, out_bytes // 4),
                               pm.execute([x])[0].reshape(-1))
    return pm, request


@pytest.mark.parametrize("mode", ["sync", "burst", f"fenced chain of {MOBILENET_CHAIN}"])
def test_mobilenet_v2_mode(benchmark, mode, mobilenet):
    fn, per_round = _mode(mode, *mobilenet, MOBILENET_CHAIN)
    _pedantic(benchmark, MOBILENET_GROUP, mode, fn, MOBILENET_ROUNDS // per_round, per_round)


# ---- the results file -------------------------------------------------------------------------------
def _per_mode_table(rows: dict[str, tuple[float, int]], floor: str | None) -> list[str]:
    sync = rows.get("sync", (None, 1))[0]
    base = rows.get(floor, (None, 1))[0] if floor else None
    lines = ["| mode | median per round (µs) | executions per round | per execution (µs) | ÷ sync |"
             + (" ÷ bare floor |" if base else ""),
             "|---|---|---|---|---|" + ("---|" if base else "")]
    for mode, (median, per_round) in rows.items():
        per = median / per_round
        lines.append(f"| {mode} | {median:.3f} | {per_round} | {per:.3f} | "
                     + (f"{per / sync:.2f}" if sync else "–") + " |" + (f" {per / base:.2f} |" if base else ""))
    return lines


def test_write_results(pocl):
    """Write this run's tables to benchmarks/results/<date>-execution-modes.md (benchmarking enabled)."""
    if not MEASURED:
        pytest.skip("nothing measured (benchmarks disabled or deselected)")
    import pyopencl as cl
    today = datetime.date.today().isoformat()
    load_after = load_average()
    floor = "bare pyopencl, one wait"
    lines = [f"# Execution modes on PoCL, {today}", "",
             f"- machine: {cpu_model()} (`lscpu`), {os.cpu_count()} CPUs; load average (1, 5, 15 min) "
             f"before {RUN_INFO['load_before']}, after {load_after}",
             f"- device: {pocl.name} — {pocl.backend.device_name} (pyopencl {cl.VERSION_TEXT})",
             f"- onnxruntime {RUN_INFO.get('onnxruntime', 'not installed')} (CPUExecutionProvider, 2 intra-op threads)",
             "- command: `python -m pytest benchmarks/test_execution_modes.py -p no:cacheprovider "
             "--benchmark-json=benchmarks/results/<date>-execution-modes.json` (this file is written by its "
             "last test)", ""]
    add = MEASURED.get(ADD_GROUP, {})
    if add:
        lines += ["## One ADD of 16 floats, each mode timed in its own benchmark (one after the other)", "",
                  *_per_mode_table(add, floor if floor in add else None), ""]
        verdicts = [f"{m} {add[m][0]:.1f} µs" for m in ("burst", "reusable") if m in add]
        met = all(add[m][0] <= GOAL_US for m in ("burst", "reusable") if m in add)
        lines += [f"Goal: burst and reusable ≤ {GOAL_US:.0f} µs median per execution: {', '.join(verdicts)} — "
                  + ("**met**." if met else "**not met**.")
                  + (f"  The floor of this design (two copies in, the kernel, one copy out, one wait, in bare "
                     f"PyOpenCL) is {add[floor][0]:.1f} µs" if floor in add else "")
                  + (f"; the bare kernel alone with one wait {add['bare pyopencl, kernel only'][0]:.1f} µs."
                     if "bare pyopencl, kernel only" in add else "."), ""]
    if ALTERNATING:
        sync = ALTERNATING.get("sync")
        lines += [f"## The same, alternating: every mode once per round, the order rotating "
                  f"({ALTERNATING_ROUNDS} rounds)", "", "| mode | median per execution (µs) | ÷ sync |", "|---|---|---|"]
        lines += [f"| {m} | {v:.3f} | " + (f"{v / sync:.2f}" if sync else "–") + " |" for m, v in ALTERNATING.items()]
        lines += [""]
    mobile = MEASURED.get(MOBILENET_GROUP, {})
    if mobile:
        lines += ["## MobileNet v2 (float32, zoo weights)", "", *_per_mode_table(mobile, None), ""]
    lines += ["Reading: a mode timed in its own benchmark runs back to back, so PoCL's worker threads are still",
              "awake at the next submission; interleaved with other work (the alternating table) every",
              "submission pays their wake-up, bare PyOpenCL included.  Compare rows within one table.", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{today}-execution-modes.md").write_text("\n".join(lines))
