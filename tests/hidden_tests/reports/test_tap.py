"""TAP on a real stream of Node's test runner, and on the corners of the protocol."""

from __future__ import annotations

from pathlib import Path

from reliabench.hidden_tests.reports import ParsedReport, ReportInput
from reliabench.hidden_tests.reports.tap import TapReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"


def _parse(data: bytes) -> ParsedReport:
    return TapReport().parse(ReportInput(data, 1))


def test_node_test_runner() -> None:
    parsed = _parse((FIXTURES / "node-tap-sample.txt").read_bytes())
    assert [(c.name, c.outcome, c.has_children) for c in parsed.cases] == [
        ("sample > passes", "passed", False),
        ("sample > fails", "failed", False),
        ("sample > is skipped", "skipped", False),
        ("sample > is todo and fails", "xfailed", False),
        # its name is a TAP line and it printed 'ok 99 - ...': neither is read as a test
        ("sample > nested > ok 1 - looks like a test line", "passed", False),
        ("sample > nested", "passed", True),
        ("sample", "failed", True),
        ("top level # with a hash", "passed", False),
    ]
    assert parsed.problems == ()


def test_yaml_blocks_are_never_test_lines() -> None:
    data = b"TAP version 13\nnot ok 1 - real\n  ---\n  ok 2 - inside yaml\n  ...\n1..1\n"
    parsed = _parse(data)
    assert [(c.name, c.outcome) for c in parsed.cases] == [("real", "failed")]


def test_plans_numbers_bail_out_and_directives() -> None:
    data = b"1..4\nok 1\nok 2 # skip no db\nnot ok 3 - t # TODO later\nok - escaped \\# hash\nBail out! disk full\nok 5 - after\n"
    parsed = _parse(data)
    assert [(c.name, c.outcome) for c in parsed.cases] == [
        ("test 1", "passed"), ("test 2", "skipped"), ("t", "xfailed"), ("escaped # hash", "passed")]
    assert any("bailed out: disk full" in p for p in parsed.problems)
    wrong_plan = _parse(b"1..3\nok 1 - a\n")
    assert any("plan says 3 tests, 1 were listed" in p for p in wrong_plan.problems)


def test_subtests_whose_parent_line_never_came() -> None:
    data = b"# Subtest: parent\n    ok 1 - child\n    not ok 2 - other\n"
    parsed = _parse(data)
    assert [(c.name, c.outcome) for c in parsed.cases] == [
        ("parent > child", "passed"), ("parent > other", "failed"), ("parent", "failed")]
    assert any("ended without its test line" in p for p in parsed.problems)
