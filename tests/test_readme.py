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
