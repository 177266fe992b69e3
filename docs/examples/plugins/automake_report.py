"""A report format plugin: the ``PASS: name`` lines of Automake's parallel test harness.

``make check`` writes ``test-suite.log`` and, per test, a ``.trs`` file with lines such as
``:test-result: PASS``; its summary on standard output is one line per test::

    PASS: tests/parse
    FAIL: tests/overflow
    SKIP: tests/network

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.report_formats"]
    automake = "automake_report:AutomakeReport"

Then a task's ``[test_command]`` can say ``report = "automake"``.
"""

from __future__ import annotations

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput, merge_cases
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["AutomakeReport"]

_RESULTS: dict[str, ReportedOutcome] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped",
                                        "XFAIL": "xfailed", "XPASS": "failed", "ERROR": "error"}


class AutomakeReport:
    """Reads ``RESULT: NAME`` lines; anything else is ignored."""

    name = "automake"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """One case per ``RESULT: NAME`` line (never raises)."""
        if report.data is None:
            return ParsedReport((), ("no report was written",), found=False)
        problems: list[str] = []
        cases = []
        for line in report.data.decode("utf-8", errors="replace").splitlines():
            result, sep, name = line.partition(": ")
            if sep and result in _RESULTS and name.strip():
                cases.append(ReportedCase(name.strip(), _RESULTS[result]))
        return ParsedReport(merge_cases(cases, problems), tuple(problems))
