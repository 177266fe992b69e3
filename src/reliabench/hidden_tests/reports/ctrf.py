"""CTRF, the Common Test Report Format: one JSON document, ``results.tests`` a flat list.

::

    {"results": {"tool": {"name": "jest"},
                 "summary": {"tests": 2, "passed": 1, "failed": 1, ...},
                 "tests": [{"name": "Ledger one entry", "status": "passed", "duration": 3,
                            "filePath": "/work/ledger.spec.js", "suite": "Ledger"}, ...]}}

A test is named ``FILE::NAME`` (the file relative to the working directory; without a
``filePath``, the ``suite`` stands in, or nothing). ``passed`` and ``failed`` are what they
say; ``skipped`` and ``pending`` are ``skipped``; ``other`` and anything unknown are
``failed``. A summary whose ``tests`` count differs from the list's length is a problem.
"""

from __future__ import annotations

from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput
from reliabench.hidden_tests.reports._common import cut, finish, load_json, missing, relative_to
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["CtrfReport"]

_STATUS: Final[dict[str, ReportedOutcome]] = {
    "passed": "passed", "failed": "failed", "skipped": "skipped", "pending": "skipped",
}


class CtrfReport:
    """The ``ctrf`` report format."""

    name = "ctrf"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The tests of a CTRF document (see the module docstring)."""
        if report.data is None:
            return missing()
        problems: list[str] = []
        doc = load_json(report.data, problems)
        results = doc.get("results") if isinstance(doc, dict) else None
        tests = results.get("tests") if isinstance(results, dict) else None
        if doc is not None and not isinstance(tests, list):
            problems.append("no results.tests list: not a CTRF report")
        cases: list[ReportedCase] = []
        for i, test in enumerate(tests if isinstance(tests, list) else ()):
            case = _case(test, report.workdir)
            if case is None:
                problems.append(f"results.tests[{i}]: not a test (needs a name and a status; ignored)")
            else:
                cases.append(case)
        summary = results.get("summary") if isinstance(results, dict) else None
        inconsistent = False
        if isinstance(summary, dict) and isinstance(tests, list):
            stated = summary.get("tests")
            if isinstance(stated, int) and stated != len(tests):
                problems.append(f"the summary says {stated} tests, the list has {len(tests)}")
                inconsistent = True
        return finish(cases, problems, inconsistent=inconsistent)


def _case(test: object, workdir: str) -> ReportedCase | None:
    if not isinstance(test, dict):
        return None
    name, status = test.get("name"), test.get("status")
    if not isinstance(name, str) or not name or not isinstance(status, str):
        return None
    group = test.get("filePath")
    if isinstance(group, str) and group:
        group = relative_to(group, workdir)
    else:
        suite = test.get("suite")
        if isinstance(suite, list) and all(isinstance(s, str) for s in suite):
            suite = " > ".join(suite)
        group = suite if isinstance(suite, str) else ""
    outcome = _STATUS.get(status, "failed")
    message = test.get("message")
    if not isinstance(message, str):
        message = None if status in _STATUS else f"status {status[:40]!r}"
    return ReportedCase(f"{group}::{name}" if group else name, outcome,
                        cut(message) if outcome != "passed" else None)
