"""Stable ``cargo test`` text: ``test NAME ... ok|FAILED|ignored``, one block per test target.

::

         Running tests/gigasecond.rs (target/debug/deps/gigasecond-5e96bfbcf307d040)

    running 2 tests
    test date_only_specification_of_time ... ok
    test full_time_specified ... FAILED

    failures:

    ---- full_time_specified stdout ----
    thread 'full_time_specified' panicked at tests/gigasecond.rs:20:5: ...

    failures:
        full_time_specified

    test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

Rust's JSON test output is nightly-only, so this text is what stable cargo gives. The
``Running`` and ``Doc-tests`` lines go to standard error: run the command with ``2>&1`` into
the report file and each test is named ``TARGET::NAME`` (``tests/gigasecond.rs::full_time_specified``,
``doc-tests gigasecond::src/lib.rs - f (line 3)``); without them it is just ``NAME``. Use
``--no-fail-fast``: cargo otherwise stops at the first target with a failure, and the tests
of the targets after it are not run (they count as failed either way).

Test lines are read only between a ``running N tests`` line and the block's ``failures:``
or ``test result:`` line: the captured output of failing tests, printed in the failures
section, is never read as a test line. A block whose ``running N`` or summary counts
disagree with the lines read is a problem. ``ok`` is ``passed``, ``FAILED`` is ``failed``,
``ignored`` is ``skipped``; a ``- should panic`` suffix is not part of the name.

What the tested process can forge: a test that writes to the process's standard output
directly (not through the captured ``println!``) can print a test line into the block
(docs/threat-model.md); the counts then disagree unless it forges those too.
"""

from __future__ import annotations

import re
from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput
from reliabench.hidden_tests.reports._common import decode_text, finish, missing
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["CargoLibtestReport"]

_RUNNING_TARGET: Final = re.compile(r"^\s*Running (?:unittests )?(\S+)")
_DOC_TESTS: Final = re.compile(r"^\s*Doc-tests (\S+)")
_RUNNING_N: Final = re.compile(r"^running (\d+) tests?$")
_TEST: Final = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored)(?:, .*)?$")
_RESULT: Final = re.compile(r"^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored;")
_OUTCOME: Final[dict[str, ReportedOutcome]] = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}
_SHOULD_PANIC: Final = " - should panic"


class CargoLibtestReport:
    """The ``cargo-libtest`` report format."""

    name = "cargo-libtest"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The tests of ``cargo test`` output (see the module docstring)."""
        if report.data is None:
            return missing()
        problems: list[str] = []
        text = decode_text(report.data, problems)
        cases: list[ReportedCase] = []
        counts_ok = True
        target = ""
        block: list[ReportedCase] | None = None  # the tests of the open block
        announced = 0
        reading = False
        blocks = 0
        for line in text.splitlines():
            line = line.rstrip("\r")
            starts = _RUNNING_TARGET.match(line) or _DOC_TESTS.match(line) or _RUNNING_N.match(line)
            if block is not None and starts:
                # a test binary that stopped before its result line (it exited or crashed):
                # what it listed stays, and the next target's block begins
                problems.append(f"{target or 'a test target'}: the output ends before its test result "
                                f"line ({len(block)} of {announced} tests listed)")
                cases += block
                block = None
            if block is None:
                m = _RUNNING_TARGET.match(line) or _DOC_TESTS.match(line)
                if m:
                    target = m.group(1) if m.re is _RUNNING_TARGET else f"doc-tests {m.group(1)}"
                    continue
                n = _RUNNING_N.match(line)
                if n:
                    block, announced, reading = [], int(n.group(1)), True
                    blocks += 1
                continue
            if reading and line == "failures:":
                reading = False
                continue
            result = _RESULT.match(line)
            if result:
                counts_ok &= _check_block(target, block, announced, result, problems)
                cases += block
                block = None
                continue
            test = _TEST.match(line) if reading else None
            if test:
                name = test.group(1)
                if name.endswith(_SHOULD_PANIC):
                    name = name[:-len(_SHOULD_PANIC)]
                block.append(ReportedCase(f"{target}::{name}" if target else name, _OUTCOME[test.group(2)]))
        if block is not None:
            problems.append(f"{target or 'a test target'}: the output ends before its test result line "
                            f"({len(block)} of {announced} tests listed)")
            cases += block
        if not blocks:
            problems.append("no 'running N tests' line: the tests did not build or run")
        return finish(cases, problems, inconsistent=not counts_ok)


def _check_block(target: str, block: list[ReportedCase], announced: int, result: re.Match[str],
                 problems: list[str]) -> bool:
    """Whether the block's counts agree with its lines (a problem line for each that does not)."""
    where = target or "a test target"
    before = len(problems)
    if len(block) != announced:
        problems.append(f"{where}: 'running {announced} tests' but {len(block)} test lines")
    counts = {o: sum(1 for c in block if c.outcome == o) for o in ("passed", "failed", "skipped")}
    said = {"passed": int(result.group(2)), "failed": int(result.group(3)), "skipped": int(result.group(4))}
    if counts != said:
        problems.append(f"{where}: the test result line says {said['passed']} passed, {said['failed']} "
                        f"failed, {said['skipped']} ignored; the test lines say {counts['passed']}, "
                        f"{counts['failed']}, {counts['skipped']}")
    return len(problems) == before
