"""The README's benchmark numbers, generated from the committed results in ``benchmarks/results/``.

    python benchmarks/readme_numbers.py           # rewrite README.md's results section
    python benchmarks/readme_numbers.py --check   # exit 1 when the README differs from the results

The section lies between ``<!-- results:begin -->`` and ``<!-- results:end -->``.  Every figure in
it is read from a markdown table of a result page (the cell as written there); each line names the
page, its date (from the file name) and the machine (the page's ``Machine:`` line).  A page that is
not there yet is left out.
"""
from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


@dataclass
class Table:
    """A markdown table: its column names, its rows (column name → cell text, ``**`` removed) and
    the ``#`` heading it stands under."""

    heading: str
    columns: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)

    def row(self, first_cell: str) -> dict[str, str]:
        """The row whose first cell is ``first_cell``."""
        for r in self.rows:
            if r[self.columns[0]] == first_cell:
                return r
        raise KeyError(f"no row {first_cell!r} in the table under {self.heading!r}")


@dataclass
class Page:
    """A result page: file name, date, machine and tables."""

    name: str
    date: str
    machine: str
    tables: list[Table]

    def table(self, heading: str = "") -> Table:
        """The first table under a heading containing ``heading`` (the page's first table for "")."""
        for t in self.tables:
            if heading in t.heading:
                return t
        raise KeyError(f"no table under a heading with {heading!r} in {self.name}")


def _cells(line: str) -> list[str]:
    return [c.strip().replace("**", "") for c in line.strip().strip("|").split("|")]


def parse(path: Path) -> Page:
    """Read a result page: its tables, date (file name ``YYYY-MM-DD-…``) and machine (the text after
    the first ``Machine…:`` up to the end of its clause)."""
    text = path.read_text()
    tables: list[Table] = []
    heading = ""
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and k + 1 < len(lines) and re.fullmatch(r"\|?[\s:|-]+\|?", lines[k + 1]):
            table = Table(heading, _cells(line))
            k += 2
            while k < len(lines) and lines[k].startswith("|"):
                table.rows.append(dict(zip(table.columns, _cells(lines[k]))))
                k += 1
            tables.append(table)
            continue
        k += 1
    flat = " ".join(text.split())
    found = re.search(r"[Mm]achine[^:]*:\s*(.+?)(?:;|\.\s|\.$|\s-\s|$)", flat)
    date = re.match(r"\d{4}-\d{2}-\d{2}", path.name)
    return Page(path.name, date.group(0) if date else "", found.group(1).strip() if found else "", tables)


def _first(cell: str) -> str:
    """A cell's figure without its parenthesised remark: "10.43 ms (min 9.98)" → "10.43 ms"."""
    return cell.split(" (")[0].strip()


def _pocl(p: Page) -> str:
    mobilenet = p.table("MobileNet")
    v1, v2 = mobilenet.row("MobileNet v1"), mobilenet.row("MobileNet v2")
    median = next(c for c in mobilenet.columns if "PoCL" in c and "median" in c)
    overhead = next(r for r in p.table("Per-execution overhead").rows if r["path"].startswith("HAL"))
    return (f"MobileNet v1 {_first(v1[median])} and v2 {_first(v2[median])} median, **{v1['speedup']}** and "
            f"**{v2['speedup']}** faster than the numpy reference in the same run; HAL per-execution "
            f"overhead of a one-ADD model {overhead['median']} median.")


def _cache(p: Page) -> str:
    t = p.table()
    chain, mobilenet = t.row("chain_100_ops"), t.row("mobilenet_v2_1.0_224")
    return (f"preparing from the compilation cache is **{chain['ratio']}** (100-op chain, "
            f"{chain['cold prepare (median)']} → {chain['from cache (median)']}) and **{mobilenet['ratio']}** "
            f"(MobileNet v2, {mobilenet['cold prepare (median)']} → {mobilenet['from cache (median)']}) faster "
            f"than a cold prepare.")


SHARED_MODELS = ("face_detection_short_range", "hand_landmark_lite", "selfie_segmentation")


#: the Keras models whose recurrent layers reach TF Lite as WHILE loops over the time steps
RECURRENT_MODELS = ("gru_text_float", "lstm_classifier_float", "simple_rnn_float")


