"""The package's shape, checked from its source: no import circles.

Every import counts, wherever it is written (module level, inside a
function, under TYPE_CHECKING): an import moved into a function to dodge a
circle at load time still ties the two modules into one knot.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tide

SRC = Path(tide.__file__).parent
ROOT = SRC.parent  # the folder that holds the `tide` package


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of this package an import statement loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if MODULES[module].name != "__init__.py":
                package.pop()
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return [n for n in names if n in MODULES]


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of the package it imports (its own parent
    packages left out: Python loads them first whatever is written)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(
                    t
                    for t in _targets(module, node)
                    if t != module and not module.startswith(t + ".")
                )
        graph[module] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_circle_finder_finds_a_circle_and_no_false_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_relative_and_absolute_imports_resolve_to_modules() -> None:
    graph = import_graph()
    assert "tide.sched.types" in graph["tide.sched.cycle"]
    assert "tide.sched.cycle" in graph["tide.sched.passes"]


def test_no_import_circles() -> None:
    found = circles(import_graph())
    assert found == [], "modules that import each other (move the shared part down): " + "; ".join(
        " <-> ".join(g) for g in found
    )


# --- layers -------------------------------------------------------------------------


def _imports_external(path: Path, top: str) -> bool:
    """Whether the module imports the external package `top` anywhere."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == top for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(
            "."
        )[0] == top:
            return True
    return False


def test_client_and_server_do_not_import_each_other() -> None:
    """What both need lives below them (tide.display, tide.model, tide.defaults)."""
    graph = import_graph()
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        for a, b in (("tide.client", "tide.server"), ("tide.server", "tide.client"))
        if (m == a or m.startswith(a + ".")) and (t == b or t.startswith(b + "."))
    )
    assert crossing == [], "client and server import each other: " + "; ".join(crossing)


def test_sqlalchemy_stays_in_the_store_package() -> None:
    """The server, CLI and the rest reach the database through tide.store's
    repository functions only (issue 13): no query is written outside it."""
    using = sorted(
        m
        for m, path in MODULES.items()
        if not (m == "tide.store" or m.startswith("tide.store."))
        and _imports_external(path, "sqlalchemy")
    )
    assert using == [], (
        "SQLAlchemy outside tide.store (write the query as a named function in a "
        "tide.store repository module and call that): " + ", ".join(using)
    )


def test_the_import_check_sees_every_form_of_import(tmp_path: Path) -> None:
    """`import sqlalchemy`, `import sqlalchemy.orm as o`, `from sqlalchemy.orm import
    Session` (also inside a function) count; a relative or look-alike name does not."""
    for text in (
        "import sqlalchemy\n",
        "import os, sqlalchemy.orm as o\n",
        "def f():\n    from sqlalchemy.orm import Session\n",
        "from sqlalchemy import select\n",
    ):
        (tmp_path / "m.py").write_text(text)
        assert _imports_external(tmp_path / "m.py", "sqlalchemy"), text
    for text in ("import sqlalchemy_utils\n", "from . import sqlalchemy\n", "x = 'sqlalchemy'\n"):
        (tmp_path / "m.py").write_text(text)
        assert not _imports_external(tmp_path / "m.py", "sqlalchemy"), text


def test_the_core_imports_nothing_from_the_drivers_or_the_edges() -> None:
    """tide.sched is pure: no store, server, twin, executor or client below it."""
    edges = ("tide.server", "tide.sim", "tide.store", "tide.exec", "tide.cli", "tide.client")
    found = sorted(
        f"{m} -> {t}"
        for m, targets in import_graph().items()
        if m == "tide.sched" or m.startswith("tide.sched.")
        for t in targets
        if any(t == e or t.startswith(e + ".") for e in edges)
    )
    assert found == [], "the core imports a driver or an edge: " + "; ".join(found)
