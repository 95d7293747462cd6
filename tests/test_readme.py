"""The README's API tour runs as written (its /tmp paths redirected to a test directory)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_tour_runs(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block.replace("/tmp/", f"{tmp_path}/"), str(README), "exec"), namespace)  # noqa: S102
    assert namespace["out"].shape == (1, 8, 8, 4)
    assert namespace["shapes"][0].dimensions == [1, 8, 8, 4]
    assert namespace["host"].size == 4 * 256
    assert "[True]" in capsys.readouterr().out