def _tflite(p: Page) -> str:
    opencl = [r for r in p.table().rows if r["device"] == "opencl"]
    rows = [r for r in opencl if r["model"] in SHARED_MODELS]
    recurrent = [r for r in opencl if r["model"] in RECURRENT_MODELS]
    names = ", ".join(r["model"] for r in rows)
    return (f"the shared TF Lite models on PoCL ({names}) take {', '.join(r['ours (ms)'] for r in rows)} ms "
            f"against LiteRT-XNNPACK's {', '.join(r['LiteRT (ms)'] for r in rows)} ms in the same process: "
            f"**{'×, '.join(r['ours ÷ LiteRT'] for r in rows)}×** LiteRT's time; the Keras recurrent models "
            f"({', '.join(r['model'] for r in recurrent)}, their time loops unrolled) "
            f"{'×, '.join(r['ours ÷ LiteRT'] for r in recurrent)}×.")


def _mobilenet_onnxruntime(p: Page) -> str:
    t = p.table()
    v1, v2 = t.row("mobilenet_v1"), t.row("mobilenet_v2")
    layers = p.tables[2]
    fractions = sorted((r["fraction of peak"] for r in layers.rows if r["layer"].startswith("conv 1×1")),
                       key=lambda f: int(f.rstrip("%")))
    paired = "per-round PoCL ÷ ORT, median [quartiles]"
    rounds = (f"; per round (each round's two runs a few ms apart) **{v1[paired].split()[0]}×** and "
              f"**{v2[paired].split()[0]}×**, PoCL the faster in {v1['rounds PoCL ≤ ORT']} and "
              f"{v2['rounds PoCL ≤ ORT']} of the rounds" if paired in t.columns else "")
    return (f"MobileNet v1 {v1['PoCL ms']} ms and v2 {v2['PoCL ms']} ms on PoCL against ONNX Runtime's "
            f"{v1['ONNX Runtime ms']} and {v2['ONNX Runtime ms']} ms (2 threads, same weights, alternating): "
            f"**{v1['PoCL ÷ ORT']}×** and **{v2['PoCL ÷ ORT']}×** (medians){rounds}; 1×1 convolutions at "
            f"{fractions[0]}–{fractions[-1]} of numpy's sgemm peak.")


def _service(p: Page) -> str:
    alternating, apart = p.table("Alternating"), p.table("One after the other")
    a, b = alternating.row("burst"), apart.row("burst")
    return (f"a remote burst execution (driver service, one ADD) takes {b['remote (µs)']} µs against "
            f"{b['local (µs)']} µs locally, each timed on its own (**{b['remote ÷ local']}×**); alternating "
            f"with the local call, {a['remote (µs)']} against {a['local (µs)']} µs (**{a['remote ÷ local']}×**).")


def _resident_state(p: Page) -> str:
    rows = p.table().rows
    return ("state kept in memory-domain buffers: " + ", ".join(
        f"{r['batch×inputs→units']} **{r['time ratio shared/domain']}×** the shared-memory speed with "
        f"{r['bytes ratio shared/domain']}× fewer bytes moved" for r in rows) + ".")


def _execution_modes(p: Page) -> str:
    add = {r["mode"]: r["per execution (µs)"] for r in p.table("One ADD").rows}
    mobilenet = {r["mode"]: r["per execution (µs)"] for r in p.table("MobileNet v2").rows}
    return (f"one-ADD model per execution {add['sync']} µs synchronous, {add['async']} µs asynchronous, "
            f"{add['burst']} µs burst, {add['reusable']} µs reusable, {add['fenced']} µs fenced, "
            f"{add['fenced chain of 3']} µs in a fenced chain of 3; bare PyOpenCL doing the same work "
            f"{add['bare pyopencl, one wait']} µs and ONNX Runtime {add['onnxruntime session.run']} µs.  "
            f"MobileNet v2: {mobilenet['sync']} µs synchronous, {mobilenet['burst']} µs burst, "
            f"{mobilenet['fenced chain of 4']} µs per execution in a fenced chain of 4.")


def _restructure(p: Page) -> str:
    t = p.table()
    v1 = t.row("test_mobilenet_latency[mobilenet_v1-opencl]")
    v2 = t.row("test_mobilenet_latency[mobilenet_v2-opencl]")
    hal = t.row("test_execute_synchronously_overhead[opencl]")
    return (f"the restructuring into one module per operation family cost nothing measurable — MobileNet "
            f"v1 {v1['before']} → {v1['after']}, v2 {v2['before']} → {v2['after']}, HAL overhead "
            f"{hal['before']} → {hal['after']} (alternating runs of both revisions; compare within this page).")


def _repeatability(p: Page) -> str:
    """Back-to-back calibration runs: the mean of each figure (IF / WHILE: if_performance /
    while_performance, the control-flow overhead relative to the reference's) and the largest
    deviation from a mean."""
    t = p.table()
    deviation, name = "largest deviation from the mean", t.columns[0]
    figures = ", ".join(f"{r[name]} {r['mean']}" for r in t.rows)
    worst = max(t.rows, key=lambda r: float(r[deviation].rstrip(" %")))
    return (f"{len(t.columns) - 3} back-to-back `gpu-driver calibrate` runs: {figures} (mean ratios to the "
            f"reference; the largest deviation from a mean {worst[deviation]}, {worst[name]}).")


