"""The README's API tour runs as written (its /tmp paths redirected to a test directory)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
#: the shared production models the TF Lite block reads (next to the project, see shared/models)
SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def test_readme_tour_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        if "../shared/models/" in block:
            if not SHARED_MODELS.is_dir():
                continue  # a checkout without the shared models: the rest of the tour still runs
            block = block.replace("../shared/models/", f"{SHARED_MODELS}/")
        exec(compile(block.replace("/tmp/", f"{tmp_path}/"), str(README), "exec"), namespace)  # noqa: S102
    assert namespace["out"].shape == (1, 8, 8, 4)
    assert namespace["shapes"][0].dimensions == [1, 8, 8, 4]
    assert namespace["host"].size == 4 * 256
    assert "[True]" in capsys.readouterr().out
    for f in namespace.get("files", []):  # the tour's cache files, left open for brevity there
        f.close()


def _readme_numbers():
    """benchmarks/readme_numbers.py, the script that writes the README's results section."""
    import importlib.util
    import sys

    if "readme_numbers" not in sys.modules:
        path = README.parent / "benchmarks" / "readme_numbers.py"
        spec = importlib.util.spec_from_file_location("readme_numbers", path)
        sys.modules["readme_numbers"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["readme_numbers"]


def test_readme_numbers_are_those_of_the_committed_results():
    numbers = _readme_numbers()
    assert numbers.current(README.read_text()) == numbers.render(), \
        "README.md's results section is stale: run python benchmarks/readme_numbers.py"


def test_result_pages_are_read_cell_by_cell(tmp_path):
    numbers = _readme_numbers()
    page = tmp_path / "2030-01-02-cache.md"
    page.write_text("# Cache\n\nMachine: a 4-core test box, no GPU; idle.\n\n"
                    "| model | ops | cold prepare (median) | from cache (median) | ratio |\n|---|---|---|---|---|\n"
                    "| chain_100_ops | 100 | 200 ms | 10 ms | **20×** |\n"
                    "| mobilenet_v2_1.0_224 | 66 | 5000 ms | 100 ms | **50×** |\n")
    parsed = numbers.parse(page)
    assert (parsed.date, parsed.machine) == ("2030-01-02", "a 4-core test box, no GPU")
    assert parsed.table().row("mobilenet_v2_1.0_224")["ratio"] == "50×"
    (tmp_path / "2026-11-22-cache.md").write_text(page.read_text())
    section = numbers.render(tmp_path)
    assert section.startswith(numbers.BEGIN) and section.endswith(numbers.END)
    text = " ".join(section.split())
    assert "`2026-11-22-cache.md` (2026-11-22; a 4-core test box, no GPU)" in text
    assert "**20×** (100-op chain, 200 ms → 10 ms) and **50×** (MobileNet v2, 5000 ms → 100 ms)" in text
    assert "pocl.md" not in text                       # pages that are not there are left out
