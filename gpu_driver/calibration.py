"""Capability calibration: the measured performance vectors a device reports (HAL getCapabilities_1_3).

interface.md §3.1: every PerformanceInfo is a ratio to the CPU reference doing the same work
(lower is better).  For each operand type that a device's operations can take as first input we run a
small, fixed workload whose operations all take that type first, on the device and on the reference
device, and report the median over ROUNDS rounds of time(device) / time(reference), the two timed
back to back in every round (alternating which goes first), after warm-up runs of both: a round's
ratio compares the two at the same moment, so a machine that speeds up or slows down during the
measurement moves both.  The spread of the per-round ratios (interquartile range / median) comes with
each figure.  Types the device cannot run any workload of stay FLT_MAX (never chosen).

``if_performance`` / ``while_performance`` (interface.md §3.1: IF cost = ifPerformance + the branches'
cost, WHILE cost = whilePerformance + condition + body) are the control-flow overhead: a model with an
IF (or a WHILE of LOOP_ITERATIONS iterations) around a trivial body, less the same tensor work without
control flow, on the device over the same on the reference; every round times the four models back to
back (the order reversing each round), the figure is the ratio of the two differences' medians.

Energy is not observable from here, so ``power_usage`` repeats the time ratio (energy ∝ time at equal
power) — stated, not measured.

Figures are measured once per device and driver version and persisted in the state directory
(gpu_driver.state), so they are stable across restarts; ``gpu-driver calibrate`` re-measures them.
"""
from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np

from .builder import ModelBuilder
from .hal.model import Model
from .hal.types import (Capabilities, OperandPerformance, OperandType, OperationType, PerformanceInfo)
from .latency import warm_up
from .reference.device import ReferenceDevice
from .state import atomic_write, state_dir_for

T, O = OperandType, OperationType
CALIBRATION_FILE = "capabilities.json"
FORMAT = 4