def _latest(p: Page, heading: str) -> Table:
    """The table under ``heading``'s latest-run section (third, then second) when the page has one,
    else under ``heading``."""
    for run in ("third", "second"):
        try:
            return p.table(f"{heading}, {run} run" if heading else f"{run.capitalize()} run")
        except KeyError:
            continue
    return p.table(heading)


def _cuda_peers(p: Page) -> str:
    t = _latest(p, "MobileNet")
    model, names = t.columns[0], ("mobilenet_v1", "mobilenet_v2")

    def cells(batch: str, runner: Callable[[str], bool], column: str) -> list[str]:
        return [next(r[column] for r in t.rows if r[model] == name and r["batch"] == batch and runner(r["runner"]))
                for name in names]

    parts = []
    for batch in ("1", "8"):
        ours = cells(batch, lambda r: r == "ours", "ms")
        eager = cells(batch, lambda r: r.startswith("PyTorch") and r.endswith("eager"), "ours ÷ runner")
        graph = cells(batch, lambda r: r.startswith("PyTorch") and r.endswith("CUDA graph"), "ours ÷ runner")
        parts.append(f"batch {batch} {ours[0]} / {ours[1]} ms, **{eager[0]}× / {eager[1]}×** PyTorch eager and "
                     f"**{graph[0]}× / {graph[1]}×** PyTorch replayed as a CUDA graph")
    add = {r["mode"]: r["µs"] for r in _latest(p, "One ADD").rows}
    return (f"MobileNet v1 / v2 (float32, same weights, alternating) at {'; at '.join(parts)}; one-ADD burst "
            f"{add['burst']} µs against {add['bare CuPy floor']} µs for the same work in bare CuPy.")


def _cuda_tflite(p: Page) -> str:
    rows = _latest(p, "").rows
    shared = [r for r in rows if r["model"] in SHARED_MODELS]
    ratios = sorted(float(r["ours ÷ LiteRT"]) for r in rows)
    return (f"{len(rows)} TF Lite models against LiteRT on the host's 16 cores, every output within fp32 "
            f"tolerance: the shared ones ({', '.join(r['model'] for r in shared)}) "
            f"**{'×, '.join(r['ours ÷ LiteRT'] for r in shared)}×** LiteRT's time, all of them "
            f"{ratios[0]:.2f}–{ratios[-1]:.2f}× (latest run).")


def _cuda_conformance(p: Page) -> str:
    row = p.table("AOSP conformance").row("cuda:0")
    suite = {r["outcome"]: r["tests"].split(":")[0] for r in p.table("Test suite").rows}
    text = (f"the CUDA-marked tests: {suite['passed']} passed, {suite['failed']} failed (one test's expectation, "
            f"fixed; seven slow tests stopped by a timeout); AOSP conformance, every second case: "
            f"{row['good']} good of {row['cases']}, no wrong answer, crash or refusal.")
    try:
        again = {r["outcome"]: r["tests"].split(":")[0] for r in p.table("Test suite, second run").rows}
        rest = p.table("AOSP conformance, the rest")
    except KeyError:
        return text
    run = rest.columns[0]
    return (text[:-1] + f"; second session: {again['passed']} passed, {again['failed']} failed (slow every-case "
            "tests stopped by a timeout), and " +
            ", ".join(f"{r['good']} good of {r['cases']} ({r[run]})" for r in rest.rows) + ".")


def _cuda_work_groups(p: Page) -> str:
    t = p.table("MobileNet, second run")
    model, names = t.columns[0], ("mobilenet_v1", "mobilenet_v2")

    def cells(batch: str, runner: Callable[[str], bool], column: str) -> str:
        return " / ".join(next(r[column] for r in t.rows if r[model] == name and r["batch"] == batch
                               and runner(r["runner"])) for name in names)

    parts = [f"batch {b} {cells(b, lambda r: r == 'ours', 'ms')} ms, "
             f"**{cells(b, lambda r: r.startswith('PyTorch') and r.endswith('eager'), 'ours ÷ runner')}×** "
             f"PyTorch eager, **{cells(b, lambda r: r.endswith('CUDA graph'), 'ours ÷ runner')}×** its CUDA "
             f"graph, {cells(b, lambda r: r.startswith('ours, GEMM in register tiles'), 'ours ÷ runner')}× "
             "the CPU's GEMM tiles" for b in ("1", "8")]
    tflite = p.table("TF Lite models on CUDA").rows
    suite = p.table("Tests and conformance").rows[-1]
    tests = next(v for k, v in suite.items() if k.startswith("CUDA-marked"))
    conformance = next(v for k, v in suite.items() if k.startswith("AOSP")).split(" (")[0]
    return (f"with the GPU's kernels (GEMM and long softmax rows in work groups), MobileNet v1 / v2 at "
            f"{'; at '.join(parts)}; the shared TF Lite models "
            f"**{'×, '.join(r['ours ÷ LiteRT'] for r in tflite)}×** LiteRT's time on 16 cores; CUDA-marked "
            f"tests {tests}; AOSP conformance {conformance}.")


