"""The package's imports form layers with no circle (docs/architecture.md, "Layers").

The imports are read from the source (Python modules and the Cython ones), not by importing:

- every ``import`` and ``from ... import`` of a ``kafkaconsumer`` module counts, wherever it
  stands: at module level, inside a function (a lazy import still ties the two modules
  together, only later), and under ``if TYPE_CHECKING:`` (a type names the module it comes
  from, and a type checker follows it as Python would);
- ``from package import name`` counts as an import of the submodule ``package.name`` when one
  exists, else of the package; an import of ``a.b.c`` is an edge to ``a.b.c`` only, not to
  the packages above it (they hold no code that imports back).

A circle is a set of modules each reachable from the others. A layer violation is an import of
a module in a higher layer than the importer's; modules of one layer may import each other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import kafkaconsumer

PACKAGE = Path(kafkaconsumer.__file__).parent
ROOT = "kafkaconsumer"

#: The layers, lowest first, each a list of module prefixes (a prefix names a module and
#: everything under it). docs/architecture.md draws the same table.
LAYERS: list[tuple[str, list[str]]] = [
    (
        "foundation",
        [
            "kafkaconsumer._version",
            "kafkaconsumer._error_base",
            "kafkaconsumer._error_codes",
            "kafkaconsumer.structs",
            "kafkaconsumer.close_options",
            "kafkaconsumer.utils",
        ],
    ),
    ("errors and callbacks", ["kafkaconsumer.errors", "kafkaconsumer.listener"]),
    ("wire format", ["kafkaconsumer.protocol"]),
    ("records", ["kafkaconsumer.record"]),
    (
        "configuration",
        [
            "kafkaconsumer.config",
            "kafkaconsumer.serialization",
            "kafkaconsumer.interceptors",
            # Schema-registry deserializers, given as value.deserializer / key.deserializer.
            "kafkaconsumer.formats",
            "kafkaconsumer.tracing",
            # Plugins are named by configuration, and a bad name is a ConfigError.
            "kafkaconsumer.utils.loader",
        ],
    ),
    ("cluster view and metrics", ["kafkaconsumer.metadata", "kafkaconsumer.metrics"]),
    ("network", ["kafkaconsumer.network"]),
    ("engine", ["kafkaconsumer.internals"]),
    (
        "clients",
        [
            "kafkaconsumer.consumer",
            "kafkaconsumer.consumer_iterator",
            "kafkaconsumer.admin",
            "kafkaconsumer.admin_plumbing",
            "kafkaconsumer.admin_consumer_groups",
            "kafkaconsumer.admin_share_groups",
            "kafkaconsumer.share_consumer",
            "kafkaconsumer.producer",
        ],
    ),
    (
        "applications",
        [
            "kafkaconsumer.spark",
            "kafkaconsumer.cli",
            "kafkaconsumer.embedded",
            "kafkaconsumer._child_process",
            "kafkaconsumer.__main__",
            "kafkaconsumer",  # the package's __init__: the public names
        ],
    ),
]

# A Cython module's Python-level imports (``cimport`` lines are C declarations, not imports).
_PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+(.+)|import\s+([\w.]+))", re.M)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
            continue
        parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module ``name`` refers to: itself, or the nearest package or module above it."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(base: str, names: list[str]) -> Iterator[str]:
    for name in names:
        full = f"{base}.{name}"
        target = full if full in MODULES else _resolve(base)
        if target is not None:
            yield target


def _python_imports(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                    target = _resolve(alias.name)
                    if target is not None:
                        yield target
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base == ROOT or base.startswith(ROOT + "."):
                yield from _targets(base, [a.name for a in node.names])


def _cython_imports(path: Path) -> Iterator[str]:
    for match in _PYX_IMPORT.finditer(path.read_text(encoding="utf-8")):
        base, names, plain = match.groups()
        if plain is not None:
            if plain.startswith(ROOT):
                target = _resolve(plain)
                if target is not None:
                    yield target
        elif base.startswith(ROOT):
            listed = [n.strip().split(" as ")[0] for n in names.strip("()").split(",")]
            yield from _targets(base, [n for n in listed if n])


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (itself left out)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        found = _cython_imports(path) if path.suffix == ".pyx" else _python_imports(module, path)
        graph[module] = set(found) - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the longest prefix that names ``module``."""
    best, best_len = -1, -1
    for i, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    return best


def test_every_module_has_a_layer() -> None:
    """Each module of the package falls in one of the documented layers."""
    assert len(MODULES) > 50
    missing = sorted(m for m in MODULES if layer_of(m) < 0)
    assert not missing, f"add these to LAYERS and docs/architecture.md: {missing}"


def test_the_graph_sees_imports_of_every_kind() -> None:
    """The walk finds module-level, function-level, TYPE_CHECKING and Cython imports."""
    graph = import_graph()
    # Module level; a lazy import inside a method (poll_arrow); under TYPE_CHECKING; Cython.
    assert "kafkaconsumer.internals.fetch.fetcher" in graph["kafkaconsumer.consumer"]
    assert "kafkaconsumer.internals.fetch.arrow_decoder" in graph["kafkaconsumer.consumer"]
    assert "kafkaconsumer.structs" in graph["kafkaconsumer.errors"]
    assert "kafkaconsumer.record._columns" in graph["kafkaconsumer.record._carrow"]


def test_no_import_circle() -> None:
    """No set of modules imports itself round."""
    found = sorted(sorted(c) for c in circles(import_graph()))
    assert not found, f"import circles: {found}"


def test_no_import_from_a_lower_layer_into_a_higher_one() -> None:
    """A module imports only modules of its own layer or of the layers below it."""
    graph = import_graph()
    wrong = sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert not wrong, "\n".join(wrong)


def test_architecture_page_lists_the_layers_in_this_order() -> None:
    """docs/architecture.md's layer table names the layers of :data:`LAYERS`, in order."""
    page = PACKAGE.parent / "docs" / "architecture.md"
    rows = re.findall(r"^\| \d+\. ([^|]+?) \|", page.read_text(encoding="utf-8"), re.M)
    assert [r.lower() for r in rows] == [name for name, _prefixes in LAYERS]


def test_circle_finder_finds_a_circle() -> None:
    """The circle search reports a three-module loop and nothing for a chain."""
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(loop) == [frozenset({"a", "b", "c"})]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
