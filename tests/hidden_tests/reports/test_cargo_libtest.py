"""Stable cargo's test text on real output of cargo 1.96: targets, doc-tests, captured output."""

from __future__ import annotations

from pathlib import Path

from reliabench.hidden_tests.reports import ParsedReport, ReportInput
from reliabench.hidden_tests.reports.cargo_libtest import CargoLibtestReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"


def _parse(data: bytes) -> ParsedReport:
    return CargoLibtestReport().parse(ReportInput(data, 101))


def test_a_real_run_with_three_targets() -> None:
    parsed = _parse((FIXTURES / "cargo-sample.txt").read_bytes())
    # libtest runs tests in parallel: the order of lines differs between runs
    assert sorted((c.name, c.outcome) for c in parsed.cases) == sorted([
        ("src/lib.rs::tests::unit_passes", "passed"),
        ("tests/sample.rs::fails", "failed"),
        ("tests/sample.rs::ignored", "passed"),  # --include-ignored
        ("tests/sample.rs::passes", "passed"),
        ("tests/sample.rs::prints_a_test_line", "passed"),
        ("tests/sample.rs::should_panic", "passed"),
        ("doc-tests sample::src/lib.rs - add_one (line 3)", "passed"),
    ])
    # 'test passes ... ok' printed by the failing test (in its captured output) was not read:
    # tests/sample.rs::passes was listed once
    assert parsed.problems == ()


def test_a_real_exercise() -> None:
    parsed = _parse((FIXTURES / "exercism-rust-gigasecond.txt").read_bytes())
    assert len(parsed.cases) == 5 and {c.outcome for c in parsed.cases} == {"passed"}
    assert parsed.cases[0].name.startswith("tests/gigasecond.rs::")


def test_without_the_running_lines_names_have_no_target() -> None:
    data = b"running 2 tests\ntest a ... ok\ntest b ... ignored, slow\n\ntest result: ok. 1 passed; 0 failed; 1 ignored; 0 measured\n"
    parsed = _parse(data)
    assert [(c.name, c.outcome) for c in parsed.cases] == [("a", "passed"), ("b", "skipped")]


def test_a_forged_line_makes_the_counts_disagree() -> None:
    data = (b"running 1 test\ntest real ... FAILED\ntest forged ... ok\n\nfailures:\n    real\n\n"
            b"test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured\n")
    parsed = _parse(data)
    assert any("'running 1 tests' but 2 test lines" in p for p in parsed.problems)
    assert any("test result line says 0 passed" in p for p in parsed.problems)


def test_a_build_failure_and_a_cut_block() -> None:
    assert "no 'running N tests' line" in _parse(b"error[E0425]: cannot find value `x`\n").problems[0]
    parsed = _parse(b"running 3 tests\ntest a ... ok\n")
    assert [(c.name, c.outcome) for c in parsed.cases] == [("a", "passed")]
    assert "ends before its test result line (1 of 3 tests listed)" in parsed.problems[0]


def test_a_test_binary_that_exits_early_does_not_swallow_the_next_target() -> None:
    data = (b"     Running unittests src/lib.rs (target/debug/deps/m-1)\n\nrunning 2 tests\ntest a ... ok\n"
            b"     Running tests/t.rs (target/debug/deps/t-2)\n\nrunning 1 test\ntest b ... ok\n\n"
            b"test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n")
    parsed = _parse(data)
    assert [(c.name, c.outcome) for c in parsed.cases] == [("src/lib.rs::a", "passed"), ("tests/t.rs::b", "passed")]
    assert "src/lib.rs: the output ends before its test result line (1 of 2 tests listed)" in parsed.problems
