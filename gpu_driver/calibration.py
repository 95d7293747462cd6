"""Capability calibration: the measured performance vectors a device reports (HAL getCapabilities_1_3).

interface.md §3.1: every PerformanceInfo is a ratio to the CPU reference doing the same work
(lower is better).  For each operand type that a device's operations can take as first input we run a
small, fixed workload whose operations all take that type first, on the device and on the reference
device, and report the median over ROUNDS rounds of time(device) / time(reference), the two timed
back to back in every round (alternating which goes first), after warm-up runs of both: a round's
ratio compares the two at the same moment, so a machine that speeds up or slows down during the
measurement moves both.  The spread of the per-round ratios (interquartile range / median) comes with
each figure.  Types the device cannot run any workload of stay FLT_MAX (never chosen).  Energy is not observable from here, so ``power_usage`` repeats the
time ratio (energy ∝ time at equal power) — stated, not measured.

Figures are measured once per device and driver version and persisted in the state directory
(gpu_driver.state), so they are stable across restarts; ``gpu-driver calibrate`` re-measures them.
"""
from __future__ import annotations

import json
import statistics
import time
from typing import Callable

import numpy as np

from .builder import ModelBuilder
from .hal.model import Model
from .hal.types import (Capabilities, OperandPerformance, OperandType, OperationType, PerformanceInfo)
from .reference.device import ReferenceDevice
from .state import atomic_write, state_dir_for

T, O = OperandType, OperationType
CALIBRATION_FILE = "capabilities.json"
FORMAT = 3


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


def median_execution_seconds(prepared, feed: np.ndarray, repeats: int) -> float:
    """Median wall time of ``prepared.execute([feed])`` over ``repeats`` runs, after one warm-up."""
    prepared.execute([feed])  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        prepared.execute([feed])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


#: timed rounds per workload, and untimed warm-up executions of each side before them
ROUNDS, WARMUP = 41, 5


def _timed(prepared, feed: np.ndarray) -> float:
    t0 = time.perf_counter()
    prepared.execute([feed])
    return time.perf_counter() - t0


def measure_ratio(mine, ref, feed: np.ndarray, rounds: int = ROUNDS) -> tuple[float, float]:
    """(median, spread) of time(mine) / time(ref) over ``rounds`` back-to-back pairs (the order
    alternating), after WARMUP runs of each; spread = interquartile range / median of the ratios."""
    for _ in range(WARMUP):
        mine.execute([feed])
        ref.execute([feed])
    ratios = []
    for r in range(rounds):
        if r % 2:
            t_ref = _timed(ref, feed)
            t_mine = _timed(mine, feed)
        else:
            t_mine = _timed(mine, feed)
            t_ref = _timed(ref, feed)
        ratios.append(t_mine / t_ref)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return float(median), float((q3 - q1) / median)


def measure(device, rounds: int = ROUNDS, spreads: dict[str, float] | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Measure device/reference time ratios per operand type (types the device can't run are left
    out); ``spreads`` (when given) receives each figure's spread, ``progress`` a line per workload."""
    reference = ReferenceDevice()
    ratios: dict[str, float] = {}
    for operand_type, workload in WORKLOADS.items():
        model, feed = workload()
        if not all(device.get_supported_operations(model)):
            continue
        if progress:
            progress(f"{device.name}: {operand_type.name} workload, {rounds} alternating rounds")
        median, spread = measure_ratio(device.prepare_model(model), reference.prepare_model(model), feed, rounds)
        ratios[operand_type.name] = float(f"{max(median, 1e-4):.4g}")
        if spreads is not None:
            spreads[operand_type.name] = spread
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
    """HAL Capabilities from per-type ratios: an unmeasured type takes the figure DERIVED_FROM names
    (FLT_MAX when that is not measured either), SUBGRAPH/OEM never listed, relaxed float32 = the
    float32 figure (the kernels run float32 even when fp16 would be allowed), IF/WHILE FLT_MAX (their
    overhead is not measured)."""
    types = sorted(t for t in OperandType if t not in (T.SUBGRAPH, T.OEM, T.TENSOR_OEM_BYTE))
    table = []
    for t in types:
        r = ratios.get(t.name)
        if r is None and t in DERIVED_FROM:
            r = ratios.get(DERIVED_FROM[t].name)
        table.append(OperandPerformance(t, PerformanceInfo(r, r) if r else PerformanceInfo()))
    f32 = ratios.get("TENSOR_FLOAT32")
    relaxed = PerformanceInfo(f32, f32) if f32 else PerformanceInfo()
    return Capabilities(relaxed, relaxed, table, PerformanceInfo(), PerformanceInfo())
