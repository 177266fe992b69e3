r"""The expected tests of a ``test_runner = "plain"`` task, read from the source on the host.

No sandbox and no import: the hidden test files are trusted suite content, parsed with
:mod:`ast`. The names and the order are those pytest collects (``file::function``, files in
pytest's order, functions in definition order; a redefined function runs as its last definition, in the
place of its first), so the fresh path (pytest) and the lean runner expect the same tests.

A file that is not plain is refused with one line per problem (use ``test_runner = "pytest"``
for it): a test function with parameters (fixtures), a decorator other than
``@pytest.mark.security``, a test class, or a module-level import or assignment that binds a
``test*`` name.

Examples:
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "test_a.py").write_text("def test_x():\n    assert 1\n")
    >>> [(t.name, t.security) for t in collect_plain_tests(d)]
    [('test_a.py::test_x', False)]
"""

from __future__ import annotations

import ast
from pathlib import Path

from reliabench.errors import SuiteError
from reliabench.records import TestOutcome
from reliabench.warm.plain_runner import collect_order

__all__ = ["collect_plain_tests"]


def _is_security_mark(node: ast.expr) -> bool:
    """``@pytest.mark.security`` or ``@mark.security``."""
    return isinstance(node, ast.Attribute) and node.attr == "security" and (
        (isinstance(node.value, ast.Attribute) and node.value.attr == "mark")
        or (isinstance(node.value, ast.Name) and node.value.id == "mark")
    )


def _bound_names(node: ast.stmt) -> list[str]:
    names: list[str] = []
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names += [(a.asname or a.name).split(".")[0] for a in node.names]
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


def collect_plain_tests(tests_dir: Path) -> tuple[TestOutcome, ...]:
    """The tests of a plain hidden-test directory, named as pytest collects them.

    Args:
        tests_dir: The task's hidden tests.

    Returns:
        One ``TestOutcome`` per test function (placeholder outcome ``skipped``, nothing ran).

    Raises:
        SuiteError: A file cannot be parsed, is not plain, or there is no test at all.
    """
    problems: list[str] = []
    found: list[TestOutcome] = []
    for rel in collect_order(str(tests_dir)):
        path = tests_dir / rel
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError) as exc:
            problems.append(f"{path}: cannot parse a plain test file ({exc})")
            continue
        order: dict[str, bool] = {}
        for node in tree.body:
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not node.name.startswith("test"):
                    continue
                if isinstance(node, ast.AsyncFunctionDef):
                    problems.append(f"{where}: {node.name} is async (not a plain test; use "
                                    "test_runner = \"pytest\")")
                    continue
                args = node.args
                if args.args or args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg:
                    problems.append(f"{where}: {node.name} takes parameters (fixtures are not "
                                    "plain; use test_runner = \"pytest\")")
                    continue
                others = [d for d in node.decorator_list if not _is_security_mark(d)]
                if others:
                    problems.append(f"{where}: {node.name} has a decorator other than "
                                    "@pytest.mark.security (use test_runner = \"pytest\")")
                    continue
                order[node.name] = bool(node.decorator_list)  # a redefinition keeps the place
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                problems.append(f"{where}: test class {node.name} (not plain; use "
                                "test_runner = \"pytest\")")
            else:
                bad = [n for n in _bound_names(node) if n.startswith("test")]
                if bad:
                    problems.append(f"{where}: binds {bad[0]!r} outside a def (not plain; use "
                                    "test_runner = \"pytest\")")
        found += [TestOutcome(f"{rel}::{name}", "skipped", sec) for name, sec in order.items()]
    if not found and not problems:
        problems.append(f"{tests_dir}: no tests collected")
    if problems:
        raise SuiteError(problems)
    return tuple(found)
