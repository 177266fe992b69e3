"""The ``[stdio]`` table of a stdin/stdout task and its case files, checked at suite load.

A task with ``test_runner = "stdio"`` is judged by running the agent's program once per case
with the case's input on standard input, and comparing what it prints with the expected
output OUTSIDE the sandboxed process (:mod:`reliabench.hidden_tests.stdio`)::

    task.toml
        test_runner = "stdio"
        [stdio]                         # every key optional
        program = "solution.py"         # workspace file run as `python PROGRAM` (the cwd is the workspace)
        compare = "whitespace"          # "exact" | "whitespace" | "float"
        float_tolerance = 1e-6          # absolute or relative, for compare = "float"
        case_timeout_s = 4.0            # wall (and CPU) seconds per case; default: the task's timeout_s
        max_output_bytes = 1048576      # a case whose stdout is larger fails

    tests/NAME.in                       # one case: its standard input ...
    tests/NAME.out                      # ... and its expected standard output (never shown to the program)

Cases run in the order of their names. Comparison rules:

* ``exact``: the output equals the expected output, byte for byte (as UTF-8 text).
* ``whitespace``: the whitespace-separated tokens are equal (line breaks, runs of spaces and
  trailing newlines do not matter), as most online judges compare.
* ``float``: tokens as for ``whitespace``; two tokens that both parse as finite numbers are
  equal when ``|a - b| <= float_tolerance * max(1, |b|)``; other tokens must be equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["COMPARE_MODES", "StdioCase", "StdioConfig", "parse_stdio_config", "stdio_cases"]

COMPARE_MODES: Final = ("exact", "whitespace", "float")
_KEYS: Final = frozenset({"program", "compare", "float_tolerance", "case_timeout_s", "max_output_bytes"})


@dataclass(frozen=True, slots=True)
class StdioCase:
    """One input/output pair of a stdio task.

    Attributes:
        name: The case name (the file stem); its test name is ``case:NAME``.
        input: Path of ``NAME.in``.
        expected: Path of ``NAME.out``.
    """

    name: str
    input: Path
    expected: Path

    @property
    def test_name(self) -> str:
        """The name of this case's outcome in a rollout record."""
        return f"case:{self.name}"


@dataclass(frozen=True, slots=True)
class StdioConfig:
    """How a stdio task runs and judges the agent's program (see the module docstring).

    Attributes:
        program: Workspace-relative path of the Python program to run.
        compare: ``exact``, ``whitespace`` or ``float``.
        float_tolerance: Tolerance of ``float`` comparisons.
        case_timeout_s: Wall and CPU seconds per case (None: the task's ``timeout_s``).
        max_output_bytes: Largest standard output a case may produce.
        cases: The cases, in name order.
    """

    program: str = "solution.py"
    compare: str = "whitespace"
    float_tolerance: float = 1e-6
    case_timeout_s: float | None = None
    max_output_bytes: int = 1024 * 1024
    cases: tuple[StdioCase, ...] = ()


def stdio_cases(tests_dir: Path, problems: list[str]) -> tuple[StdioCase, ...]:
    """The ``NAME.in`` / ``NAME.out`` pairs of ``tests_dir``; unpaired files are problems."""
    if not tests_dir.is_dir():
        return ()
    ins = {p.stem: p for p in tests_dir.iterdir() if p.is_file() and p.suffix == ".in"}
    outs = {p.stem: p for p in tests_dir.iterdir() if p.is_file() and p.suffix == ".out"}
    for name in sorted(set(ins) ^ set(outs)):
        have, miss = (".in", ".out") if name in ins else (".out", ".in")
        problems.append(f"{tests_dir / (name + have)}: has no {name}{miss} (stdio cases come in pairs)")
    cases = tuple(StdioCase(n, ins[n], outs[n]) for n in sorted(set(ins) & set(outs)))
    if not cases and not ins and not outs:
        problems.append(f"{tests_dir}: no NAME.in / NAME.out case files (test_runner = 'stdio')")
    return cases


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def parse_stdio_config(meta: dict[str, Any], task_dir: Path, problems: list[str]) -> StdioConfig | None:
    """Read the ``[stdio]`` table of ``task_dir/task.toml`` and its cases, appending problems.

    Args:
        meta: The parsed task.toml.
        task_dir: The task folder.
        problems: Where each problem is appended as ``path: field: what was expected``.

    Returns:
        The configuration, or None when it has problems.
    """
    where = task_dir / "task.toml"
    before = len(problems)
    table = meta.get("stdio", {})
    if not isinstance(table, dict):
        problems.append(f"{where}: stdio: expected a table")
        return None
    for key in sorted(set(table) - _KEYS):
        problems.append(f"{where}: stdio.{key}: unknown key (allowed: {', '.join(sorted(_KEYS))})")
    program = table.get("program", "solution.py")
    if (not isinstance(program, str) or not program or program.startswith("/")
            or ".." in program.replace("\\", "/").split("/")):
        problems.append(f"{where}: stdio.program: expected a workspace-relative path, got {program!r}")
    compare = table.get("compare", "whitespace")
    if compare not in COMPARE_MODES:
        problems.append(f"{where}: stdio.compare: expected one of {', '.join(map(repr, COMPARE_MODES))}, "
                        f"got {compare!r}")
    tol = table.get("float_tolerance", 1e-6)
    if not _number(tol) or tol < 0:
        problems.append(f"{where}: stdio.float_tolerance: expected a number >= 0, got {tol!r}")
    case_timeout = table.get("case_timeout_s")
    if case_timeout is not None and (not _number(case_timeout) or case_timeout <= 0):
        problems.append(f"{where}: stdio.case_timeout_s: expected a positive number, got {case_timeout!r}")
    max_out = table.get("max_output_bytes", 1024 * 1024)
    if isinstance(max_out, bool) or not isinstance(max_out, int) or max_out < 1:
        problems.append(f"{where}: stdio.max_output_bytes: expected an integer >= 1, got {max_out!r}")
    cases = stdio_cases(task_dir / "tests", problems)
    if len(problems) > before:
        return None
    return StdioConfig(
        program=str(program), compare=str(compare), float_tolerance=float(tol),
        case_timeout_s=None if case_timeout is None else float(case_timeout),
        max_output_bytes=int(max_out), cases=cases,
    )
