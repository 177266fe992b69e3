"""``jest --json --outputFile=FILE``: one JSON document with every test file and its tests.

::

    {"numTotalTests": 11, "success": false,
     "testResults": [{"name": "/work/ledger.spec.js", "status": "failed", "message": "...",
                      "assertionResults": [{"ancestorTitles": ["Ledger"], "title": "one entry",
                                            "status": "failed", "failureMessages": ["..."]}]}]}

A test is named ``FILE::DESCRIBE > ... > TITLE`` with the file relative to the working
directory (``ledger.spec.js::Ledger > one entry``). ``passed`` and ``failed`` are what they
say; ``pending``, ``skipped``, ``todo`` and ``disabled`` are ``skipped`` (grading turns an
undeclared skip into a failure). A test file that failed to run (a syntax error, a module
that does not load) lists no tests: its expected tests are missing, so they count as not run,
and its message is a problem line.
"""

from __future__ import annotations

from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput
from reliabench.hidden_tests.reports._common import cut, finish, load_json, missing, relative_to
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["JestJsonReport"]

_STATUS: Final[dict[str, ReportedOutcome]] = {
    "passed": "passed", "failed": "failed", "pending": "skipped", "skipped": "skipped",
    "todo": "skipped", "disabled": "skipped", "focused": "passed",
}


class JestJsonReport:
    """The ``jest-json`` report format."""

    name = "jest-json"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The tests of a jest JSON report (see the module docstring)."""
        if report.data is None:
            return missing()
        problems: list[str] = []
        doc = load_json(report.data, problems)
        cases: list[ReportedCase] = []
        files = doc.get("testResults") if isinstance(doc, dict) else None
        if doc is not None and not isinstance(files, list):
            problems.append("no testResults list: not a jest JSON report")
        for i, file_result in enumerate(files if isinstance(files, list) else ()):
            if not isinstance(file_result, dict) or not isinstance(file_result.get("name"), str):
                problems.append(f"testResults[{i}]: not a test file result (ignored)")
                continue
            path = relative_to(file_result["name"], report.workdir)
            tests = file_result.get("assertionResults")
            if not isinstance(tests, list):
                tests = []
            if not tests and file_result.get("status") == "failed":
                why = file_result.get("message") or file_result.get("testExecError") or "it did not run"
                problems.append(f"{path}: failed to run: {cut(str(why))}")
            for j, test in enumerate(tests):
                case = _case(path, test)
                if case is None:
                    problems.append(f"testResults[{i}].assertionResults[{j}]: not a test result (ignored)")
                else:
                    cases.append(case)
        return finish(cases, problems)


def _case(path: str, test: object) -> ReportedCase | None:
    if not isinstance(test, dict):
        return None
    title, ancestors, status = test.get("title"), test.get("ancestorTitles", []), test.get("status")
    if (not isinstance(title, str) or not isinstance(status, str) or not isinstance(ancestors, list)
            or not all(isinstance(a, str) for a in ancestors)):
        return None
    outcome = _STATUS.get(status, "failed")
    messages = test.get("failureMessages")
    message = "\n".join(m for m in messages if isinstance(m, str)) if isinstance(messages, list) else None
    if status not in _STATUS:
        message = f"unknown status {status[:40]!r}"
    return ReportedCase(f"{path}::{' > '.join([*ancestors, title])}", outcome,
                        cut(message) if outcome != "passed" else None)
