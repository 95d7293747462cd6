"""``gpu-driver``: list devices (``info``), run a TF Lite model (``run``), benchmark devices — the zoo
MobileNets against the reference device, or ``.tflite`` models against TF Lite on the CPU
(``bench``) — measure the capability figures they report (``calibrate``), write a model's graph
(``dump``), trace an execution kernel by kernel (``trace``) and host the devices for client processes
(``serve``)."""
from __future__ import annotations

import argparse
import importlib
import sys
import time

from . import calibration, console
from . import zoo as models
from .errors import DriverError
from .hal.types import FLT_MAX, ErrorStatus
from .latency import BLAS_SPIN_S
from .runtime.discovery import get_device, get_devices
from .version import __version__

#: backend name → (the Python module its devices need, its display name, the pip extra that installs it,
#: the hardware it drives)
BACKEND_RUNTIMES = {"cuda": ("cupy", "CuPy", "cuda", "CUDA GPU"),
                    "opencl": ("pyopencl", "PyOpenCL", "opencl", "OpenCL device")}


def _backend_hint(name: str) -> str | None:
    """Why there is no device of the backend that ``name`` ("cuda", "cuda:1", "opencl", …) names, as advice;
    None when ``name`` is no backend's or that backend has devices (the error lists them)."""
    backend = name.split(":")[0]
    if backend not in BACKEND_RUNTIMES or any(d.name.startswith(backend + ":") for d in get_devices()):
        return None
    module, title, extra, hardware = BACKEND_RUNTIMES[backend]
    try:
        importlib.import_module(module)
    except ImportError:
        return (f"{hardware}s need {title}, which is not installed: pip install 'gpu_driver[{extra}]' "
                f"(from a checkout: pip install -e '.[{extra}]')")
    except Exception as exc:  # installed but broken (e.g. a missing runtime library)
        return f"{title} is installed but fails to import ({type(exc).__name__}: {exc})"
    return f"{title} is installed but finds no usable {hardware}"


def _device(name: str | None):
    """The device named on the command line (default: the best one), with advice on a missing backend."""
    if name is None:
        return get_device()
    try:
        return get_device(name)
    except DriverError as exc:
        hint = _backend_hint(name)
        if hint is None:
            raise
        raise DriverError(exc.status, f"{exc.message}. {hint}") from None


def _info(args) -> int:
    for d in get_devices():
        print(f"{d.name}")
        print(f"  type:         {d.get_type().name}")
        print(f"  rank:         {d.rank}")
        print(f"  version:      {d.get_version_string()}")
        print(f"  cache files:  {d.get_number_of_cache_files_needed()} (model, data)")
        caps = d.get_capabilities()
        if d.name == "reference":
            print("  figures:      the unit of every ratio (1 by definition)")
            _print_capabilities(caps, {}, "unit")
            continue
        when, stored = calibration.measured_at(d), calibration.load(d)
        print(f"  figures:      calibrated {when} (gpu-driver calibrate re-measures them)" if when else
              "  figures:      measured now, not stored (the state directory could not keep them)")
        _print_capabilities(caps, calibration.figure_sources(stored) if stored is not None else {},
                            "measured now")
    return 0


