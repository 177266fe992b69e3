"""Which skipped and xfailed hidden tests count as skipped: only those the task declares.

A hidden test can end neither passed nor failed: pytest reports it *skipped* (``pytest.skip``,
``unittest.SkipTest``, ``pytest.importorskip``, a ``skip``/``skipif`` marker) or *xfailed*
(``pytest.xfail``, an ``xfail`` marker on a test that failed). Both are raised by whatever code
runs inside the test, the code under test included: a solution that answers one input and
calls ``pytest.skip()`` for every other one would otherwise pass (a skipped test counts neither
way, :attr:`reliabench.records.Rollout.passes`). So, when reliabench grades its own rollouts:

* a skip or xfail of a test the task declares (``allowed_skips`` in ``task.toml``: the node ids
  its reference solution skips, as ``reliabench validate`` reports them) stays ``skipped``: it
  did not run and counts neither way;
* any other skip or xfail -- whoever raised it -- is ``failed``, and the run names it
  (:attr:`JudgedOutcomes.undeclared`, the record's ``meta["undeclared_skips"]``).

Records read from other harnesses (importers) keep their own meaning: there ``skipped`` is what
the foreign harness reported.

Examples:
    >>> judged = judge_skips([("t::a", "passed", False), ("t::b", "skipped", False),
    ...                       ("t::c", "xfailed", False)], allowed={"t::b"})
    >>> [(o.name, o.outcome) for o in judged.outcomes]
    [('t::a', 'passed'), ('t::b', 'skipped'), ('t::c', 'failed')]
    >>> judged.undeclared
    ('t::c',)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

from reliabench.records import TestOutcome, TestOutcomeStatus

__all__ = [
    "REPORTED_OUTCOMES",
    "SKIP_OUTCOMES",
    "JudgedOutcomes",
    "ReportedOutcome",
    "judge_outcome",
    "judge_skips",
    "unknown_skips",
]

ReportedOutcome: TypeAlias = Literal["passed", "failed", "error", "skipped", "xfailed"]
"""What a test runner reports for one test (the outcome channel): a record's outcome, or
``xfailed`` (an expected failure), which grading turns into one (:func:`judge_outcome`)."""
REPORTED_OUTCOMES: Final[frozenset[ReportedOutcome]] = frozenset(get_args(ReportedOutcome))
SKIP_OUTCOMES: Final[frozenset[ReportedOutcome]] = frozenset({"skipped", "xfailed"})
"""Reported outcomes of a test that neither passed nor failed: they count only when declared."""
_RAN: Final[dict[ReportedOutcome, TestOutcomeStatus]] = {"passed": "passed", "failed": "failed",
                                                         "error": "error"}


@dataclass(frozen=True, slots=True)
class JudgedOutcomes:
    """The graded outcomes of one run of hidden tests.

    Attributes:
        outcomes: One record outcome per test, in the order given.
        undeclared: Tests that were skipped or xfailed without the task declaring it (their
            outcome is ``failed``), in the order given.
        reason: One line saying so, or None when every skip was declared.
    """

    outcomes: tuple[TestOutcome, ...]
    undeclared: tuple[str, ...]
    reason: str | None


def judge_outcome(reported: ReportedOutcome, *, declared: bool) -> TestOutcomeStatus:
    """The record outcome of one reported test outcome.

    Args:
        reported: What the test runner reported.
        declared: The task declares this test's skip (``allowed_skips``).

    Returns:
        ``skipped`` for a declared skip or xfail, ``failed`` for an undeclared one, and the
        reported outcome otherwise.

    Examples:
        >>> judge_outcome("skipped", declared=False), judge_outcome("xfailed", declared=True)
        ('failed', 'skipped')
        >>> judge_outcome("passed", declared=False)
        'passed'
    """
    if reported in SKIP_OUTCOMES:
        return "skipped" if declared else "failed"
    return _RAN[reported]


def judge_skips(reported: Iterable[tuple[str, ReportedOutcome, bool]],
                allowed: Collection[str]) -> JudgedOutcomes:
    """Grade reported outcomes: a skip or xfail counts as skipped only for a declared test.

    The rule applies to functional and ``security`` tests alike: a skipped security test would
    otherwise hide an insecure solution from the security lens.

    Args:
        reported: ``(test name, reported outcome, security)`` per test.
        allowed: The test names whose skip the task declares (``Task.allowed_skips``).

    Returns:
        The graded outcomes, the undeclared skips and a reason line.
    """
    outcomes: list[TestOutcome] = []
    undeclared: list[str] = []
    kinds: list[str] = []
    for name, outcome, security in reported:
        graded = judge_outcome(outcome, declared=name in allowed)
        if outcome in SKIP_OUTCOMES and graded == "failed":
            undeclared.append(name)
            kinds.append(outcome)
        outcomes.append(TestOutcome(name, graded, security))
    reason = None
    if undeclared:
        shown = ", ".join(f"{n} ({k})" for n, k in zip(undeclared[:3], kinds[:3], strict=True))
        reason = (f"{len(undeclared)} test(s) skipped or xfailed that the task does not declare "
                  f"(allowed_skips), counted failed: {shown}")
    return JudgedOutcomes(tuple(outcomes), tuple(undeclared), reason)


def unknown_skips(allowed: Sequence[str], expected: Iterable[TestOutcome]) -> tuple[str, ...]:
    """The declared skips that name no expected test (a typo would declare nothing).

    Examples:
        >>> unknown_skips(["t.py::a", "t.py::zz"], [TestOutcome("t.py::a", "skipped")])
        ('t.py::zz',)
    """
    names = {t.name for t in expected}
    return tuple(name for name in allowed if name not in names)
