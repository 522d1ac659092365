"""The benchmarks stand on their own: no module under benchmarks/ imports from tests/ (the tests
import the shared harness from benchmarks/harness/ instead)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.add(node.module)
    return found


def test_no_benchmark_module_imports_the_tests() -> None:
    offenders = sorted(
        f"{path.relative_to(BENCHMARKS.parent)}: {module}"
        for path in BENCHMARKS.rglob("*.py")
        for module in _imported_modules(path)
        if module == "tests" or module.startswith("tests.")
    )
    assert offenders == []
