"""Execution traces in the Chrome trace / Perfetto JSON format: ``trace_execution`` and ``gpu-driver trace``.

:func:`trace_execution` runs a prepared model on numpy inputs (through :meth:`PreparedModel.execute`,
so the request is built and the outputs read back exactly as there) and records where the time goes
as ``"ph": "X"`` events (``ts`` / ``dur`` in µs from the start of the trace, ``pid`` 1) in a dict
``{"traceEvents": [...], "otherData": {...}}`` that ``chrome://tracing`` and ui.perfetto.dev open.
Host events are on thread 1, named "host"; device events on thread 2, named "device" (the names are
``"ph": "M"`` thread_name metadata events; the tids are numbers, which every viewer accepts).

What an event is depends on the prepared model:

- **accelerator** (AcceleratorPreparedModel): one device event per kernel launch of the plan —
  the kernel name, the graph node it lowers (operation index and type), global / local size, the
  host enqueue time in its args — timed by its OpenCL profiling event (the queue is created with
  PROFILING_ENABLE); a host event per enqueue, plus the phases "upload inputs" (the input copies
  and a wait for them), "kernels" (enqueue to the device finishing), "download outputs" and the
  whole "execution" (host wall time of the execute call).  The launches are enqueued one at a time
  and the host waits after the uploads and after the kernels, which a normal execution does not:
  the phases are separated, the kernels themselves run as always.  On a CPU device the first kernels
  share the cores with the host enqueueing the later ones, as in a normal execution (PoCL, 2 cores:
  hand_landmark_lite's first two kernels 129 and 78 µs, 99 and 61 µs with every launch enqueued
  before the first ran).  Device timestamps are on the host
  clock: the device clock is aligned to ``time.perf_counter_ns`` per run, at the least offset that puts
  no launch's CL_PROFILING_COMMAND_QUEUED before the host time just before its enqueue, so a
  kernel's device start is never before its enqueue.  A launcher whose timing marks
  have no OpenCL profile (CUDA) gets each kernel's measured duration placed back to back from
  the end of its enqueue.
- **accelerator, as steps** (ControlFlowPreparedModel: models with IF / WHILE or data-dependent
  output sizes): one host event per step of the main subgraph (a segment of operations prepared as
  a model of its own, a data-dependent operation, an IF or a WHILE: the time between its neighbours).
- **reference device**: one host event per operation of the main subgraph, timed by wrapping the
  reference executor's per-operation deadline check (its ExecutionLimits is given here, with a
  deadline that notes the time each operation starts); a model whose IF / WHILE run nested
  operations gets one event for the whole execution instead.
- anything else: one event for the whole execution.

The outputs of the traced execution are the returned trace's ``outputs`` attribute (not in the JSON).
"""
from __future__ import annotations

import copy
import json
import time
from typing import Sequence

import numpy as np

from .accelerator.control_flow import ControlFlowPreparedModel
from .accelerator.prepared_model import AcceleratorPreparedModel
from .reference.device import ReferencePreparedModel
from .reference.executor import ExecutionLimits

PID = 1
HOST_TID = 1
DEVICE_TID = 2


class Trace(dict):
    """The trace object (a JSON-ready dict); ``outputs``: the traced execution's outputs (last run)."""

    outputs: list = []


class _Recorder:
    """Events with timestamps relative to the trace's start (host ``perf_counter_ns``)."""

    def __init__(self):
        self.t0 = time.perf_counter_ns()
        self.events: list[dict] = []

    def add(self, name: str, cat: str, start_ns: int, end_ns: int, tid: int = HOST_TID, **args) -> None:
        self.events.append({"name": name, "cat": cat, "ph": "X", "ts": round((start_ns - self.t0) / 1e3, 3),
                            "dur": round(max(0, end_ns - start_ns) / 1e3, 3), "pid": PID, "tid": tid,
                            "args": args})


