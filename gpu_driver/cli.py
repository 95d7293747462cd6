"""``gpu-driver``: list devices (``info``), benchmark them against the reference device (``bench``), and
measure the capability figures they report (``calibrate``)."""
from __future__ import annotations

import argparse
import sys
import time

from . import calibration
from . import zoo as models
from .errors import DriverError
from .hal.types import FLT_MAX
from .runtime.discovery import get_device, get_devices


def _info(args) -> int:
    for d in get_devices():
        print(f"{d.name}")
        print(f"  type:         {d.get_type().name}")
        print(f"  rank:         {d.rank}")
        print(f"  version:      {d.get_version_string()}")
        print(f"  cache files:  {d.get_number_of_cache_files_needed()} (model, data)")
        _print_capabilities(d.get_capabilities())
    return 0


def _print_capabilities(caps) -> None:
    rows = [(p.type.name, p.info) for p in caps.operand_performance if p.info.exec_time < FLT_MAX]
    print("  capabilities (execTime / powerUsage relative to the reference device; lower is better):")
    for name, info in rows:
        print(f"    {name:28s} {info.exec_time:8.4g} {info.power_usage:8.4g}")
    relaxed = caps.relaxed_float32_to_float16_performance_tensor
    if relaxed.exec_time < FLT_MAX:
        print(f"    {'relaxed fp32→fp16 (tensor)':28s} {relaxed.exec_time:8.4g} {relaxed.power_usage:8.4g}")
    print("    other operand types: not supported (FLT_MAX)")


def _calibrate(args) -> int:
    devices = get_devices() if args.device is None else [get_device(args.device)]
    for d in devices:
        if d.name == "reference":
            continue  # the unit of every ratio
        calibration.calibrate(d, force=True)
        print(f"{d.name}: re-measured and stored in {calibration.state_dir_for(d) / calibration.CALIBRATION_FILE}")
        _print_capabilities(calibration.capabilities(calibration.load(d) or {}))
    return 0


def _bench(args) -> int:
    device = get_device(args.device) if args.device else get_device()
    reference = get_device("reference")
    if args.quick:
        cases = [models.mobilenet_v1(0.25, 96), models.mobilenet_v2(0.25, 96)]
        repeats = 3
    else:
        cases = [models.mobilenet_v1(), models.mobilenet_v2()]
        repeats = 5
    print(f"device: {device.name} ({device.get_version_string()})")
    header = f"{'model':<24}{'GFLOP':>8}{'prepare s':>11}{'device ms':>11}{'reference ms':>14}{'speedup':>9}{'GFLOP/s':>9}"
    print(header)
    print("-" * len(header))
    for bm in cases:
        x = bm.random_input()
        t0 = time.perf_counter()
        pm = device.prepare_model(bm.model)
        prep = time.perf_counter() - t0
        t_dev = calibration.median_execution_seconds(pm, x, repeats)
        t_ref = calibration.median_execution_seconds(reference.prepare_model(bm.model), x, max(1, repeats // 2))
        print(f"{bm.name:<24}{bm.flops / 1e9:>8.3f}{prep:>11.2f}{t_dev * 1e3:>11.2f}{t_ref * 1e3:>14.2f}"
              f"{t_ref / t_dev:>9.2f}{bm.flops / t_dev / 1e9:>9.2f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-driver", description="gpu_driver devices and benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="list devices with type, version string and capabilities")
    bench = sub.add_parser("bench", help="MobileNet v1/v2 latency on a device vs the reference device")
    bench.add_argument("--device", help="device name (default: the best device)")
    bench.add_argument("--quick", action="store_true", help="small models (0.25 width, 96×96), few repeats")
    calibrate = sub.add_parser("calibrate", help="re-measure the capability figures of accelerator devices")
    calibrate.add_argument("--device", help="one device name (default: every accelerator device)")
    args = parser.parse_args(argv)
    try:
        return {"info": _info, "bench": _bench, "calibrate": _calibrate}[args.command](args)
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
