"""The shape of the package: no import cycle, and one operation lives in one place.

Imports are read with ``ast`` from the sources: every import statement that runs, at module level
or inside a function, is an edge; imports under ``if TYPE_CHECKING:`` never run and are not edges.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gpu_driver
from gpu_driver.hal.types import OperationType
from gpu_driver.ops.catalog import lookup
from gpu_driver.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpu_driver"
PRODUCTION = [PACKAGE, ROOT / "opencl_kernels", ROOT / "cuda_kernels"]
#: where an operation may be named besides its family module, its kernel source and one helper:
#: the enum and the model builders
NAMING_EXEMPT = {"gpu_driver/hal/types.py", "gpu_driver/zoo.py", "gpu_driver/calibration.py",
                 "gpu_driver/builder.py",
                 # the TF Lite operator → NNAPI operation table names operations by nature
                 "gpu_driver/tflite/operators.py"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement outside ``if TYPE_CHECKING:`` blocks, at any depth."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        out.update(t for t in targets if t in modules and t != name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_reader_sees_function_level_imports_and_skips_type_checking():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n"
                     "def f():\n    import y\n")
    assert sorted(a.name for n in _imports(tree) if isinstance(n, ast.Import) for a in n.names) == ["y"]


def test_no_import_cycle_in_the_package():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_nothing_inside_imports_the_package_facade():
    graph = _graph()
    importers = sorted(name for name, edges in graph.items() if "gpu_driver" in edges)
    assert importers == [], f"modules importing the gpu_driver facade: {importers}"


def _production_files():
    for folder in PRODUCTION:
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in (".py", ".cl", ".h", ".cuh", ".md"):
                yield path


@pytest.mark.parametrize("op", ["SOFTMAX", "SVDF", "L2_POOL_2D", "LSH_PROJECTION", "RESIZE_BILINEAR",
                                "EMBEDDING_LOOKUP", "DEPTHWISE_CONV_2D"])
def test_an_operation_is_named_in_at_most_three_production_files(op):
    # the operation's name in any spelling: SOFTMAX, softmax, Softmax, activation_softmax.cl
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(op)}(?![A-Za-z0-9])", re.IGNORECASE)
    naming = sorted(str(p.relative_to(ROOT)) for p in _production_files()
                    if str(p.relative_to(ROOT)) not in NAMING_EXEMPT
                    and (word.search(p.name.replace(".", " ")) or word.search(p.read_text(errors="replace"))))
    assert len(naming) <= 3, f"{op} is named in {naming}"


def test_every_operation_is_registered_by_its_family_module():
    lookup(OperationType.ADD)  # fills the registry
    for op_type, entry in REGISTRY.items():
        assert entry.type == op_type
        for part in (entry.define, entry.reference, entry.lower, entry.supports):
            if part is not None:
                assert part.__module__.startswith("gpu_driver.ops."), (op_type.name, part.__module__)


def test_the_registry_holds_every_hal_1_0_operation():
    hal_1_0 = [t for t in OperationType if 0 <= t.value <= 28]
    assert all(lookup(t) is not None for t in hal_1_0)
    assert gpu_driver.__version__


def test_every_path_architecture_md_names_exists():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`([\w./<>-]+(?:\.py|\.cl|\.h|\.cuh|/))`", text))
    concrete = sorted(p for p in named if "<" not in p)
    assert len(concrete) > 20
    missing = []
    for p in concrete:
        candidates = [ROOT / p, PACKAGE / p] + [PACKAGE / sub / p for sub in ("ops", "compiler", "backends")]
        if not any(c.exists() for c in candidates):
            missing.append(p)
    assert missing == [], f"ARCHITECTURE.md names missing files: {missing}"