def trace_execution(prepared_model, inputs: Sequence[np.ndarray | None], path=None, runs: int = 1) -> Trace:
    """Run ``prepared_model`` on ``inputs`` ``runs`` times (events of every run, ``args.run`` numbering
    them) and return the trace; written as JSON to ``path`` when given.  See the module docstring."""
    rec = _Recorder()
    kind = _kind(prepared_model)
    outputs: list = []
    for run in range(max(1, int(runs))):
        start = time.perf_counter_ns()
        if kind == "kernels":
            outputs = _trace_kernels(prepared_model, inputs, rec, run)
        elif kind == "steps":
            outputs = _trace_steps(prepared_model, inputs, rec, run)
        elif kind == "operations":
            outputs, kind_run = _trace_operations(prepared_model, inputs, rec, run)
            kind = kind if kind_run else "execution"
        else:
            outputs = prepared_model.execute(list(inputs))
        rec.add("execution", "execution", start, time.perf_counter_ns(), run=run)
    meta = [{"name": "process_name", "ph": "M", "pid": PID, "tid": HOST_TID,
             "args": {"name": f"gpu_driver {getattr(prepared_model.device, 'name', '?')}"}},
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": HOST_TID, "args": {"name": "host"}},
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": DEVICE_TID, "args": {"name": "device"}}]
    trace = Trace(traceEvents=meta + rec.events, displayTimeUnit="ms",
                  otherData={"device": getattr(prepared_model.device, "name", "?"), "events": kind,
                             "runs": max(1, int(runs)),
                             "clock": "µs from the trace start on the host perf_counter; device timestamps "
                                      "aligned to it per run, no launch queued before its enqueue"})
    trace.outputs = outputs
    if path is not None:
        with open(path, "w") as f:
            json.dump(trace, f)
    return trace


def _kind(prepared_model) -> str:
    if isinstance(prepared_model, AcceleratorPreparedModel):
        return "kernels"
    if isinstance(prepared_model, ControlFlowPreparedModel):
        return "steps"
    if isinstance(prepared_model, ReferencePreparedModel):
        return "operations"
    return "execution"


def _with_method(prepared_model, name: str, method):
    """A shallow copy of ``prepared_model`` (same specialisations, locks, device) whose ``name`` is
    ``method``: the traced path, without touching the model other threads use."""
    twin = copy.copy(prepared_model)
    setattr(twin, name, method)
    return twin


# ---- accelerator: one event per kernel ---------------------------------------------------------------

def _trace_kernels(pm: AcceleratorPreparedModel, inputs, rec: _Recorder, run: int) -> list:
    launcher = pm.launcher
    operations = pm.model.main.operations

    def traced_execute(request, ctx):
        t = time.perf_counter_ns()
        spec = pm._specialization_for(request)  # compiles on a new input-shape signature
        rec.add("specialization", "host", t, time.perf_counter_ns(), run=run)
        exe = spec.exe
        shapes = pm.check_output_sizes(request, exe.output_shapes)
        with spec.lock:
            t = time.perf_counter_ns()
            staged = pm._bind_inputs(request, exe)
            launcher.finish()
            rec.add("upload inputs", "upload", t, time.perf_counter_ns(), run=run,
                    bytes=sum(n for _b, n in exe.inputs))
            launched = []  # (kernel, host ns before the enqueue, host ns after it, timing mark)
            t_kernels = time.perf_counter_ns()
            for kernel, launch in zip(exe.plan.kernels, exe.launches):
                before = time.perf_counter_ns()
                mark = launcher.enqueue([launch], True)
                after = time.perf_counter_ns()
                launched.append((kernel, before, after, mark))
                rec.add(f"enqueue {kernel.name}", "enqueue", before, after, run=run)
            word = exe.enqueue_status_read()
            launcher.finish()
            rec.add("kernels", "kernels", t_kernels, time.perf_counter_ns(), run=run, launches=len(launched))
            exe.check_status(word)
            t = time.perf_counter_ns()
            finish_steps: list = []
            for arg, (buffer, nbytes, shape) in zip(request.outputs, exe.outputs):
                pm.bind_output(arg, request.pools[arg.location.pool_index], buffer, nbytes, shape, blocking=False,
                               after=finish_steps)
            launcher.finish()
            for step in finish_steps:
                step()
            rec.add("download outputs", "download", t, time.perf_counter_ns(), run=run,
                    bytes=sum(n for _b, n, _s in exe.outputs))
            del staged
        _device_events(launcher, launched, operations, rec, run)
        return shapes, None

    return _with_method(pm, "_execute", traced_execute).execute(list(inputs))


def _device_events(launcher, launched: list, operations, rec: _Recorder, run: int) -> None:
    profiles = [getattr(mark[0] if mark else None, "profile", None) for *_, mark in launched]
    # host ns minus device ns: the least that puts no command's queued time before its enqueue began
    offsets = []
    for (_kernel, before, _after, _mark), profile in zip(launched, profiles):
        if profile is not None:
            try:
                offsets.append(before - int(profile.queued))
            except Exception:  # no CL_PROFILING_COMMAND_QUEUED: align the starts instead
                offsets.append(before - int(profile.start))
    offset = max(offsets) if offsets else None
    cursor = None  # without OpenCL profiles: where the next kernel starts
    for index, ((kernel, before, after, mark), profile) in enumerate(zip(launched, profiles)):
        node = kernel.node
        args = {"run": run, "launch": index, "kernel": kernel.name, "node": node,
                "operation": operations[node].type.name if 0 <= node < len(operations) else None,
                "template": kernel.template, "global_size": list(kernel.global_size),
                "local_size": None if kernel.local_size is None else list(kernel.local_size),
                "host_enqueue_us": round((before - rec.t0) / 1e3, 3)}
        if profile is not None and offset is not None:
            start, end = int(profile.start) + offset, int(profile.end) + offset
        else:
            duration = launcher.elapsed_ns(mark) or 0
            start = max(after, cursor or after)
            end = cursor = start + duration
        rec.add(kernel.name, "kernel", start, end, tid=DEVICE_TID, **args)


# ---- accelerator as steps: one event per step ---------------------------------------------------------

def _trace_steps(pm: ControlFlowPreparedModel, inputs, rec: _Recorder, run: int) -> list:
    steps = pm.program.steps
    times: dict[int, tuple[int, int]] = {}
    wrapped = []
    for k, step in enumerate(steps):
        if hasattr(step, "run"):  # a segment or a data-dependent step (IF / WHILE are operations)
            def timed(values, ctx, read, _k=k, _run=step.run):
                t = time.perf_counter_ns()
                try:
                    return _run(values, ctx, read)
                finally:
                    times[_k] = (t, time.perf_counter_ns())
            step.run = timed
            wrapped.append(step)
    start = time.perf_counter_ns()
    try:
        outputs = pm.execute(list(inputs))
    finally:
        for step in wrapped:
            del step.run
    end = time.perf_counter_ns()
    for k, step in enumerate(steps):
        if k in times:
            t0, t1 = times[k]
            ops = getattr(getattr(step, "model", None), "main", None)
            names = [op.type.name for op in ops.operations] if ops is not None else [step.op.type.name]
            rec.add(f"step {k}: " + (f"segment of {len(names)}" if ops is not None else names[0]), "step",
                    t0, t1, run=run, step=k, operations=names)
        else:  # IF / WHILE: from the end of the step before to the start of the step after
            t0 = max([times[j][1] for j in times if j < k], default=start)
            t1 = min([times[j][0] for j in times if j > k], default=end)
            rec.add(f"step {k}: {step.type.name}", "step", t0, t1, run=run, step=k, operations=[step.type.name])
    return outputs


# ---- reference device: one event per operation --------------------------------------------------------

class _OperationClock(ExecutionLimits):
    """ExecutionLimits whose deadline read (once per operation, before it runs: the executor's
    deadline check) notes the time; the deadline itself is passed through."""

    def __init__(self, deadline_ns, loop_timeout_ns):
        super().__init__(None, loop_timeout_ns)
        self._deadline = deadline_ns
        self.ticks: list[int] = []

    @property
    def deadline_ns(self):
        self.ticks.append(time.perf_counter_ns())
        return self._deadline

    @deadline_ns.setter
    def deadline_ns(self, value):
        self._deadline = value


def _trace_operations(pm: ReferencePreparedModel, inputs, rec: _Recorder, run: int) -> tuple[list, bool]:
    clock: list[_OperationClock] = []

    def traced_compute(values, ctx):
        limits = _OperationClock(ctx.deadline_ns, ctx.loop_timeout_ns)
        clock.append(limits)
        result = pm._executor.run(values, limits)
        limits.ticks.append(time.perf_counter_ns())
        return result, None

    outputs = _with_method(pm, "_compute", traced_compute).execute(list(inputs))
    ticks = clock[-1].ticks
    operations = pm.model.main.operations
    if len(ticks) != len(operations) + 1:  # IF / WHILE ran nested operations: the whole execution
        rec.add("reference execution", "operation", ticks[0], ticks[-1], run=run, operations=len(operations))
        return outputs, False
    for n, op in enumerate(operations):
        rec.add(op.type.name, "operation", ticks[n], ticks[n + 1], run=run, node=n, operation=op.type.name)
    return outputs, True


# ---- summary ----------------------------------------------------------------------------------------------

def summary(trace: dict, top: int = 10) -> list[dict]:
    """The ``top`` most expensive kernels (device events; operations or steps where there are none),
    grouped by name and operation: count, total and mean µs per run, share of the total."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["cat"] in ("kernel", "operation", "step")]
    runs = max(1, trace.get("otherData", {}).get("runs", 1))
    rows: dict[tuple, dict] = {}
    for e in events:
        key = (e["name"], e["args"].get("operation"))
        row = rows.setdefault(key, {"name": e["name"], "operation": key[1], "count": 0, "total_us": 0.0})
        row["count"] += 1
        row["total_us"] += e["dur"]
    total = sum(r["total_us"] for r in rows.values()) or 1.0
    for r in rows.values():
        r["count"] //= runs
        r["us_per_run"] = r["total_us"] / runs
        r["share"] = r["total_us"] / total
    return sorted(rows.values(), key=lambda r: -r["total_us"])[:top]


def format_summary(trace: dict, top: int = 10) -> str:
    """:func:`summary` as a text table."""
    rows = summary(trace, top)
    lines = [f"{'kernel':<40}{'operation':<24}{'launches':>9}{'µs/run':>11}{'share':>8}"]
    for r in rows:
        lines.append(f"{r['name'][:39]:<40}{str(r['operation'] or '')[:23]:<24}{r['count']:>9}"
                     f"{r['us_per_run']:>11.1f}{r['share'] * 100:>7.1f}%")
    return "\n".join(lines)
