"""The report formats as a whole: the registry, duplicates, and hostile input for every format.

Each format's own test module checks it on real output of its tool (tests/fixtures/reports/);
here every format gets the same hostile inputs: a missing report, a huge one, one nested
absurdly deep, one cut short, bytes that are not UTF-8, duplicate names, binary garbage.
Whatever comes, ``parse`` returns (fast), names what it could not read, and never lets a
test pass that a clean report would not list as passed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reliabench.errors import PluginError, UnknownNameError
from reliabench.hidden_tests.reports import (
    EXIT_CODE,
    REPORT_FORMAT_REGISTRY,
    ParsedReport,
    ReportedCase,
    ReportInput,
    _common,
    get_report_format,
    merge_cases,
    parse_report,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "reports"

# format -> a real report of it (tests/fixtures/reports/README.md says how each was made)
SAMPLES = {
    "junit-xml": "catch2-sample.xml",
    "go-test-json": "go-sample.jsonl",
    "jest-json": "jest-sample.json",
    "tap": "node-tap-sample.txt",
    "ctrf": "ctrf-jest-sample.json",
    "cargo-libtest": "cargo-sample.txt",
}
STRUCTURED = list(SAMPLES)


def _parse(fmt: str, data: bytes | None, returncode: int | None = 0) -> ParsedReport:
    return parse_report(get_report_format(fmt), ReportInput(data, returncode, workdir="/work"))


def _passing(parsed: ParsedReport) -> set[str]:
    return {c.name for c in parsed.cases if c.outcome == "passed"}


# ------------------------------------------------------------------ the registry


def test_every_builtin_format_loads_and_says_its_name() -> None:
    assert REPORT_FORMAT_REGISTRY.names()[:8] == [*STRUCTURED, EXIT_CODE, "harbor-reward"]
    for name in REPORT_FORMAT_REGISTRY.builtins:
        fmt = get_report_format(name)
        assert fmt.name == name
        assert fmt.coarse == (name in (EXIT_CODE, "harbor-reward"))


def test_an_unknown_format_is_a_usage_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown report format 'junit'; known report formats: junit-xml, "):
        get_report_format("junit")


def test_a_factory_that_makes_no_format_is_refused_by_name() -> None:
    REPORT_FORMAT_REGISTRY.register("broken-fmt", lambda: object(), replace=True)
    try:
        with pytest.raises(PluginError, match=r"broken-fmt.*did not return a ReportFormat"):
            get_report_format("broken-fmt")
    finally:
        REPORT_FORMAT_REGISTRY.unregister("broken-fmt")


def test_a_format_that_raises_is_a_problem_not_an_exception() -> None:
    class Buggy:
        name = "buggy"
        coarse = False

        def parse(self, report: ReportInput) -> ParsedReport:
            raise KeyError("oops")

    parsed = parse_report(Buggy(), ReportInput(b"x"))
    assert parsed.cases == () and "the buggy reader failed: KeyError" in parsed.problems[0]


# ------------------------------------------------------------------ duplicates: the worst outcome counts


def test_a_name_reported_twice_keeps_its_worst_outcome_whatever_the_order() -> None:
    for order in (("passed", "failed"), ("failed", "passed")):
        problems: list[str] = []
        merged = merge_cases([ReportedCase("f::t", o) for o in order], problems)
        assert [(c.name, c.outcome) for c in merged] == [("f::t", "failed")]
        assert problems == ["f::t: reported 2 times (its worst outcome counts)"]


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_a_forged_duplicate_of_a_failing_test_cannot_make_it_pass(fmt: str) -> None:
    data = (FIXTURES / SAMPLES[fmt]).read_bytes()
    clean = _parse(fmt, data)
    failing = [c.name for c in clean.cases if c.outcome == "failed" and not c.has_children]
    assert failing, "every sample has a failing test"
    doubled = _parse(fmt, _duplicate(fmt, data))
    by_name = {c.name: c.outcome for c in doubled.cases}
    for name in failing:
        assert by_name[name] == "failed"
    assert _passing(doubled) <= _passing(clean)


def _duplicate(fmt: str, data: bytes) -> bytes:
    """The sample with its passing lines or entries repeated (what a forger would add)."""
    if fmt == "junit-xml":
        return data.replace(b"</testsuite>", b'<testcase classname="catch-sample.global" name="fails"/></testsuite>')
    if fmt in ("go-test-json", "tap", "cargo-libtest"):
        return data + data
    import json

    doc = json.loads(data)
    if fmt == "jest-json":
        results = doc["testResults"][0]["assertionResults"]
        results += [{**r, "status": "passed", "failureMessages": []} for r in results]
    else:
        doc["results"]["tests"] += [{**t, "status": "passed"} for t in doc["results"]["tests"]]
    return json.dumps(doc).encode()


# ------------------------------------------------------------------ hostile input, every format


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_a_missing_report_lists_no_test_and_says_so(fmt: str) -> None:
    parsed = _parse(fmt, None)
    assert (parsed.cases, parsed.found) == ((), False)
    assert "no report was written" in parsed.problems[0]


def test_exit_code_needs_no_report_and_is_coarse() -> None:
    assert [(c.name, c.outcome) for c in _parse(EXIT_CODE, None, 0).cases] == [("exit-code", "passed")]
    for code in (1, 2, -9, None):
        parsed = _parse(EXIT_CODE, None, code)
        assert parsed.coarse and [c.outcome for c in parsed.cases] == ["failed"]


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_a_report_cut_short_keeps_what_came_before_and_says_so(fmt: str) -> None:
    data = (FIXTURES / SAMPLES[fmt]).read_bytes()
    clean = _parse(fmt, data)
    for fraction in (0.3, 0.6, 0.9):
        cut = _parse(fmt, data[: int(len(data) * fraction)])
        # cargo's text has no end marker: a cut between two targets reads like a shorter run,
        # whose missing tests count as not run all the same
        assert cut.problems or (fmt == "cargo-libtest" and len(cut.cases) < len(clean.cases)), (
            f"{fmt} cut at {fraction}: no problem said")
        assert _passing(cut) <= _passing(clean) | {c.name for c in clean.cases if c.has_children}


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_bytes_that_are_not_utf8_are_a_problem_and_the_rest_is_read(fmt: str) -> None:
    data = (FIXTURES / SAMPLES[fmt]).read_bytes()
    clean = _parse(fmt, data)
    token = b"TestPasses" if fmt == "go-test-json" else b"passes"
    assert token in data
    bad = _parse(fmt, data.replace(token, token[:2] + b"\xff\xfe" + token[2:], 1))
    assert any("UTF-8" in p or "well-formed" in p for p in bad.problems), bad.problems
    # the names that did not contain the bad bytes are still read as before
    assert len(_passing(bad) & _passing(clean)) >= len(_passing(clean)) - 2


@pytest.mark.parametrize("fmt", STRUCTURED)
@pytest.mark.parametrize("garbage", [b"", b"\x00" * 10_000, bytes(range(256)) * 400, b"{" * 200_000,
                                     b"[" * 200_000 + b"]" * 200_000, b"<a>" * 100_000, b" " * 100_000 + b"ok 1\n"])
def test_garbage_gives_no_passing_test_and_returns_fast(fmt: str, garbage: bytes) -> None:
    start = time.perf_counter()
    parsed = _parse(fmt, garbage)
    assert time.perf_counter() - start < 5
    assert not _passing(parsed)


@pytest.mark.parametrize("fmt", STRUCTURED)
def test_a_huge_report_is_read_in_bounded_time(fmt: str) -> None:
    data = (FIXTURES / SAMPLES[fmt]).read_bytes()
    huge = data + b"x" * (8 << 20) + b"\n"  # 8 MiB of one line after the real report
    start = time.perf_counter()
    parsed = _parse(fmt, huge)
    assert time.perf_counter() - start < 10
    assert _passing(parsed) <= _passing(_parse(fmt, data))


def test_more_cases_than_the_cap_are_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "MAX_CASES", 3)
    lines = "".join(f'{{"Action":"pass","Package":"p","Test":"T{i}"}}\n' for i in range(10))
    parsed = _parse("go-test-json", lines.encode())
    assert len(parsed.cases) == 3
    assert any("more than 3 test cases" in p for p in parsed.problems)


def test_a_cut_report_flag_adds_a_problem() -> None:
    data = (FIXTURES / SAMPLES["go-test-json"]).read_bytes()
    parsed = parse_report(get_report_format("go-test-json"), ReportInput(data, 0, truncated=True))
    assert any("the report was cut" in p for p in parsed.problems)


def test_common_helpers() -> None:
    assert _common.relative_to("/w/a/b.js", "/w/a/") == "b.js"
    assert _common.cut("  ") is None and _common.cut("x" * 1000).endswith("\u2026")
    assert len(_common.cut("x" * 1000) or "") == _common.MESSAGE_CHARS
    problems: list[str] = []
    assert _common.load_json(b'{"a": 1}', problems) == {"a": 1} and not problems
    assert _common.load_json(b"[" * 100_000, problems) is None and problems
