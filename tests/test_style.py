"""The project's code standards, checked on the source text of ``kafkaconsumer/`` with ``ast``.

- every module has a module docstring;
- every public class, function and method has a docstring (public: the name does not start
  with ``_`` and neither does the name of an enclosing class; ``__init__`` of a public class
  counts as public, other dunder methods do not). Private modules (``record/_pyrecords.py``)
  are checked too: their public names are re-exported as the package's API;
- every class in ``kafkaconsumer/internals/``, ``kafkaconsumer/network/``,
  ``kafkaconsumer/metrics/`` and ``kafkaconsumer/metadata.py`` has a line starting with
  ``Thread-safety:`` in its docstring;
- no ``print(`` call in the library, except in the ``kafkaconsumer/cli/`` package (the command);
- ``kafkaconsumer/py.typed`` exists (PEP 561).

Helpers nested inside functions are not public API and are not checked for docstrings. An
``@overload`` stub and a property's setter/deleter share the docstring of the function they
belong to.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kafkaconsumer"
ROOT = PACKAGE.parent

# Classes in these places must state their thread-safety.
THREAD_SAFETY_PLACES = (
    "kafkaconsumer/internals/",
    "kafkaconsumer/network/",
    "kafkaconsumer/metadata.py",
    "kafkaconsumer/metrics/",
)
# The only library modules that may print (the command-line program).
PRINT_ALLOWED_PREFIX = "kafkaconsumer/cli/"

# Known, accepted gaps ("path:Name" or "path:Name[thread-safety]" -> reason); each is an
# expected failure of test_known_gap_is_still_open and is skipped by the checks. Empty now.
KNOWN_GAPS: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@functools.cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def _shares_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    decorators = _decorator_names(node)
    return bool(decorators & {"overload", "setter", "deleter"})


def _is_public_name(name: str, *, method: bool) -> bool:
    if method and name == "__init__":
        return True
    return not name.startswith("_")


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a module or class body, looking inside if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from _top_level(block)
            for handler in stmt.handlers:
                yield from _top_level(handler.body)
        elif isinstance(stmt, ast.With):
            yield from _top_level(stmt.body)
        else:
            yield stmt


def _missing_docstrings(path: Path) -> Iterator[str]:
    tree = _parse(path)
    rel = _rel(path)

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> Iterator[str]:
        for node in _top_level(body):
            if isinstance(node, ast.ClassDef):
                if not _is_public_name(node.name, method=False):
                    continue
                if ast.get_docstring(node) is None:
                    yield f"{rel}:{prefix}{node.name}"
                yield from visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not _is_public_name(node.name, method=in_class) or _shares_docstring(node):
                    continue
                if ast.get_docstring(node) is None:
                    yield f"{rel}:{prefix}{node.name}"

    yield from visit(tree.body, "", False)


def _classes(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.ClassDef]]:
    for node in _top_level(body):
        if isinstance(node, ast.ClassDef):
            yield prefix + node.name, node
            yield from _classes(node.body, f"{prefix}{node.name}.")


def _has_thread_safety_line(doc: str | None) -> bool:
    return doc is not None and any(
        line.strip().startswith("Thread-safety:") for line in doc.splitlines()
    )


def _module_docstring_problems() -> list[str]:
    return [f"{_rel(p)}:<module>" for p in _modules() if ast.get_docstring(_parse(p)) is None]


def _docstring_problems() -> list[str]:
    return [item for p in _modules() for item in _missing_docstrings(p)]


def _thread_safety_problems() -> list[str]:
    problems = []
    for path in _modules():
        rel = _rel(path)
        if rel.startswith(THREAD_SAFETY_PLACES):
            for name, node in _classes(_parse(path).body):
                if not _has_thread_safety_line(ast.get_docstring(node)):
                    problems.append(f"{rel}:{name}[thread-safety]")
    return problems


def _print_problems() -> list[str]:
    problems = []
    for path in _modules():
        rel = _rel(path)
        if rel.startswith(PRINT_ALLOWED_PREFIX):
            continue
        for node in ast.walk(_parse(path)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            ):
                problems.append(f"{rel}:{node.lineno}[print]")
    return problems


def _open(problems: list[str]) -> list[str]:
    return [p for p in problems if p not in KNOWN_GAPS]


def test_py_typed_exists() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_every_module_has_a_docstring() -> None:
    assert _open(_module_docstring_problems()) == []


def test_public_names_have_docstrings() -> None:
    assert _open(_docstring_problems()) == []


def test_internals_and_network_classes_state_thread_safety() -> None:
    assert _open(_thread_safety_problems()) == []


def test_no_print_in_the_library() -> None:
    assert _open(_print_problems()) == [], "use logging; only kafkaconsumer/cli/ may print"


@pytest.mark.parametrize(
    "item",
    [
        pytest.param(item, marks=pytest.mark.xfail(reason=reason, strict=True))
        for item, reason in sorted(KNOWN_GAPS.items())
    ],
)
def test_known_gap_is_still_open(item: str) -> None:
    """Fails (xfail) while the gap is open; passes, and so fails strict, once it is fixed:
    then delete the entry from KNOWN_GAPS so the checks above cover it again."""
    problems = (
        _module_docstring_problems()
        + _docstring_problems()
        + _thread_safety_problems()
        + _print_problems()
    )
    assert item not in problems


# The layers below the engine: they must not import from it (docs/architecture.md).
LOWER_LAYERS = (
    "kafkaconsumer/utils/",
    "kafkaconsumer/network/",
    "kafkaconsumer/protocol/",
    "kafkaconsumer/record/",
    "kafkaconsumer/metadata.py",
)


def test_lower_layers_do_not_import_internals() -> None:
    offenders = []
    for path in _modules():
        rel = _rel(path)
        if not rel.startswith(LOWER_LAYERS):
            continue
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "kafkaconsumer.internals"
            ):
                offenders.append(f"{rel}:{node.lineno} imports {node.module}")
            elif isinstance(node, ast.Import):
                offenders += [
                    f"{rel}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.startswith("kafkaconsumer.internals")
                ]
    assert offenders == []
