"""The import graph of src/reliabench: no circle, and the arrows the design forbids are absent.

Every ``import`` of a ``reliabench`` module counts: at module level, inside a function (a lazy
import is still an arrow) and under ``if TYPE_CHECKING:`` (a type that needs a circle to be
named is a circle in the design). Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and
``a.b``, so it is an arrow to those packages too (unless the importer is inside them).

Rules (docs/guide.md, "Layout of the package"):

* no import circle, of modules or through a package's ``__init__``;
* ``metrics/`` and ``studies/`` compute and never import ``report/`` (the renderers), nor the
  command line or the read side of runs;
* the core -- ``run/``, ``agents/``, ``tasks/``, ``sandbox/``, ``hidden_tests/``, ``warm/``,
  ``store``, ``records`` -- knows nothing of the simulated wing (``sim/``);
* ``report/`` renders and never imports the command line (``cli``, ``commands/``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "reliabench"

Graph = dict[str, dict[str, int]]  # module -> imported module -> line of the first such import


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted(SRC.rglob("*.py")) if "bundled" not in p.parts}


def _imported(node: ast.AST, mods: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The reliabench modules an ``import`` statement names (a ``from m import name`` that is a
    submodule names the submodule)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                 for a in node.names]
    for name in names:
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in mods and name.startswith("reliabench"):
            yield name, getattr(node, "lineno", 0)


def build_graph(mods: dict[str, Path] | None = None) -> Graph:
    """Each module's arrows, with the line of the import (every import statement counts)."""
    mods = mods if mods is not None else _modules()
    graph: Graph = {}
    for name, path in mods.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target, line in _imported(node, mods):
                parts = target.split(".")
                # importing a.b.c runs a/__init__ and a/b/__init__ first
                for i in range(2, len(parts) + 1):
                    step = ".".join(parts[:i])
                    if step in mods and step != name and not name.startswith(step + "."):
                        edges.setdefault(step, line)
        graph[name] = edges
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, {}))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _in(module: str, areas: tuple[str, ...]) -> bool:
    return any(module == f"reliabench.{a}" or module.startswith(f"reliabench.{a}.") for a in areas)


def forbidden(graph: Graph, sources: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    """``file:line: a -> b`` for every arrow from a module of ``sources`` to one of ``targets``."""
    mods = _modules()
    return [f"{mods[a].relative_to(SRC.parent)}:{line}: {a} -> {b}"
            for a, edges in sorted(graph.items()) if _in(a, sources)
            for b, line in sorted(edges.items()) if _in(b, targets)]


GRAPH = build_graph()

CORE = ("run", "agents", "tasks", "sandbox", "hidden_tests", "warm", "store", "records")


def test_no_import_circle() -> None:
    found = circles(GRAPH)
    described = ["\n    ".join(f"{a} -> {b} (line {GRAPH[a][b]})" for a in c for b in c if b in GRAPH[a])
                 for c in found]
    assert not found, "import circles:\n  " + "\n  ".join(described)


@pytest.mark.parametrize(("sources", "targets", "why"), [
    (("metrics", "studies"), ("report", "cli", "commands", "runs"),
     "metrics and studies compute; the renderers, the command line and the read side use them"),
    (CORE, ("sim",), "the core knows only the simulated flag; simulation lives in sim/"),
    (("report",), ("cli", "commands"), "renderers render; the command line calls them"),
])
def test_no_forbidden_arrow(sources: tuple[str, ...], targets: tuple[str, ...], why: str) -> None:
    bad = forbidden(GRAPH, sources, targets)
    assert not bad, f"{why}:\n  " + "\n  ".join(bad)


def test_the_checks_see_what_they_must(tmp_path: Path) -> None:
    """A circle, a lazy import, a TYPE_CHECKING import and a package's __init__ all count."""
    pkg = tmp_path / "reliabench"
    (pkg / "metrics").mkdir(parents=True)
    (pkg / "report").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "metrics" / "__init__.py").write_text("")
    (pkg / "metrics" / "a.py").write_text("def f():\n    from reliabench.report import marks\n")
    (pkg / "report" / "__init__.py").write_text("from reliabench.report.render import x\n")
    (pkg / "report" / "marks.py").write_text("")
    (pkg / "report" / "render.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from reliabench.metrics.a import f\n")
    mods = {_module_in(p, tmp_path): p for p in sorted(pkg.rglob("*.py"))}
    graph = build_graph(mods)
    assert graph["reliabench.metrics.a"] == {"reliabench.report": 2, "reliabench.report.marks": 2}
    assert circles(graph) == [["reliabench.metrics.a", "reliabench.report", "reliabench.report.render"]]


def _module_in(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