def _conv_block(quantized: bool) -> tuple[Model, np.ndarray]:
    """1×32×32×16 → CONV 3×3 (16→32, RELU) → DEPTHWISE 3×3 → ADD (residual) → AVG_POOL → FC(10)."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    if quantized:
        t = T.TENSOR_QUANT8_ASYMM
        def weights(shape):
            return b.add_constant(t, shape, rng.integers(100, 156, shape), scale=0.02, zero_point=128)
        def bias(n, in_scale):
            return b.add_constant(T.TENSOR_INT32, [n], rng.integers(-50, 50, n), scale=in_scale * 0.02)
        def act(shape, scale=0.1, zero_point=128):
            return b.add_operand(t, shape, scale=scale, zero_point=zero_point)
        x = b.add_input(t, [1, 32, 32, 16], scale=0.05, zero_point=128)
        feed = rng.integers(0, 256, (1, 32, 32, 16)).astype(np.uint8)
    else:
        t = T.TENSOR_FLOAT32
        def weights(shape):
            return b.add_constant(t, shape, rng.standard_normal(shape).astype(np.float32) * 0.2)
        def bias(n, in_scale):
            return b.add_constant(t, [n], rng.standard_normal(n).astype(np.float32) * 0.1)
        def act(shape, scale=0.0, zero_point=0):
            return b.add_operand(t, shape)
        x = b.add_input(t, [1, 32, 32, 16])
        feed = rng.standard_normal((1, 32, 32, 16)).astype(np.float32)
    i32 = lambda v: b.add_scalar(T.INT32, v)  # noqa: E731
    same, one, relu, none = i32(1), i32(1), i32(1), i32(0)
    c1 = act([1, 32, 32, 32])
    b.add_operation(O.CONV_2D, [x, weights([32, 3, 3, 16]), bias(32, 0.05), same, one, one, relu], [c1])
    c2 = act([1, 32, 32, 32])
    b.add_operation(O.DEPTHWISE_CONV_2D, [c1, weights([1, 3, 3, 32]), bias(32, 0.1), same, one, one, one, relu], [c2])
    s = act([1, 32, 32, 32], scale=0.2)
    b.add_operation(O.ADD, [c1, c2, none], [s])
    p = act([1, 1, 1, 32], scale=0.2)
    b.add_operation(O.AVERAGE_POOL_2D, [s, i32(2), i32(32), i32(32), i32(32), i32(32), none], [p])
    logits = act([1, 10], scale=0.5)
    b.add_operation(O.FULLY_CONNECTED, [p, weights([10, 32]), bias(10, 0.2), none], [logits])
    b.set_outputs([logits])
    return b.finish(), feed


#: rows gathered by the INT32 workload: enough work that the device, not the per-execution overhead,
#: is measured
LOOKUP_ROWS = 16384


def _lookup_block() -> tuple[Model, np.ndarray]:
    """EMBEDDING_LOOKUP of LOOKUP_ROWS rows from a 4096×64 float32 table (first input TENSOR_INT32)."""
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    lookups = b.add_input(T.TENSOR_INT32, [LOOKUP_ROWS])
    table = b.add_constant(T.TENSOR_FLOAT32, [4096, 64], rng.standard_normal((4096, 64)).astype(np.float32))
    out = b.add_operand(T.TENSOR_FLOAT32, [LOOKUP_ROWS, 64])
    b.add_operation(O.EMBEDDING_LOOKUP, [lookups, table], [out])
    b.set_outputs([out])
    return b.finish(), rng.integers(0, 4096, LOOKUP_ROWS).astype(np.int32)


#: operand type → workload whose every operation takes that type as its first input
WORKLOADS: dict[OperandType, Callable[[], tuple[Model, np.ndarray]]] = {
    T.TENSOR_FLOAT32: lambda: _conv_block(False),
    T.TENSOR_QUANT8_ASYMM: lambda: _conv_block(True),
    T.TENSOR_INT32: _lookup_block,
}


#: timed rounds per workload, and untimed warm-up executions of each side before them
ROUNDS, WARMUP = 41, 5


def paired_rounds(sides: list[tuple[object, list]], rounds: int, batch: int = 1, min_seconds: float = 0.0,
                  max_rounds: int | None = None,
                  on_round: Callable[[int, float], None] | None = None, warm_up_s: float = 0.0) -> np.ndarray:
    """Seconds per execution of each ``(prepared, inputs)`` side in each round: (sides × rounds run).

    WARMUP untimed executions of every side first; then every round times each side (``batch``
    executions back to back, averaged) one after the other, the order reversing every round, so
    that drift of the machine hits every side alike.  With ``warm_up_s``, each side first runs
    untimed that long in every round (its steady state: gpu_driver.latency).  At least ``rounds``
    rounds, more until the rounds took ``min_seconds`` in all, their warm-ups included (at most
    ``max_rounds``); ``on_round(rounds done, seconds so far)`` after each."""
    for _ in range(WARMUP):
        for prepared, inputs in sides:
            prepared.execute(inputs)
    order = list(range(len(sides)))
    columns: list[list[float]] = []
    elapsed = 0.0
    cap = max_rounds if max_rounds is not None else float("inf")
    while len(columns) < rounds or (elapsed < min_seconds and len(columns) < cap):
        column = [0.0] * len(sides)
        for k in (order if len(columns) % 2 == 0 else order[::-1]):
            prepared, inputs = sides[k]
            started = time.perf_counter()
            if warm_up_s:
                warm_up(lambda: prepared.execute(inputs), warm_up_s)
            t0 = time.perf_counter()
            for _ in range(batch):
                prepared.execute(inputs)
            done = time.perf_counter()
            column[k] = (done - t0) / batch
            elapsed += done - started
        columns.append(column)
        if on_round:
            on_round(len(columns), elapsed)
    return np.array(columns).T


def median_and_spread(ratios) -> tuple[float, float]:
    """(median, interquartile range / median) of per-round ratios."""
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return float(median), float((q3 - q1) / abs(median)) if median else float("inf")


def measure_ratio(mine, ref, feed: np.ndarray, rounds: int = ROUNDS) -> tuple[float, float]:
    """(median, spread) of time(mine) / time(ref) over ``rounds`` back-to-back pairs (see
    :func:`paired_rounds`); spread = interquartile range / median of the ratios."""
    mine_s, ref_s = paired_rounds([(mine, [feed]), (ref, [feed])], rounds)
    return median_and_spread(mine_s / ref_s)


#: executions per timed sample of the control-flow workloads: their overhead is a difference of two
#: sub-millisecond times, so each sample averages a few
CONTROL_FLOW_BATCH = 10
#: iterations of the WHILE workload's loop
LOOP_ITERATIONS = 4
#: elements of the control-flow workloads' tensor (a trivial body: one ADD)
CONTROL_FLOW_ELEMENTS = 1024


def _add_constant(b: ModelBuilder, x: int, shape: list[int], value: float) -> int:
    r = b.add_operand(T.TENSOR_FLOAT32, shape)
    b.add_operation(O.ADD, [x, b.add_constant(T.TENSOR_FLOAT32, shape, np.full(shape, value, np.float32)),
                            b.add_scalar(T.INT32, 0)], [r])
    return r


def _add_chain(count: int) -> Model:
    """x + 1, ``count`` times: the tensor work of the control-flow workloads without control flow."""
    b = ModelBuilder()
    y = x = b.add_input(T.TENSOR_FLOAT32, [CONTROL_FLOW_ELEMENTS])
    for _ in range(count):
        y = _add_constant(b, y, [CONTROL_FLOW_ELEMENTS], 1.0)
    b.set_outputs([y])
    return b.finish()


def _if_block() -> tuple[Model, list[np.ndarray], Model, list[np.ndarray]]:
    """IF cond THEN x + 1 ELSE x + 2; the same without control flow: x + 1."""
    n = CONTROL_FLOW_ELEMENTS
    branches = []
    for value in (1.0, 2.0):
        branch = ModelBuilder()
        branch.set_outputs([_add_constant(branch, branch.add_input(T.TENSOR_FLOAT32, [n]), [n], value)])
        branches.append(branch)
    b = ModelBuilder()
    cond, x = b.add_input(T.TENSOR_BOOL8, [1]), b.add_input(T.TENSOR_FLOAT32, [n])
    y = b.add_operand(T.TENSOR_FLOAT32, [n])
    b.add_operation(O.IF, [cond, b.add_subgraph(branches[0]), b.add_subgraph(branches[1]), x], [y])
    b.set_outputs([y])
    feed = np.random.default_rng(13).standard_normal(n).astype(np.float32)
    return b.finish(), [np.array([True]), feed], _add_chain(1), [feed]


def _while_block() -> tuple[Model, list[np.ndarray], Model, list[np.ndarray]]:
    """WHILE i < LOOP_ITERATIONS: i, x = i + 1, x + 1 (the loop counter in float32); the same without
    control flow: x + 1 LOOP_ITERATIONS times (counter, condition and its read-back are the overhead)."""
    n = CONTROL_FLOW_ELEMENTS
    cond = ModelBuilder()
    ci, _cx, climit = (cond.add_input(T.TENSOR_FLOAT32, dims) for dims in ([1], [n], [1]))
    going = cond.add_operand(T.TENSOR_BOOL8, [1])
    cond.add_operation(O.LESS, [ci, climit], [going])
    cond.set_outputs([going])
    body = ModelBuilder()
    bi, bx, _blimit = (body.add_input(T.TENSOR_FLOAT32, dims) for dims in ([1], [n], [1]))
    body.set_outputs([_add_constant(body, bi, [1], 1.0), _add_constant(body, bx, [n], 1.0)])
    b = ModelBuilder()
    i, x, limit = (b.add_input(T.TENSOR_FLOAT32, dims) for dims in ([1], [n], [1]))
    i_out, x_out = b.add_operand(T.TENSOR_FLOAT32, [1]), b.add_operand(T.TENSOR_FLOAT32, [n])
    b.add_operation(O.WHILE, [b.add_subgraph(cond), b.add_subgraph(body), i, x, limit], [i_out, x_out])
    b.set_outputs([x_out])
    feed = np.random.default_rng(17).standard_normal(n).astype(np.float32)
    loop_feed = [np.zeros(1, np.float32), feed, np.full(1, LOOP_ITERATIONS, np.float32)]
    return b.finish(), loop_feed, _add_chain(LOOP_ITERATIONS), [feed]


#: capability figure → workload: (control-flow model, its inputs, the same work without, its inputs)
CONTROL_FLOW_WORKLOADS: dict[str, Callable[[], tuple[Model, list, Model, list]]] = {
    "IF": _if_block,
    "WHILE": _while_block,
}


def measure_overhead_ratio(mine: tuple, mine_plain: tuple, ref: tuple, ref_plain: tuple,
                           rounds: int = ROUNDS, batch: int = CONTROL_FLOW_BATCH) -> tuple[float, float]:
    """(ratio, spread) of the control-flow overhead on a device to the reference's: the median over
    ``rounds`` of the paired difference mine − mine_plain over that of ref − ref_plain (a ratio of
    medians: a round whose reference overhead is lost in noise cannot blow it up); spread = the sum
    of the two differences' interquartile range / median.  Each argument a ``(prepared, inputs)``."""
    t = paired_rounds([mine, mine_plain, ref, ref_plain], rounds, batch)
    (mine_overhead, mine_spread), (ref_overhead, ref_spread) = (median_and_spread(t[0] - t[1]),
                                                                median_and_spread(t[2] - t[3]))
    return mine_overhead / ref_overhead, mine_spread + ref_spread