def _print_capabilities(caps, sources: dict[str, str], unknown: str = "default") -> None:
    """The capability figures as a table; ``sources`` (calibration.figure_sources) says for each whether
    it is calibrated or a default (FLT_MAX); ``unknown`` stands for a finite figure it does not name."""
    def row(name: str, info, source_of: str) -> tuple[str, str, str, str]:
        if info.exec_time >= FLT_MAX:
            return name, "FLT_MAX", "FLT_MAX", "default"
        source = sources.get(source_of, unknown)
        if source_of != name and source == "calibrated":
            source = f"calibrated as {source_of}"
        return name, f"{info.exec_time:.4g}", f"{info.power_usage:.4g}", source

    rows = [row(p.type.name, p.info, p.type.name) for p in caps.operand_performance if p.info.exec_time < FLT_MAX]
    for name, info in (("relaxed fp32→fp16 (scalar)", caps.relaxed_float32_to_float16_performance_scalar),
                       ("relaxed fp32→fp16 (tensor)", caps.relaxed_float32_to_float16_performance_tensor)):
        if info.exec_time < FLT_MAX:
            rows.append(row(name, info, "TENSOR_FLOAT32"))
    rows += [row("IF", caps.if_performance, "IF"), row("WHILE", caps.while_performance, "WHILE")]
    print("  capabilities (execTime / powerUsage relative to the reference device; lower is better; "
          "other operand types: not supported, FLT_MAX):")
    print(_indent(console.render_table(["figure", "execTime", "powerUsage", "source"], rows,
                                       text_columns=["source"])))


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _calibrate(args) -> int:
    devices = get_devices() if args.device is None else [_device(args.device)]
    for d in devices:
        if d.name == "reference":
            print("reference: the unit of every ratio (1 for every operand type); nothing to measure")
            continue
        spreads: dict[str, float] = {}
        workloads = len(calibration.WORKLOADS) + len(calibration.CONTROL_FLOW_WORKLOADS)
        with console.progress(total=workloads, message=f"{d.name}: calibrating") as report:
            ratios = calibration.calibrate(d, force=True, spreads=spreads,
                                           progress=report.step)
        print(f"{d.name}: re-measured and stored in {calibration.state_dir_for(d) / calibration.CALIBRATION_FILE}")
        print(_indent(console.render_table(
            ["figure", "ratio", f"spread of the {calibration.ROUNDS} rounds"],
            [(name, f"{ratio:.4g}", f"{spreads[name]:.1%}") for name, ratio in ratios.items()]), "  "))
        stored = calibration.load(d) or {}
        _print_capabilities(calibration.capabilities(stored), calibration.figure_sources(stored))
    return 0


