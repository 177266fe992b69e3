"""TAP, the Test Anything Protocol (versions 12 to 14), subtests included.

::

    TAP version 13
    # Subtest: ledger
        ok 1 - empty ledger
        not ok 2 - one entry
          ---
          error: 'expected ...'
          ...
        1..2
    not ok 1 - ledger
    1..1

Written by Node's test runner (``node --test --test-reporter=tap``), bats, Perl's prove,
tape and many others. A test is named by its description, a subtest as ``PARENT > CHILD``
(the description of the enclosing test line, four spaces less indented, or the ``# Subtest:``
comment that announced it); a test line without a description is named by its number.
``ok`` is ``passed``, ``not ok`` is ``failed``; a ``# SKIP`` directive is ``skipped``; a
``# TODO`` test is ``xfailed`` when it failed and ``passed`` when it passed (grading turns
an undeclared xfail into a failure). YAML diagnostic blocks are skipped whole (a line in
them is never a test line). ``Bail out!`` ends the reading; a plan (``1..N``) that does not
match the tests listed at its level is a problem.

What the tested process can forge: TAP arrives on standard output, where the code under test
writes too; a line it prints that looks like a test line is read as one (docs/threat-model.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput
from reliabench.hidden_tests.reports._common import decode_text, finish, missing
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["TapReport"]

_TEST: Final = re.compile(r"^(not ok|ok)\b(?:\s+(\d+))?\s*(?:-\s*)?(.*)$")
_DIRECTIVE: Final = re.compile(r"(?<!\\)#\s*(skip|todo)\b(.*)$", re.IGNORECASE)
_PLAN: Final = re.compile(r"^1\.\.(\d+)\b")
_SUBTEST: Final = re.compile(r"^#\s*Subtest:\s*(.*)$")
_MAX_DEPTH: Final = 64
_MORE: Final = "more than planned"


@dataclass
class _Level:
    """The tests read at one indentation level since its enclosing test line."""

    cases: list[ReportedCase] = field(default_factory=list)
    tests: int = 0
    plan: int | None = None
    announced: str | None = None


class TapReport:
    """The ``tap`` report format."""

    name = "tap"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The tests of a TAP stream (see the module docstring)."""
        if report.data is None:
            return missing()
        problems: list[str] = []
        text = decode_text(report.data, problems)
        levels: list[_Level] = [_Level()]
        yaml_indent: int | None = None
        too_deep = 0
        for line in text.splitlines():
            body = line.lstrip(" ")
            indent = len(line) - len(body)
            if yaml_indent is not None:
                if indent == yaml_indent and body.rstrip() == "...":
                    yaml_indent = None
                    continue
                if indent < yaml_indent and body.strip():
                    yaml_indent = None  # a block left open: the next line at a lower level ends it
                else:
                    continue
            if body.startswith("---") and body.rstrip() == "---":
                yaml_indent = indent
                continue
            level = indent // 4
            if level > _MAX_DEPTH:
                too_deep += 1
                continue
            if body.startswith("Bail out!"):
                problems.append(f"bailed out: {body[9:].strip()[:200]}")
                break
            if level + 1 > len(levels):
                levels.extend(_Level() for _ in range(level + 1 - len(levels)))
            sub = _SUBTEST.match(body)
            if sub:
                _fold(levels, level + 1, problems)
                levels[level].announced = sub.group(1).strip()
                continue
            plan = _PLAN.match(body)
            if plan:
                levels[level].plan = int(plan.group(1))
                continue
            test = _TEST.match(body)
            if test:
                _test_line(levels, level, test, problems)
        if too_deep:
            problems.append(f"{too_deep} line(s) indented deeper than {_MAX_DEPTH} subtest levels (ignored)")
        _fold(levels, 1, problems)
        if levels[0].plan is None:
            problems.append("no plan line (1..N): the stream may have been cut")
        _check_plan(levels[0], problems, "the top level")
        # more test lines than a plan announced: lines were added (fewer: the stream was cut)
        return finish(levels[0].cases, problems, inconsistent=any(_MORE in p for p in problems))


def _test_line(levels: list[_Level], level: int, test: re.Match[str], problems: list[str]) -> None:
    ok, number, rest = test.group(1) == "ok", test.group(2), test.group(3)
    directive = _DIRECTIVE.search(rest)
    description = (rest[:directive.start()] if directive else rest).strip().replace("\\#", "#")
    here = levels[level]
    here.tests += 1
    name = description or levels[level].announced or f"test {number or here.tests}"
    outcome: ReportedOutcome = "passed" if ok else "failed"
    if directive and directive.group(1).lower() == "skip":
        outcome = "skipped"
    elif directive and directive.group(1).lower() == "todo":
        outcome = "passed" if ok else "xfailed"
    _fold(levels, level + 2, problems)
    if len(levels) > level + 1:
        _close(here, levels.pop(), name, outcome, problems)
    else:
        here.cases.append(ReportedCase(name, outcome))
    here.announced = None


def _fold(levels: list[_Level], depth: int, problems: list[str]) -> None:
    """Close the levels deeper than ``depth`` whose parent test line never came (a cut stream)."""
    while len(levels) > depth:
        child = levels.pop()
        parent = levels[-1]
        name = parent.announced or "(unnamed subtest)"
        if child.cases:
            problems.append(f"{name}: its subtests ended without its test line")
            _close(parent, child, name, "failed", problems)


def _close(parent: _Level, child: _Level, name: str, outcome: ReportedOutcome, problems: list[str]) -> None:
    """Move the finished subtests ``child`` under the test ``name`` of ``parent``."""
    _check_plan(child, problems, name)
    for case in child.cases:
        parent.cases.append(ReportedCase(f"{name} > {case.name}", case.outcome, case.message,
                                         case.has_children))
    parent.cases.append(ReportedCase(name, outcome, None, has_children=bool(child.cases)))


def _check_plan(level: _Level, problems: list[str], where: str) -> None:
    if level.plan is not None and level.plan != level.tests:
        more = f" ({_MORE})" if level.tests > level.plan else ""
        problems.append(f"{where}: the plan says {level.plan} tests, {level.tests} were listed{more}")