def _figure(value: float) -> float:
    return float(f"{max(value, 1e-4):.4g}")


def measure(device, rounds: int = ROUNDS, spreads: dict[str, float] | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Measure device/reference time ratios per operand type and the IF / WHILE overhead ratios
    (figures the device can't run are left out); ``spreads`` (when given) receives each figure's
    spread, ``progress`` a line per workload."""
    reference = ReferenceDevice()
    spreads = {} if spreads is None else spreads
    ratios: dict[str, float] = {}
    for operand_type, workload in WORKLOADS.items():
        model, feed = workload()
        if not all(device.get_supported_operations(model)):
            continue
        if progress:
            progress(f"{device.name}: {operand_type.name} workload, {rounds} alternating rounds")
        median, spreads[operand_type.name] = measure_ratio(device.prepare_model(model),
                                                           reference.prepare_model(model), feed, rounds)
        ratios[operand_type.name] = _figure(median)
    for name, workload in CONTROL_FLOW_WORKLOADS.items():
        flow, flow_feed, plain, plain_feed = workload()
        if not (all(device.get_supported_operations(flow)) and all(device.get_supported_operations(plain))):
            continue
        if progress:
            progress(f"{device.name}: {name} overhead, {rounds} alternating rounds")
        median, spreads[name] = measure_overhead_ratio(
            (device.prepare_model(flow), flow_feed), (device.prepare_model(plain), plain_feed),
            (reference.prepare_model(flow), flow_feed), (reference.prepare_model(plain), plain_feed), rounds)
        ratios[name] = _figure(median)
    return ratios


def _key(device) -> str:
    return f"{device.name}|{device.get_version_string()}"


def load(device) -> dict[str, float] | None:
    """The persisted ratios of ``device`` for this driver version, or None."""
    try:
        data = json.loads((state_dir_for(device) / CALIBRATION_FILE).read_text())
        entry = data.get(_key(device)) if data.get("format") == FORMAT else None
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(entry, dict) and all(isinstance(v, (int, float)) and v > 0 for v in entry.values()):
        return {k: float(v) for k, v in entry.items()}
    return None


def store(device, ratios: dict[str, float]) -> None:
    path = state_dir_for(device) / CALIBRATION_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text())
            if data.get("format") != FORMAT:
                data = {}
        except (OSError, ValueError, AttributeError):
            data = {}
        data["format"] = FORMAT
        data[_key(device)] = ratios
        data[_key(device) + "|measured"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True).encode())
    except OSError:
        pass  # an unwritable state directory costs a re-measurement next time, nothing else


def measured_at(device) -> str | None:
    """When the persisted figures of ``device`` were measured (local time), or None."""
    try:
        data = json.loads((state_dir_for(device) / CALIBRATION_FILE).read_text())
        when = data.get(_key(device) + "|measured") if data.get("format") == FORMAT else None
    except (OSError, ValueError, AttributeError):
        return None
    return when if isinstance(when, str) else None


def calibrate(device, force: bool = False, spreads: dict[str, float] | None = None,
              progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """The device's ratios: persisted ones unless ``force``; otherwise measured now and persisted
    (``spreads`` and ``progress`` as in :func:`measure`)."""
    ratios = None if force else load(device)
    if ratios is None:
        ratios = measure(device, spreads=spreads, progress=progress)
        store(device, ratios)
    return ratios


#: an operand type that is not measured takes the figure of the measured type whose kernels do the
#: same arithmetic: float16 is stored as half and computed in float32; the other 8-bit quantized
#: types run the quant8-asymm kernels' integer arithmetic; 16-bit, boolean and unsigned types the
#: int32 kernels'.  Scalars take their tensor type's figure.
DERIVED_FROM = {
    T.FLOAT32: T.TENSOR_FLOAT32, T.FLOAT16: T.TENSOR_FLOAT32, T.TENSOR_FLOAT16: T.TENSOR_FLOAT32,
    T.INT32: T.TENSOR_INT32, T.UINT32: T.TENSOR_INT32, T.BOOL: T.TENSOR_INT32, T.TENSOR_BOOL8: T.TENSOR_INT32,
    T.TENSOR_QUANT16_SYMM: T.TENSOR_INT32, T.TENSOR_QUANT16_ASYMM: T.TENSOR_INT32,
    T.TENSOR_QUANT8_ASYMM_SIGNED: T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM: T.TENSOR_QUANT8_ASYMM,
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: T.TENSOR_QUANT8_ASYMM,
}


def capabilities(ratios: dict[str, float]) -> Capabilities:
    """HAL Capabilities from measured ratios (operand type names, "IF", "WHILE"): an unmeasured type
    takes the figure DERIVED_FROM names (FLT_MAX when that is not measured either), SUBGRAPH/OEM never
    listed, relaxed float32 = the float32 figure (the kernels run float32 even when fp16 would be
    allowed), IF/WHILE their measured overhead ratio (FLT_MAX when not measured)."""
    def info(r: float | None) -> PerformanceInfo:
        return PerformanceInfo(r, r) if r else PerformanceInfo()

    types = sorted(t for t in OperandType if t not in (T.SUBGRAPH, T.OEM, T.TENSOR_OEM_BYTE))
    table = [OperandPerformance(t, info(ratios.get(t.name) or (ratios.get(DERIVED_FROM[t].name)
                                                                  if t in DERIVED_FROM else None)))
             for t in types]
    relaxed = info(ratios.get("TENSOR_FLOAT32"))
    return Capabilities(relaxed, relaxed, table, info(ratios.get("IF")), info(ratios.get("WHILE")))


def figure_sources(ratios: dict[str, float]) -> dict[str, str]:
    """How each figure of :func:`capabilities` (operand type names, "IF", "WHILE") came about:
    "calibrated" (measured), "calibrated as <TYPE>" (DERIVED_FROM) or "default" (FLT_MAX)."""
    sources = {}
    for t in OperandType:
        if t.name in ratios:
            sources[t.name] = "calibrated"
        elif t in DERIVED_FROM and DERIVED_FROM[t].name in ratios:
            sources[t.name] = f"calibrated as {DERIVED_FROM[t].name}"
        else:
            sources[t.name] = "default"
    for name in CONTROL_FLOW_WORKLOADS:
        sources[name] = "calibrated" if name in ratios else "default"
    return sources
