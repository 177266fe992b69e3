"""No structured report: one coarse outcome from the test command's exit status.

A task whose tool writes no report a format here can read (``report = "exit-code"``) gets
ONE test, :data:`EXIT_CODE_TEST`: ``passed`` when the command exited 0, ``failed`` otherwise
(killed, timed out, or any other status). This is the Aider polyglot harness's own verdict.
Its outcomes are *coarse*: per-test figures (how many tests a rollout passed, the
misapplied pass@k) are meaningless for such a task, and every result of it carries the flag
(:attr:`ParsedReport.coarse <reliabench.hidden_tests.reports.ParsedReport.coarse>`, the
record's ``meta["coarse_outcomes"]``) so that figures can say so or leave it out.

What the tested process can forge: everything -- code under test that calls ``exit(0)``
before a failing assertion passes. Prefer a structured report wherever the tool has one.
"""

from __future__ import annotations

from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput

__all__ = ["EXIT_CODE_TEST", "ExitCodeReport"]

EXIT_CODE_TEST: Final = "exit-code"
"""The name of the one test of a coarse task."""


class ExitCodeReport:
    """The ``exit-code`` pseudo-format: one coarse outcome."""

    name = "exit-code"
    coarse = True

    def parse(self, report: ReportInput) -> ParsedReport:
        """``passed`` for exit status 0, ``failed`` for anything else (or no status).

        Example:
            >>> ExitCodeReport().parse(ReportInput(None, returncode=0)).cases
            (ReportedCase(name='exit-code', outcome='passed', message=None, has_children=False),)
        """
        code = report.returncode
        if code == 0:
            return ParsedReport((ReportedCase(EXIT_CODE_TEST, "passed"),), coarse=True)
        why = "the command did not finish" if code is None else f"the command exited with status {code}"
        return ParsedReport((ReportedCase(EXIT_CODE_TEST, "failed", why),), coarse=True)
