"""SWE-bench's grading rules: success, failure, skipped in neither, FULL / PARTIAL / NO."""

from __future__ import annotations

from reliabench.records import TestOutcome
from reliabench.repository.grading import grade


def test_full_partial_no() -> None:
    assert grade({"a": "PASSED", "b": "PASSED"}, ["a"], ["b"]).resolution == "RESOLVED_FULL"
    assert (
        grade({"a": "PASSED", "c": "FAILED", "b": "PASSED"}, ["a", "c"], ["b"]).resolution
        == "RESOLVED_PARTIAL"
    )
    assert grade({"a": "PASSED", "b": "FAILED"}, ["a"], ["b"]).resolution == "RESOLVED_NO"
    assert grade({}, ["a"], []).resolution == "RESOLVED_NO"


def test_missing_test_fails_and_xfail_passes() -> None:
    g = grade({"a": "XFAIL"}, ["a", "gone"], [])
    assert g.fail_to_pass.success == ("a",) and g.fail_to_pass.failure == ("gone",)
    assert g.outcomes == (TestOutcome("a", "passed"), TestOutcome("gone", "failed"))


def test_skipped_counts_neither_way_as_in_swebench() -> None:
    # a skipped PASS_TO_PASS test is left out of the rate: the instance still resolves
    g = grade({"a": "PASSED", "s": "SKIPPED"}, ["a"], ["s"])
    assert g.pass_to_pass.success == () and g.pass_to_pass.failure == ()
    assert g.pass_to_pass.rate == 1.0 and g.resolved
    assert g.outcomes[1] == TestOutcome("s", "skipped")


def test_error_is_failure_and_meta_counts() -> None:
    g = grade({"a": "ERROR", "b": "PASSED", "c": "PASSED"}, ["a"], ["b", "c"])
    assert g.meta() == {
        "resolution": "RESOLVED_NO",
        "resolved": False,
        "fail_to_pass": [0, 1],
        "pass_to_pass": [2, 2],
    }
    assert g.tests_status()["FAIL_TO_PASS"] == {"success": [], "failure": ["a"]}


def test_a_test_in_both_lists_has_one_outcome() -> None:
    g = grade({"a": "PASSED"}, ["a"], ["a"])
    assert [o.name for o in g.outcomes] == ["a"]
