"""The coarse ``exit-code`` pseudo-format."""

from __future__ import annotations

from reliabench.hidden_tests.reports import ReportInput
from reliabench.hidden_tests.reports.exit_code import EXIT_CODE_TEST, ExitCodeReport


def test_one_coarse_outcome_from_the_exit_status() -> None:
    fmt = ExitCodeReport()
    assert fmt.coarse
    ok = fmt.parse(ReportInput(b"ignored", returncode=0))
    assert ok.coarse and [(c.name, c.outcome) for c in ok.cases] == [(EXIT_CODE_TEST, "passed")]
    for code, why in ((1, "status 1"), (-9, "status -9"), (None, "did not finish")):
        bad = fmt.parse(ReportInput(None, returncode=code))
        assert [c.outcome for c in bad.cases] == ["failed"] and why in (bad.cases[0].message or "")
