"""``jest --json`` on real reports of jest 29: describe blocks, skips, a test file that does not parse."""

from __future__ import annotations

import json
from pathlib import Path

from reliabench.hidden_tests.reports import ParsedReport, ReportInput
from reliabench.hidden_tests.reports.jest_json import JestJsonReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"


def _parse(data: bytes) -> ParsedReport:
    return JestJsonReport().parse(ReportInput(data, 1, workdir="/work"))


def test_a_real_report() -> None:
    parsed = _parse((FIXTURES / "jest-sample.json").read_bytes())
    assert [(c.name, c.outcome) for c in parsed.cases] == [
        ("sample.spec.js::sample > passes", "passed"),
        ("sample.spec.js::sample > fails", "failed"),
        ("sample.spec.js::sample > is skipped", "skipped"),
        ("sample.spec.js::sample > is todo", "skipped"),
        ("sample.spec.js::sample > nested > ok 1 - looks like TAP", "passed"),
        ("sample.spec.js::top level", "passed"),
    ]
    assert len(parsed.problems) == 1 and parsed.problems[0].startswith("broken.spec.js: failed to run")


def test_a_real_exercise() -> None:
    parsed = JestJsonReport().parse(ReportInput((FIXTURES / "exercism-js-ledger.json").read_bytes(), 0,
                                                workdir="/work"))
    assert len(parsed.cases) == 11 and {c.outcome for c in parsed.cases} == {"passed"}
    assert parsed.cases[0].name == "ledger.spec.js::Ledger > empty ledger"


def test_entries_of_the_wrong_shape_are_problems() -> None:
    doc = {"testResults": [1, {"name": "/x/a.js", "assertionResults": [
        {"title": "t", "ancestorTitles": ["d"], "status": "weird"}, {"title": 3}, "x"]}]}
    parsed = _parse(json.dumps(doc).encode())
    assert [(c.name, c.outcome) for c in parsed.cases] == [("/x/a.js::d > t", "failed")]
    assert len(parsed.problems) == 3
    assert "not a jest JSON report" in _parse(b'{"a": 1}').problems[0]
