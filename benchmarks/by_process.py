"""Benchmarks whose peers are process-wide settings (PoCL's target CPU, its loaded-kernel limit):
each round starts one process per setting, in turn, and each process prints its medians as JSON."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

from .machine import cpu_model

MODELS_DIR = Path(__file__).resolve().parents[2] / "shared" / "models"
#: the three shared TF Lite models -> input range (as in benchmarks/test_tflite_models.py)
SHARED_MODELS = {"face_detection_short_range": (-1.0, 1.0), "hand_landmark_lite": (0.0, 1.0),
                 "selfie_segmentation": (0.0, 1.0)}

# the start of a process timing the shared models: ``device``, and ``models`` (name -> (prepared, feed))
_PREPARE_SHARED_MODELS = r"""
import json, statistics, time
import numpy as np
import gpu_driver as gd
from gpu_driver import tflite
device = gd.get_device("opencl")
models = {}
for name, (lo, hi) in %(models)r.items():
    imported = tflite.load_model(%(folder)r + "/" + name + ".tflite")
    rng = np.random.default_rng(0)
    feed = [rng.uniform(lo, hi, s.shape).astype(s.dtype) for s in imported.inputs]
    models[name] = (device.prepare_model(imported.model), feed)
"""


def shared_models_code(body: str, runs: int) -> str:
    """Python code that prepares the shared models on PoCL and then runs ``body`` (``%(runs)d`` in it
    is ``runs``)."""
    return (_PREPARE_SHARED_MODELS + body) % {"models": SHARED_MODELS, "folder": str(MODELS_DIR), "runs": runs}


def shared_models_missing() -> str | None:
    """Why the shared models cannot be run here, or None."""
    if all((MODELS_DIR / f"{m}.tflite").exists() for m in SHARED_MODELS):
        return None
    return f"the shared models are not in {MODELS_DIR}"


def run_process(code: str, setting: str, value: str) -> dict:
    """The JSON that the last line of ``python -c code`` prints, run with ``setting=value``."""
    env = dict(os.environ, **{setting: value})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternate_settings(settings: dict[str, str], variable: str, code: str, rounds: int) -> dict[str, list[dict]]:
    """Each round, ``python -c code`` once per setting (label -> value of ``variable``), in turn: every
    process's JSON by label, in round order."""
    results: dict[str, list[dict]] = {label: [] for label in settings}
    for r in range(rounds):
        for label, value in settings.items():
            results[label].append(run_process(code, variable, value))
            print(f"round {r + 1}/{rounds} {label}: {results[label][-1]}", file=sys.stderr)
    return results


def alternate_and_describe(settings: dict[str, str], variable: str, code: str,
                           rounds: int) -> tuple[dict[str, list[dict]], str]:
    """:func:`alternate_settings`, and the page's machine sentence: CPU, CPU count and the load
    averages before and after the rounds."""
    before = os.getloadavg()
    results = alternate_settings(settings, variable, code, rounds)
    after = os.getloadavg()
    machine = (f"Machine: {cpu_model()}, {os.cpu_count()} CPUs, no GPU; load average (1, 5, 15 min) before "
               f"{before[0]:.2f}, {before[1]:.2f}, {before[2]:.2f}, after {after[0]:.2f}, {after[1]:.2f}, "
               f"{after[2]:.2f}.")
    return results, machine


def page_start(title: str, *lines: str) -> list[str]:
    """A page's first lines: ``title`` with today's date as its heading, then ``lines``."""
    return [f"# {title} — {datetime.date.today().isoformat()}", "", *lines]


def round_rows(results: dict[str, list[dict]], models, cells: Callable[[dict, str, str], str]) -> list[str]:
    """A table row per round, setting and model: ``| round | cells(process JSON, label, model) |``."""
    rounds = len(next(iter(results.values())))
    return [f"| {r + 1} | {cells(results[label][r], label, m)} |"
            for r in range(rounds) for label in results for m in models]


def write_text(path: str, lines: list[str]) -> str:
    text = "\n".join(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def main(doc: str, write_page: Callable[[str, int, int], str], rounds: int, runs: int,
         argv: list[str] | None = None, shared_models: bool = False) -> int | str:
    """``--out PAGE [--rounds N] [--runs N]``: write the page and print it (with ``shared_models``,
    first check that the shared models are there)."""
    if shared_models and shared_models_missing():
        return shared_models_missing()
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--runs", type=int, default=runs)
    a = ap.parse_args(argv)
    print(write_page(a.out, a.rounds, a.runs))
    return 0
