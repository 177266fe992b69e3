"""``go test -json`` on real streams of Go 1.19: subtests, a crash, a build failure, a forged line."""

from __future__ import annotations

from pathlib import Path

from reliabench.hidden_tests.reports import ParsedReport, ReportInput
from reliabench.hidden_tests.reports.go_test_json import GoTestJsonReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"


def _parse(name: str) -> ParsedReport:
    return GoTestJsonReport().parse(ReportInput((FIXTURES / name).read_bytes(), 1))


def test_tests_and_subtests() -> None:
    parsed = _parse("go-sample.jsonl")
    got = [(c.name, c.outcome, c.has_children) for c in parsed.cases]
    assert got[:7] == [
        ("sample::TestPasses", "passed", False),
        ("sample::TestFails", "failed", False),
        ("sample::TestSkipped", "skipped", False),
        ("sample::TestTable", "failed", True),
        ("sample::TestTable/first_case", "passed", False),
        ("sample::TestTable/second/with_slash", "failed", False),
        ("sample::TestTable/---_PASS:_looks_like_a_line", "passed", False),
    ]
    fails = next(c for c in parsed.cases if c.name == "sample::TestFails")
    assert fails.message == "sample_test.go:11: got 2, want 3"


def test_go_1_19_turns_a_printed_pass_line_into_an_event() -> None:
    # the residual documented in docs/threat-model.md: test2json before Go 1.20 reads the
    # binary's text, so a test that prints '--- PASS: TestForged' creates that test. It is not
    # an expected test of any task (expected tests come from the reference's report), so it
    # cannot stand in for one; a forged line for an expected test that FAILED keeps it failed
    # (the worst of its outcomes counts, hidden_tests/reports/test_init.py).
    names = {c.name: c.outcome for c in _parse("go-sample.jsonl").cases}
    assert names["sample::TestForged"] == "passed"


def test_a_crashing_test_binary_leaves_the_tests_after_it_unlisted() -> None:
    parsed = _parse("go-crash.jsonl")
    assert [(c.name, c.outcome) for c in parsed.cases] == [("crash::TestBefore", "passed"),
                                                             ("crash::TestPanics", "failed")]
    assert "crash::TestAfter" not in {c.name for c in parsed.cases}  # so it counts as not run


def test_a_build_failure_lists_no_test() -> None:
    parsed = _parse("go-broken.jsonl")
    assert parsed.cases == () and "not go test events" in parsed.problems[0]


def test_a_real_exercise() -> None:
    parsed = _parse("exercism-go-bowling.jsonl")
    leaves = [c for c in parsed.cases if not c.has_children]
    assert len(leaves) == 31 and {c.outcome for c in leaves} == {"passed"}
    assert parsed.problems == ()


def test_a_test_that_started_and_never_ended_failed() -> None:
    data = b'{"Action":"run","Package":"p","Test":"TestA"}\n{"Action":"output","Package":"p","Test":"TestA","Output":"x\\n"}\n'
    parsed = GoTestJsonReport().parse(ReportInput(data))
    assert [(c.name, c.outcome) for c in parsed.cases] == [("p::TestA", "failed")]
    assert "never ended" in (parsed.cases[0].message or "")
    assert any("no result line for package" in p for p in parsed.problems)


def test_events_of_the_wrong_shape_are_skipped() -> None:
    data = b'[1]\n{"Action":1}\n{"Action":"pass","Package":"p","Test":""}\n{"Action":"pass","Package":"p","Test":"T"}\n'
    parsed = GoTestJsonReport().parse(ReportInput(data))
    assert [(c.name, c.outcome) for c in parsed.cases] == [("p::T", "passed")]
    assert "3 line(s)" in parsed.problems[0]
