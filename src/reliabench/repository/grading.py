"""Grading a repository task as SWE-bench grades it: FAIL_TO_PASS, PASS_TO_PASS, FULL / PARTIAL / NO.

From a status map (:mod:`reliabench.repository.logs`) and the task's two lists:

* a test *succeeds* when its status is ``PASSED`` or ``XFAIL``; it *fails* when it has no
  status or ``FAILED`` / ``ERROR``; a ``SKIPPED`` test does neither (it is left out of both
  rates, as SWE-bench leaves it out);
* the FAIL_TO_PASS rate is successes / (successes + failures) of FAIL_TO_PASS (1 when that
  sum is 0), likewise PASS_TO_PASS;
* ``RESOLVED_FULL``: both rates are 1; ``RESOLVED_PARTIAL``: PASS_TO_PASS is 1 and
  FAIL_TO_PASS strictly between 0 and 1; ``RESOLVED_NO`` otherwise. ``resolved`` is FULL.

Next to it, reliabench keeps one outcome per listed test (:class:`~reliabench.records.TestOutcome`:
``passed`` / ``failed`` / ``error`` / ``skipped``; a test without a line is ``failed``), so
the macro pass rate over tests and the strict resolution both come out of every rollout.

Examples:
    >>> g = grade({"a": "PASSED", "b": "FAILED", "c": "PASSED"}, ["a", "b"], ["c"])
    >>> g.resolution, g.resolved, g.fail_to_pass.success, g.fail_to_pass.failure
    ('RESOLVED_PARTIAL', False, ('a',), ('b',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from reliabench.records import TestOutcome, TestOutcomeStatus

__all__ = ["RESOLUTIONS", "Resolution", "RepositoryGrade", "TestGroup", "grade", "outcome_of"]

Resolution: TypeAlias = Literal["RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO"]
RESOLUTIONS: Final[tuple[Resolution, ...]] = ("RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO")

_SUCCESS: Final = frozenset({"PASSED", "XFAIL"})
_FAILURE: Final = frozenset({"FAILED", "ERROR"})
_OUTCOME: Final[Mapping[str, TestOutcomeStatus]] = {
    "PASSED": "passed",
    "XFAIL": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
}


@dataclass(frozen=True, slots=True)
class TestGroup:
    """The tests of one list (FAIL_TO_PASS or PASS_TO_PASS) that succeeded and that failed.

    Attributes:
        success: Tests that passed (or xfailed), in the list's order.
        failure: Tests that failed, errored or have no line, in the list's order.
    """

    __test__ = False  # not a pytest test class

    success: tuple[str, ...]
    failure: tuple[str, ...]

    @property
    def rate(self) -> float:
        """Success / (success + failure); 1.0 when both are empty (SWE-bench's choice)."""
        total = len(self.success) + len(self.failure)
        return 1.0 if total == 0 else len(self.success) / total


@dataclass(frozen=True, slots=True)
class RepositoryGrade:
    """A rollout of a repository task, graded.

    Attributes:
        fail_to_pass: The FAIL_TO_PASS tests that succeeded and failed.
        pass_to_pass: The PASS_TO_PASS tests that succeeded and failed.
        resolution: ``RESOLVED_FULL``, ``RESOLVED_PARTIAL`` or ``RESOLVED_NO``.
        outcomes: One outcome per listed test, FAIL_TO_PASS first, then PASS_TO_PASS (a
            name in both lists once).
    """

    fail_to_pass: TestGroup
    pass_to_pass: TestGroup
    resolution: Resolution
    outcomes: tuple[TestOutcome, ...]

    @property
    def resolved(self) -> bool:
        """Every FAIL_TO_PASS and PASS_TO_PASS test succeeded (``RESOLVED_FULL``)."""
        return self.resolution == "RESOLVED_FULL"

    def tests_status(self) -> dict[str, dict[str, list[str]]]:
        """The ``tests_status`` object of a SWE-bench ``report.json`` (FAIL_TO_PASS, PASS_TO_PASS)."""
        return {
            "FAIL_TO_PASS": {
                "success": list(self.fail_to_pass.success),
                "failure": list(self.fail_to_pass.failure),
            },
            "PASS_TO_PASS": {
                "success": list(self.pass_to_pass.success),
                "failure": list(self.pass_to_pass.failure),
            },
        }

    def meta(self) -> dict[str, Any]:
        """What a rollout record's meta carries (``swebench`` key): resolution and counts."""
        return {
            "resolution": self.resolution,
            "resolved": self.resolved,
            "fail_to_pass": [
                len(self.fail_to_pass.success),
                len(self.fail_to_pass.success) + len(self.fail_to_pass.failure),
            ],
            "pass_to_pass": [
                len(self.pass_to_pass.success),
                len(self.pass_to_pass.success) + len(self.pass_to_pass.failure),
            ],
        }


def _group(names: Sequence[str], status: Mapping[str, str]) -> TestGroup:
    success = tuple(n for n in names if status.get(n) in _SUCCESS)
    failure = tuple(n for n in names if n not in status or status[n] in _FAILURE)
    return TestGroup(success, failure)


def outcome_of(name: str, status: Mapping[str, str]) -> TestOutcomeStatus:
    """One test's outcome in reliabench's words (no line: ``failed``)."""
    return _OUTCOME.get(status.get(name, "FAILED"), "failed")


def grade(
    status: Mapping[str, str], fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]
) -> RepositoryGrade:
    """Grade a status map against the task's FAIL_TO_PASS and PASS_TO_PASS lists (module docstring)."""
    f2p = _group(fail_to_pass, status)
    p2p = _group(pass_to_pass, status)
    resolution: Resolution
    if f2p.rate == 1 and p2p.rate == 1:
        resolution = "RESOLVED_FULL"
    elif 0 < f2p.rate < 1 and p2p.rate == 1:
        resolution = "RESOLVED_PARTIAL"
    else:
        resolution = "RESOLVED_NO"
    seen: set[str] = set()
    outcomes: list[TestOutcome] = []
    for name in (*fail_to_pass, *pass_to_pass):
        if name not in seen:
            seen.add(name)
            outcomes.append(TestOutcome(name, outcome_of(name, status)))
    return RepositoryGrade(f2p, p2p, resolution, tuple(outcomes))