def _pocl_target_cpu(p: Page) -> str:
    t = p.table()
    wide, narrow = t.rows[0], t.rows[1]
    return (f"MobileNet v1/v2 on PoCL compiled for {wide['target CPU']} (AVX-512, what the driver picks on "
            f"this host) take {wide['mobilenet_v1 ms']}/{wide['mobilenet_v2 ms']} ms against "
            f"{narrow['mobilenet_v1 ms']}/{narrow['mobilenet_v2 ms']} ms for {narrow['target CPU']} (AVX2), "
            "one process per target in turn.")


def _thread_scaling(p: Page) -> str:
    t = p.table("Medians")
    geo = [r for r in t.rows if r["model"] == "geometric mean"]
    one, many = (r["threads"] for r in geo)
    return (f"the shared TF Lite models with {one} each take **{geo[0]['PoCL ÷ LiteRT']}×** LiteRT's time on "
            f"PoCL (geometric mean) and with {many} **{geo[1]['PoCL ÷ LiteRT']}×**, one process per thread "
            "count in turn.")


#: result page → the line quoting it, in the order of the README
QUOTES: dict[str, Callable[[Page], str]] = {
    "2026-11-22-pocl.md": _pocl,
    "2026-11-28-pocl-target-cpu.md": _pocl_target_cpu,
    "2026-11-22-cache.md": _cache,
    "2026-11-29-mobilenet-onnxruntime.md": _mobilenet_onnxruntime,
    "2026-11-29-tflite-models.md": _tflite,
    "2026-11-29-thread-scaling.md": _thread_scaling,
    "2026-11-27-execution-modes.md": _execution_modes,
    "2026-11-27-resident-state.md": _resident_state,
    "2026-11-25-service.md": _service,
    "2026-11-23-restructure.md": _restructure,
    "2026-11-25-calibration.md": _repeatability,
    "2026-11-25-calibration-control-flow.md": _repeatability,
}

#: the same for the pages measured on a CUDA GPU
GPU_QUOTES: dict[str, Callable[[Page], str]] = {
    "2026-11-27-cuda-conformance.md": _cuda_conformance,
    "2026-11-27-cuda-h200.md": _cuda_peers,
    "2026-11-27-cuda-tflite-models.md": _cuda_tflite,
    "2026-11-27-resident-state-cuda.md": _resident_state,
    "2026-11-27-cuda-work-groups.md": _cuda_work_groups,
}


def render(results: Path = RESULTS) -> str:
    """The README's results section (markers included)."""
    lines = [BEGIN, "<!-- generated by benchmarks/readme_numbers.py from benchmarks/results/: "
                    "edit those pages, then run it -->",
             "Results on 2-vCPU machines without a GPU (PoCL; `benchmarks/results/`; each line gives the\n"
             "date and the machine of its run):"]
    lines += _quoted(results, QUOTES)
    gpu = _quoted(results, GPU_QUOTES)
    if gpu:
        lines += ["", "On a CUDA GPU (an NVIDIA H200 lent for three sessions; ONNX Runtime had no CUDA provider there):",
                  *gpu]
    lines.append(END)
    return "\n".join(lines)


def _quoted(results: Path, quotes: dict[str, Callable[[Page], str]]) -> list[str]:
    """One README line per page of ``quotes`` that exists."""
    lines = []
    for name, quote in quotes.items():
        path = results / name
        if not path.exists():
            continue
        page = parse(path)
        lines.append(textwrap.fill(f"- `{page.name}` ({page.date}; {page.machine}): {quote(page)}", width=100,
                                   subsequent_indent="  ", break_long_words=False, break_on_hyphens=False))
    return lines


def current(readme_text: str) -> str:
    """The section as the README has it now (markers included)."""
    start, end = readme_text.index(BEGIN), readme_text.index(END) + len(END)
    return readme_text[start:end]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = README.read_text()
    section = render()
    if "--check" in argv:
        if current(text) != section:
            print("README.md's results section differs from benchmarks/results/: "
                  "run python benchmarks/readme_numbers.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(text.replace(current(text), section))
    print(f"{README}: results section rewritten from {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