def _pair(text: str, cast, what: str) -> tuple:
    """"LOW,HIGH" as two values of type ``cast`` (argparse's usage error otherwise)."""
    try:
        lo, hi = (cast(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH{what}, got {text!r}") from None
    return lo, hi


def _parse_range(text: str) -> tuple[float, float]:
    lo, hi = _pair(text, float, "")
    if not lo < hi:
        raise argparse.ArgumentTypeError(f"LOW must be below HIGH, got {text!r}")
    return lo, hi


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _parse_int_range(text: str) -> tuple[int, int]:
    lo, hi = _pair(text, int, " integers")
    if not lo <= hi:
        raise argparse.ArgumentTypeError(f"LOW must not be above HIGH, got {text!r}")
    return lo, hi


def _add_int_range(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--int-range", type=_parse_int_range, default=None, metavar="LOW,HIGH",
                        help="inclusive range of random integer inputs, e.g. token ids (default -128,255 "
                             "clipped to the type)")


def _integer_hint(inputs, given, int_range) -> str:
    """What to do when an execution on random inputs fails and some were integers: those are often
    indices (token ids) a model takes only in a range.  Empty when no integer input was drawn."""
    drawn = [s.name for s in inputs if s.dtype.kind in "iu" and s.name not in given]
    if not drawn:
        return ""
    return (f"random integer inputs {', '.join(drawn)} were drawn from [{int_range[0]}, {int_range[1]}]: "
            "give --int-range LOW,HIGH")


def _run(args) -> int:
    import numpy as np

    from . import tflite
    from .mlts.session import DEFAULT_INT_RANGE, random_inputs

    device = _device(args.device)
    int_range = args.int_range or DEFAULT_INT_RANGE
    imported = tflite.load_model(args.model)
    given = {}
    for item in args.input or []:
        name, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"gpu-driver: --input expects NAME=FILE.npy, got {item!r}")
        given[name] = np.load(path)
    names_given = set(given)
    feed = random_inputs(imported.inputs, *args.range, int_range=int_range)
    for k, spec in enumerate(imported.inputs):
        if spec.name in given:
            feed[k] = np.asarray(given.pop(spec.name), dtype=spec.dtype)
    if given:
        raise SystemExit(f"gpu-driver: no model input named {', '.join(given)} "
                         f"(inputs: {', '.join(s.name for s in imported.inputs)})")
    t0 = time.perf_counter()
    prepared = device.prepare_model(imported.model)
    prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        outputs = prepared.execute(feed)
    except DriverError as exc:
        hint = _integer_hint(imported.inputs, names_given, int_range)
        if hint:
            raise SystemExit(f"gpu-driver: {exc}\n  ({hint} or --input NAME=FILE.npy)") from None
        raise
    run_ms = (time.perf_counter() - t0) * 1e3
    print(f"{args.model} on {device.name}: prepared in {prep:.2f} s, executed in {run_ms:.2f} ms")
    for spec, out in zip(imported.outputs, outputs):
        out = np.asarray(out)
        low, high, mean = (out.min(), out.max(), out.mean()) if out.size else (0, 0, 0)
        print(f"  {spec.name}: shape {list(out.shape)} {out.dtype}, min {low:.4g}, max {high:.4g}, mean {mean:.4g}")
    if args.output:
        np.savez(args.output, **{spec.name: np.asarray(o) for spec, o in zip(imported.outputs, outputs)})
        print(f"outputs written to {args.output}")
    return 0


def _bench_models(args, device) -> int:
    from .mlts.report import html_report, table
    from .mlts.session import DEFAULT_INT_RANGE, ModelResult, benchmark_model

    results = []
    if args.compare:
        print(f"threads: {args.threads} for LiteRT and for PoCL's worker threads")
    for path in args.models:
        try:
            with console.progress(message=path) as report:
                results.append(benchmark_model(path, device, runs=args.runs, compare=args.compare,
                                               threads=args.threads, input_range=args.range,
                                               int_range=args.int_range or DEFAULT_INT_RANGE, progress=report))
        except (DriverError, OSError) as exc:
            error = str(exc)
            if isinstance(exc, DriverError) and exc.status == ErrorStatus.GENERAL_FAILURE:  # a failed execution
                from . import tflite
                hint = _integer_hint(tflite.load_model(path).inputs, (), args.int_range or DEFAULT_INT_RANGE)
                error += f" ({hint})" if hint else ""
            results.append(ModelResult(path, device.name, 0, 0.0, None, None, None, None, [], error=error))
    print(table(results))
    if args.html:
        with open(args.html, "w") as f:
            f.write(html_report(results))
        print(f"report written to {args.html}")
    return 0 if all(r.error is None and all(v.verdict != "fail" for v in r.accuracy) for r in results) else 1


#: timing of the zoo benchmark: device and reference alternate, one execution each per round, for at
#: least BENCH_MIN_ROUNDS rounds and BENCH_SECONDS per model (at most BENCH_MAX_ROUNDS), each timed
#: execution after BLAS_SPIN_S of untimed ones of the same side (the reference's numpy BLAS threads spin
#: after it ran: gpu_driver.latency), which count toward the seconds
BENCH_MIN_ROUNDS, BENCH_SECONDS, BENCH_MAX_ROUNDS = 20, 8.0, 5000


def _spread(values) -> str:
    """The interquartile range of ``values`` as "p25–p75"."""
    import numpy as np

    q1, q3 = np.percentile(values, [25, 75])
    return f"{q1:.2f}–{q3:.2f}"


def _bench(args) -> int:
    import numpy as np

    from .backends.opencl import pocl_worker_threads, request_pocl_worker_threads

    if args.threads is not None:  # before any device starts PoCL
        request_pocl_worker_threads(args.threads)
    args.threads = pocl_worker_threads()
    device = _device(args.device)
    if args.models:
        return _bench_models(args, device)
    reference = get_device("reference")
    cases = ([models.mobilenet_v1(0.25, 96), models.mobilenet_v2(0.25, 96)] if args.quick
             else [models.mobilenet_v1(), models.mobilenet_v2()])
    print(f"device: {device.name} ({device.get_version_string()}); reference: the numpy reference device; "
          f"{BENCH_MIN_ROUNDS}+ alternating rounds and {BENCH_SECONDS:g}+ s per model, each timed run after "
          f"{BLAS_SPIN_S:g} s of untimed ones; spread: p25–p75")
    rows = []
    for bm in cases:
        x = bm.random_input()
        with console.progress(message=f"{bm.name}: preparing on {device.name}") as report:
            t0 = time.perf_counter()
            prepared = device.prepare_model(bm.model)
            prep = time.perf_counter() - t0
            report(f"{bm.name}: preparing on reference")
            on_reference = reference.prepare_model(bm.model)
            report(f"{bm.name}: warming up")
            t_dev, t_ref = calibration.paired_rounds(
                [(prepared, [x]), (on_reference, [x])], BENCH_MIN_ROUNDS, min_seconds=BENCH_SECONDS,
                max_rounds=BENCH_MAX_ROUNDS, warm_up_s=BLAS_SPIN_S,
                on_round=lambda n, spent: report(f"{bm.name}: {n} rounds, {spent:.1f} s of {BENCH_SECONDS:g}"))
        speedups = t_ref / t_dev
        rows.append((bm.name, f"{bm.flops / 1e9:.3f}", f"{prep:.2f}",
                     f"{np.median(t_dev) * 1e3:.2f}", _spread(t_dev * 1e3),
                     f"{np.median(t_ref) * 1e3:.2f}", _spread(t_ref * 1e3),
                     f"{np.median(speedups):.2f}", _spread(speedups), len(speedups),
                     f"{bm.flops / np.median(t_dev) / 1e9:.2f}"))
    console.print_table(["model", "GFLOP", "prepare s", "device ms", "device p25–p75", "reference ms",
                         "reference p25–p75", "speedup", "speedup p25–p75", "rounds", "GFLOP/s"], rows)
    return 0


def _dump(args) -> int:
    from . import graph_dump

    device = _device(args.device) if args.device else None
    text = graph_dump.to_dot(graph_dump.resolve_model(args.model), device)
    with open(args.dot, "w") as f:
        f.write(text)
    print(f"graph written to {args.dot}")
    if args.svg:
        renderer = graph_dump.render_svg(args.dot, args.svg)
        if renderer is None:
            print(f"note: no Graphviz renderer (the 'dot' program or the graphviz package): only {args.dot} "
                  f"was written, not {args.svg}; render it with: dot -Tsvg {args.dot} -o {args.svg}")
        else:
            print(f"SVG written to {args.svg}")
    return 0


def _trace(args) -> int:
    from collections import namedtuple

    from . import graph_dump, trace
    from .hal.types import OPERAND_TYPE_INFO
    from .mlts.session import random_inputs

    device = _device(args.device)
    model = graph_dump.resolve_model(args.model)
    spec = namedtuple("InputSpec", "shape dtype")
    operands = [model.main.operands[i] for i in model.main.input_indexes]
    feed = random_inputs([spec(tuple(o.dimensions), OPERAND_TYPE_INFO[o.type].dtype) for o in operands], 0.0, 1.0)
    prepared = device.prepare_model(model)
    prepared.execute(feed)  # warm-up: first-use costs (specialisation, lazy initialisation) stay out of the trace
    traced = trace.trace_execution(prepared, feed, args.out, runs=args.runs)
    wall = [e["dur"] for e in traced["traceEvents"] if e.get("cat") == "execution"]
    print(f"trace of {args.model} on {device.name} ({args.runs} run(s), {traced['otherData']['events']} events, "
          f"{sum(wall) / len(wall) / 1e3:.2f} ms per run) written to {args.out}")
    print(trace.format_summary(traced))
    return 0


def _cache(args) -> int:
    """The driver's state directory: what is in it, and with --clear the private compilation cache."""
    import shutil

    from .state import default_state_dir

    root = default_state_dir()
    blobs = root / "blobs"
    if args.clear:
        removed = sum(f.stat().st_size for f in blobs.rglob("*") if f.is_file()) if blobs.is_dir() else 0
        shutil.rmtree(blobs, ignore_errors=True)
        print(f"removed the private compilation cache {blobs} ({removed / 1e6:.1f} MB)")
        return 0
    print(f"state directory: {root} (GPU_DRIVER_STATE_DIR, else $XDG_CACHE_HOME/gpu_driver or ~/.cache/gpu_driver)")
    if not root.is_dir():
        print("  (empty: nothing stored yet)")
        return 0
    for entry in sorted(root.iterdir()):
        files = [entry] if entry.is_file() else [f for f in entry.rglob("*") if f.is_file()]
        print(f"  {entry.name:<24}{sum(f.stat().st_size for f in files) / 1e6:>10.1f} MB")
    return 0


def _serve(args) -> int:
    from .service.server import serve_command

    return serve_command(args)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-driver", description="gpu_driver devices and benchmarks")
    parser.add_argument("--version", action="version", version=f"gpu-driver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="list devices with type, version string and capabilities")
    run = sub.add_parser("run", help="run a .tflite model once and summarise its outputs")
    run.add_argument("model", help="a .tflite file")
    run.add_argument("--device", help="device name (default: the best device)")
    run.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="an input's value (default: random)")
    run.add_argument("--range", type=_parse_range, default=(0.0, 1.0), metavar="LOW,HIGH",
                     help="range of random float inputs (default 0,1)")
    _add_int_range(run)
    run.add_argument("--output", metavar="FILE.npz", help="save the outputs, by name")
    bench = sub.add_parser("bench", help="latency of .tflite models (vs LiteRT with --compare litert); without "
                                         "models: MobileNet v1/v2 on a device vs the reference device")
    bench.add_argument("models", nargs="*", metavar="MODEL.tflite")
    bench.add_argument("--device", help="device name (default: the best device)")
    bench.add_argument("--quick", action="store_true", help="small models (0.25 width, 96×96), few repeats")
    bench.add_argument("--compare", choices=["litert"], help="time and check against TF Lite on the CPU (LiteRT)")
    bench.add_argument("--runs", type=int, default=50, help="timed executions per model (default 50)")
    bench.add_argument("--threads", type=_positive_int, metavar="N",
                       help="CPU threads: PoCL's worker threads and, with --compare litert, LiteRT's (default: one "
                            "per CPU this process may use)")
    bench.add_argument("--range", type=_parse_range, default=(0.0, 1.0), metavar="LOW,HIGH",
                       help="range of random float inputs (default 0,1)")
    _add_int_range(bench)
    bench.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    calibrate = sub.add_parser("calibrate", help="re-measure the capability figures of accelerator devices")
    calibrate.add_argument("--device", help="one device name (default: every accelerator device)")
    dump = sub.add_parser("dump", help="write a model's graph as Graphviz text: operands, operations and, for an "
                                       "accelerator device, fused groups and the memory plan")
    dump.add_argument("model", help="a .tflite file or a zoo model name: NAME[:WIDTH[:RESOLUTION]] "
                                    f"({', '.join(sorted(models.MODELS))})")
    dump.add_argument("--dot", required=True, metavar="FILE.dot", help="the Graphviz text to write")
    dump.add_argument("--svg", metavar="FILE.svg", help="also render it, when Graphviz is installed")
    dump.add_argument("--device", help="device name: adds its fused groups and memory plan (default: none)")
    trace_cmd = sub.add_parser("trace", help="run a model and write a Chrome trace / Perfetto JSON of where the "
                                             "time goes: one event per kernel (per operation on the reference)")
    trace_cmd.add_argument("model", help="a .tflite file or a zoo model name: NAME[:WIDTH[:RESOLUTION]]")
    trace_cmd.add_argument("--out", required=True, metavar="FILE.json", help="the trace to write")
    trace_cmd.add_argument("--device", help="device name (default: the best device)")
    trace_cmd.add_argument("--runs", type=int, default=1, help="traced executions after one warm-up (default 1)")
    cache = sub.add_parser("cache", help="what the driver keeps in its state directory; --clear empties the "
                                         "private compilation cache")
    cache.add_argument("--clear", action="store_true", help="remove the private compilation cache")
    serve_cmd = sub.add_parser("serve", help="host the devices behind a Unix-domain socket for client processes "
                                             "(gpu_driver.connect)")
    serve_cmd.add_argument("--socket", metavar="PATH", help="the socket to listen on (default: "
                                                            "$XDG_RUNTIME_DIR/gpu_driver.sock, else in the state dir)")
    serve_cmd.add_argument("--devices", nargs="+", metavar="NAME", help="devices to serve (default: all)")
    serve_cmd.add_argument("--max-prepared-models", type=int, metavar="N", help="per client (default 64)")
    serve_cmd.add_argument("--max-buffer-bytes", type=int, metavar="N", help="of driver buffers, per client "
                                                                           "(default 1 GiB)")
    args = parser.parse_args(argv)
    try:
        return {"info": _info, "run": _run, "bench": _bench, "calibrate": _calibrate,
                "dump": _dump, "trace": _trace, "cache": _cache, "serve": _serve}[args.command](args)
    except DriverError as exc:
        print(f"gpu-driver: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # anything else: a message, not a traceback
        print(f"gpu-driver: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
