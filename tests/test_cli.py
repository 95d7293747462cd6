"""The gpu-driver command line, run as a real process."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, state_dir):
    env = {**os.environ, "GPU_DRIVER_STATE_DIR": str(state_dir),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "gpu_driver.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_info_lists_every_device(tmp_path):
    r = _cli("info", state_dir=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "reference" in r.stdout and "TENSOR_FLOAT32" in r.stdout and "cache files" in r.stdout


def test_bench_quick_prints_a_table(tmp_path):
    r = _cli("bench", "--quick", "--threads", "1", state_dir=tmp_path)   # --threads: PoCL's workers here
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""                                  # progress only on a terminal
    lines = r.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model"))
    columns = ["model", "GFLOP", "prepare s", "device ms", "device p25–p75", "reference ms",
               "reference p25–p75", "speedup", "speedup p25–p75", "rounds", "GFLOP/s"]
    assert [c.strip() for c in header.split("  ") if c.strip()] == columns
    for name in ("mobilenet_v1_0.25_96", "mobilenet_v2_0.25_96"):
        row = dict(zip(columns, next(line for line in lines if line.startswith(name)).split()))
        assert int(row["rounds"]) >= 20
        for figure in ("device", "reference", "speedup"):   # the median lies inside its spread
            median = float(row[figure if figure == "speedup" else f"{figure} ms"])
            low, high = (float(v) for v in row[f"{figure} p25–p75"].split("–"))
            assert low <= median <= high, (name, figure, row)


def test_calibrate_stores_figures(tmp_path):
    import gpu_driver as gd

    opencl = [d.name for d in gd.get_devices() if d.name.startswith("opencl")]
    if not opencl:
        pytest.skip("no OpenCL device")
    r = _cli("calibrate", "--device", opencl[0], state_dir=tmp_path)
    assert r.returncode == 0, r.stderr
    stored = json.loads((tmp_path / "capabilities.json").read_text())
    (entry,) = [v for k, v in stored.items() if k.startswith(opencl[0] + "|") and not k.endswith("|measured")]
    assert entry["TENSOR_FLOAT32"] > 0 and entry["TENSOR_QUANT8_ASYMM"] > 0
    assert entry["IF"] > 0 and entry["WHILE"] > 0
    assert "spread of the 41 rounds" in r.stdout
    info = _cli("info", state_dir=tmp_path)
    assert info.returncode == 0, info.stderr
    section = re.split(r"\n(?=\S)", info.stdout[info.stdout.index(f"{opencl[0]}\n"):])[0]
    rows = {line.split()[0]: line.split() for line in section.splitlines() if line.strip()}
    assert rows["IF"][1:] == [f"{entry['IF']:.4g}", f"{entry['IF']:.4g}", "calibrated"]
    assert rows["WHILE"][1:] == [f"{entry['WHILE']:.4g}", f"{entry['WHILE']:.4g}", "calibrated"]


def test_info_says_which_figures_are_defaults(capsys):
    from gpu_driver import calibration, cli

    cli._print_capabilities(calibration.capabilities({"TENSOR_FLOAT32": 0.5}),
                            calibration.figure_sources({"TENSOR_FLOAT32": 0.5}))
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert rows["TENSOR_FLOAT32"][1:] == ["0.5", "0.5", "calibrated"]
    assert rows["TENSOR_FLOAT16"][1:] == ["0.5", "0.5", "calibrated", "as", "TENSOR_FLOAT32"]
    assert rows["IF"][1:] == rows["WHILE"][1:] == ["FLT_MAX", "FLT_MAX", "default"]
    assert "TENSOR_INT32" not in rows                       # not supported: FLT_MAX, left out
    # figures measured but not stored (an unwritable state directory): said so, FLT_MAX still a default
    cli._print_capabilities(calibration.capabilities({"TENSOR_FLOAT32": 0.5}), {}, "measured now")
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert rows["TENSOR_FLOAT32"][3:] == ["measured", "now"] and rows["IF"][3:] == ["default"]


def test_unknown_device_is_an_error_not_a_traceback(tmp_path):
    r = _cli("bench", "--device", "tpu:9", state_dir=tmp_path)
    assert r.returncode == 2
    assert "gpu-driver: error:" in r.stderr and "Traceback" not in r.stderr


def test_cache_lists_and_clears_the_private_compilation_cache(tmp_path, monkeypatch, capsys):
    from gpu_driver import cli

    monkeypatch.setenv("GPU_DRIVER_STATE_DIR", str(tmp_path))
    (tmp_path / "blobs" / "ab").mkdir(parents=True)
    (tmp_path / "blobs" / "ab" / "entry").write_bytes(b"x" * 2_000_000)
    (tmp_path / "capabilities.json").write_text("{}")
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "blobs" in out and "2.0 MB" in out
    assert cli.main(["cache", "--clear"]) == 0
    assert "2.0 MB" in capsys.readouterr().out
    assert not (tmp_path / "blobs").exists() and (tmp_path / "capabilities.json").exists()


def test_console_tables_are_plain_aligned_text_and_progress_is_quiet_off_a_terminal(capsys):
    from gpu_driver import console

    text = console.render_table(["name", "ms", "note"], [["[bold]a[/]", 1.5, "x"], ["bb", "22.25", "long note"]],
                                text_columns=["note"])
    header, rule, first, second = text.splitlines()
    assert header.split() == ["name", "ms", "note"] and set(rule) == {"─"}
    assert first.startswith("[bold]a[/]")                   # cells are data, never markup
    assert first.index("1.5") + 3 == second.index("22.25") + 5   # numbers right-aligned
    assert first.index("x") == second.index("long note")   # text columns left-aligned
    with console.progress(total=3, message="working") as report:   # stderr is captured: not a terminal
        report.step("one")
        report.advance(2, "two")
        report("three")
    assert capsys.readouterr().err == ""


def test_bench_threads_runs_both_engines_with_that_many(tmp_path):
    pytest.importorskip("ai_edge_litert")
    model = ROOT / "tests" / "tflite" / "keras_models" / "misc_layers_float.tflite"
    r = _cli("bench", str(model), "--device", "opencl:0", "--compare", "litert", "--threads", "1", "--runs", "2",
             "--html", str(tmp_path / "report.html"), state_dir=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "threads: 1 for LiteRT and for PoCL's worker threads" in r.stdout
    assert "litert-xnnpack (1 threads)" in (tmp_path / "report.html").read_text()
    # PoCL itself reports the worker count it started with: one compute unit
    code = ("import gpu_driver as gd\n"
            "from gpu_driver.backends.opencl import request_pocl_worker_threads\n"
            "request_pocl_worker_threads(1)\n"
            "print(gd.get_device('opencl:0').backend.session.cl_device.max_compute_units)")
    env = {**os.environ, "GPU_DRIVER_STATE_DIR": str(tmp_path),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("POCL_MAX_PTHREAD_COUNT", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "1"


def test_bench_threads_refuses_nonsense(tmp_path):
    r = _cli("bench", "model.tflite", "--threads", "0", state_dir=tmp_path)
    assert r.returncode == 2 and "expected a positive integer, got '0'" in r.stderr
