"""Kernel tile choice at preparation: time a few candidate specialisations of one kernel on the device
and keep the fastest.

A lowering with several valid register tilings (gpu_driver.ops.gemm) describes each as a
:class:`Trial` — the template, its defines, the global size and host data for its inputs — and asks
:func:`choose` for the index to emit.  Candidate 0 is the deterministic default: it is the answer
whenever tuning is off (``GPU_DRIVER_AUTOTUNE=0``), no device is compiling (:func:`tuning` not
active: reference-only tools, tests of lowering), the work is too small to matter, or this
compilation's time budget is spent.  Otherwise every candidate is built into one trial program,
launched alternately after a warm-up, and the fastest (minimum of the rounds) wins — but a
candidate replaces the default only when it is clearly faster (:data:`MARGIN`), so timing noise does
not flip choices.

The choice is baked into the kernel source, so the compiled artifact (compilation cache, driver's
private cache) carries it: a preparation from cache does not tune again.  Within a process the
choice is also kept per (device, key), so the same layer shape in another model is not re-timed.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from ..backends.base import LaunchTuning
from .codegen import instance_source
from .ir import KernelInstance, Work

log = logging.getLogger(__name__)

#: environment switch: "0" turns tuning off (every tunable kernel takes its default tile)
ENV_SWITCH = "GPU_DRIVER_AUTOTUNE"
#: the most time one compilation spends tuning (trial builds and launches), seconds
BUDGET_S = 0.5
#: work below this many flops keeps its default tile (launch overhead dominates)
MIN_FLOPS = 20_000_000
#: a candidate must beat the default by this factor to replace it
MARGIN = 0.93
#: timed rounds after one warm-up launch of every candidate
ROUNDS = 5


@dataclass
class Trial:
    """One candidate specialisation of a kernel: ``template`` with ``defines`` over ``global_size``
    work items shaped as ``work``, reading ``inputs`` (host arrays, in parameter order) and writing
    one output of ``output_nbytes``."""

    template: str
    defines: dict
    inputs: list[np.ndarray]
    output_nbytes: int
    global_size: tuple[int, ...]
    work: Work = Work.GRID


@dataclass
class _Session:
    backend: object
    deadline: float


@dataclass
class TuningStats:
    """What tuning did in this process (tests and logs): measured keys, cached answers."""

    measured: int = 0
    reused: int = 0
    choices: dict = field(default_factory=dict)


_session: contextvars.ContextVar[_Session | None] = contextvars.ContextVar("gpu_driver_tuning", default=None)
_target: contextvars.ContextVar[object | None] = contextvars.ContextVar("gpu_driver_target", default=None)
_lock = threading.Lock()
_DEFAULT_TUNING = LaunchTuning()  # what lowering outside a backend's compilation shapes kernels for
STATS = TuningStats()


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip() not in ("0", "false", "no", "off")


@contextlib.contextmanager
def tuning(backend, budget_s: float = BUDGET_S) -> Iterator[None]:
    """Lowering inside this block may time candidates on ``backend`` (a backends.base.BackendDevice),
    for at most ``budget_s`` seconds in all."""
    token = _session.set(_Session(backend, time.perf_counter() + budget_s) if enabled() else None)
    try:
        with lowering_for(backend.tuning):
            yield
    finally:
        _session.reset(token)


@contextlib.contextmanager
def lowering_for(launch_tuning) -> Iterator[None]:
    """Lowering inside this block shapes its kernels for a backend of ``launch_tuning``
    (backends.base.LaunchTuning) and measures nothing: what that backend would compile."""
    target = _target.set(launch_tuning)
    try:
        yield
    finally:
        _target.reset(target)


def target_tuning() -> LaunchTuning:
    """The launch tuning of the backend compiling now, tuned or not; outside :func:`tuning` and
    :func:`lowering_for` (reference-only tools, tests of lowering) LaunchTuning's defaults."""
    return _target.get() or _DEFAULT_TUNING


def forget() -> None:
    """Drop the choices remembered in this process (tests)."""
    with _lock:
        STATS.choices.clear()


def choose(key: tuple, count: int, flops: int, trial: Callable[[int], Trial]) -> int:
    """The index of the candidate to emit, among ``count``, for ``flops`` of work named ``key`` (every
    value that shapes the kernel except the tile); ``trial(i)`` describes candidate i (called only
    when measuring).  0, the default, unless tuning is active and a candidate is clearly faster."""
    session = _session.get()
    if session is None or count < 2 or flops < MIN_FLOPS:
        return 0
    backend = session.backend
    full_key = (backend.runtime, backend.device_name, key)
    with _lock:
        if full_key in STATS.choices:
            STATS.reused += 1
            return STATS.choices[full_key]
    if time.perf_counter() >= session.deadline:
        return 0
    trials = [trial(i) for i in range(count)]
    try:
        times = _measure(backend, trials)
    except Exception as exc:  # a trial that fails to build or run: keep the default
        log.warning("tuning %s failed, default tile kept: %s", key, exc)
        return 0
    best = min(range(len(trials)), key=lambda i: times[i])
    choice = best if times[best] < MARGIN * times[0] else 0
    with _lock:
        STATS.measured += 1
        STATS.choices[full_key] = choice
    log.debug("tuned %s: %s -> candidate %d", key, ["%.3f ms" % (t * 1e3) for t in times], choice)
    return choice


def _measure(backend, trials: Sequence[Trial]) -> list[float]:
    """Seconds per launch of every trial: one program, one warm-up each, then the minimum over
    :data:`ROUNDS` alternating rounds."""
    instances = [KernelInstance(t.template, t.defines, [], [], t.global_size, t.work, name=f"gd_trial{i}")
                 for i, t in enumerate(trials)]
    source = "\n".join([backend.compiler.prelude] + [instance_source(k, k.name) for k in instances]) + "\n"
    binary = backend.compiler.compile(source)
    launcher, allocator = backend.launcher, backend.allocator
    program = launcher.load(binary, [k.name for k in instances])
    launches = []
    for k, t in zip(instances, trials):
        args = []
        for array in t.inputs:
            buffer = allocator.alloc(array.nbytes)
            allocator.upload(buffer, array)
            args.append(buffer)
        args.append(allocator.alloc(t.output_nbytes))
        launches.append(launcher.make_launch(program, k.name, args, k.global_size,
                                             backend.tuning.local_size(k.work, k.global_size)))
    best = [float("inf")] * len(trials)
    for round_ in range(ROUNDS + 1):
        for i, launch in enumerate(launches):
            t0 = time.perf_counter()
            launcher.enqueue([launch])
            launcher.finish()
            if round_:
                best[i] = min(best[i], time.perf_counter() - t0)
    return best
