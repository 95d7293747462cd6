"""Benchmarks whose peers are process-wide settings (PoCL's target CPU, its loaded-kernel limit):
each round starts one process per setting, in turn, and each process prints its medians as JSON."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Callable


def run_process(code: str, setting: str, value: str) -> dict:
    """The JSON that the last line of ``python -c code`` prints, run with ``setting=value``."""
    env = dict(os.environ, **{setting: value})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_text(path: str, lines: list[str]) -> str:
    text = "\n".join(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def main(doc: str, write_page: Callable[[str, int, int], str], rounds: int, runs: int,
         argv: list[str] | None = None) -> int:
    """``--out PAGE [--rounds N] [--runs N]``: write the page and print it."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--runs", type=int, default=runs)
    a = ap.parse_args(argv)
    print(write_page(a.out, a.rounds, a.runs))
    return 0
