"""CTRF on a real report of jest-ctrf-json-reporter."""

from __future__ import annotations

import json
from pathlib import Path

from reliabench.hidden_tests.reports import ParsedReport, ReportInput
from reliabench.hidden_tests.reports.ctrf import CtrfReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"


def _parse(data: bytes) -> ParsedReport:
    return CtrfReport().parse(ReportInput(data, 1, workdir="/work"))


def test_a_real_report() -> None:
    parsed = _parse((FIXTURES / "ctrf-jest-sample.json").read_bytes())
    assert [(c.name, c.outcome) for c in parsed.cases] == [
        ("sample.spec.js::sample passes", "passed"),
        ("sample.spec.js::sample fails", "failed"),
        ("sample.spec.js::sample is skipped", "skipped"),
        ("sample.spec.js::sample is todo", "failed"),  # the reporter says 'other': not a pass
        ("sample.spec.js::sample nested ok 1 - looks like TAP", "passed"),
        ("sample.spec.js::top level", "passed"),
    ]


def test_suites_stand_in_for_files_and_the_summary_is_checked() -> None:
    doc = {"results": {"summary": {"tests": 5}, "tests": [
        {"name": "a", "status": "passed", "suite": ["S", "T"]},
        {"name": "b", "status": "pending", "suite": "S"},
        {"name": "c", "status": "failed", "message": "m"},
        {"name": "", "status": "passed"}]}}
    parsed = _parse(json.dumps(doc).encode())
    assert [(c.name, c.outcome, c.message) for c in parsed.cases] == [
        ("S > T::a", "passed", None), ("S::b", "skipped", None), ("c", "failed", "m")]
    assert any("summary says 5 tests" in p for p in parsed.problems)
    assert any("results.tests[3]" in p for p in parsed.problems)
    assert "not a CTRF report" in _parse(b"[]").problems[0]
