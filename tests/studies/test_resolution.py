"""Macro vs strict on repository tasks: worked out by hand, infra errors left out, absent for other suites."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reliabench.records import Rollout, TestOutcome
from reliabench.studies.resolution import FIGURES, is_repository_record, resolution_section
from reliabench.studies.scoring import score_result


def _r(task: str, agent: str, i: int, outcomes: str, resolution: str, f2p: tuple[int, int],
       p2p: tuple[int, int], status: str = "completed") -> Rollout:
    """A repository rollout: ``outcomes`` one letter per listed test (p passed, f failed, s skipped)."""
    word = {"p": "passed", "f": "failed", "s": "skipped"}
    tests = tuple(TestOutcome(f"t{j}", word[c]) for j, c in enumerate(outcomes))  # type: ignore[arg-type]
    sw: dict[str, Any] = {"resolution": resolution, "resolved": resolution == "RESOLVED_FULL",
                          "fail_to_pass": list(f2p), "pass_to_pass": list(p2p), "signed": True}
    return Rollout(task, agent, i, tests=tests, status=status,  # type: ignore[arg-type]
                   meta={"test_path": "repository", "swebench": sw})


RECORDS = [
    # task A (1 FAIL_TO_PASS t0, 3 PASS_TO_PASS): gold resolves twice; "half" fixes F2P but breaks a P2P test once
    _r("A", "gold", 0, "pppp", "RESOLVED_FULL", (1, 1), (3, 3)),
    _r("A", "gold", 1, "pppp", "RESOLVED_FULL", (1, 1), (3, 3)),
    _r("A", "half", 0, "ppfp", "RESOLVED_NO", (1, 1), (2, 3)),
    _r("A", "half", 1, "fppp", "RESOLVED_NO", (0, 1), (3, 3)),
    # task B (2 FAIL_TO_PASS t0 t1, 2 PASS_TO_PASS): gold resolves; "half" fixes one of two F2P
    _r("B", "gold", 0, "pppp", "RESOLVED_FULL", (2, 2), (2, 2)),
    _r("B", "half", 0, "pfpp", "RESOLVED_PARTIAL", (1, 2), (2, 2)),
    _r("B", "half", 1, "pfpp", "RESOLVED_PARTIAL", (1, 2), (2, 2), status="infra_error"),  # left out
]


def test_macro_and_strict_by_hand() -> None:
    sec = resolution_section(RECORDS, n_resamples=0)
    assert sec is not None and sec.tasks == 2 and [a.agent for a in sec.agents] == ["gold", "half"]
    gold, half = sec.agents
    assert (gold.rollouts, gold.resolutions, gold.macro.value, gold.strict.value) == (3, (3, 0, 0), 1.0, 1.0)
    # half, task A: macro (3/4 + 3/4) / 2 = 0.75, strict 0; F2P (1 + 0) / 2 = 0.5, P2P (2/3 + 1) / 2 = 5/6
    # half, task B: macro 3/4, strict 0 (PARTIAL is not resolved), F2P 1/2, P2P 1 (the infra error left out)
    assert half.rollouts == 3 and half.resolutions == (0, 1, 2) and half.tasks == 2
    assert half.macro.value == pytest.approx(0.75) and half.strict.value == 0.0
    assert half.figures["fail_to_pass_rate"].value == pytest.approx((0.5 + 0.5) / 2)
    assert half.figures["pass_to_pass_rate"].value == pytest.approx((5 / 6 + 1.0) / 2)
    assert half.disagreements == 0 and set(half.figures) == set(FIGURES)
    assert math.isnan(half.macro.ci_low)  # no resamples, no interval


def test_intervals_are_over_tasks_and_contain_the_value() -> None:
    sec = resolution_section(RECORDS, n_resamples=2000, seed=3)
    assert sec is not None
    half = sec.agents[1]
    for name in FIGURES:
        e = half.figures[name]
        assert e.ci_low <= e.value <= e.ci_high and e.tasks == 2
    # the strict rate of half is 0 on both tasks: a degenerate interval
    assert (half.strict.ci_low, half.strict.ci_high) == (0.0, 0.0)


def test_skipped_tests_count_neither_way_and_an_ungraded_rollout_fails() -> None:
    skipped = _r("A", "x", 0, "psps", "RESOLVED_FULL", (1, 1), (1, 1))
    ungraded = Rollout("A", "x", 1, tests=(), status="test_error",
                       meta={"test_path": "repository", "reason": "harness error while diffing"})
    sec = resolution_section([skipped, ungraded], n_resamples=0)
    assert sec is not None
    (x,) = sec.agents
    # (2/2 + 0) / 2 rollouts: the ungraded one is a failure; strict (1 + 0) / 2
    assert x.macro.value == pytest.approx(0.5) and x.strict.value == pytest.approx(0.5)
    assert x.resolutions == (1, 0, 1) and x.disagreements == 0


def test_a_no_change_rollout_whose_checkout_resolves_is_a_disagreement() -> None:
    # SWE-bench grades the checkout; reliability@k's pass needs the agent to have completed with a change
    r = _r("A", "lazy", 0, "pppp", "RESOLVED_FULL", (1, 1), (3, 3), status="no_change")
    sec = resolution_section([r], n_resamples=0)
    assert sec is not None and sec.agents[0].strict.value == 1.0 and sec.agents[0].disagreements == 1
    assert not r.passes


def test_absent_without_repository_records() -> None:
    plain = Rollout("t", "a", 0, tests=(TestOutcome("x", "passed"),))
    assert not is_repository_record(plain) and resolution_section([plain]) is None
    assert score_result([plain], [1], n_resamples=0).repository is None
    assert score_result(RECORDS, [1], n_resamples=0).repository is not None
    assert resolution_section([RECORDS[-1]]) is None  # an infra error alone: nothing graded


def test_a_malformed_count_is_unknown_not_a_crash() -> None:
    r = _r("A", "a", 0, "pp", "RESOLVED_FULL", (1, 1), (1, 1))
    bad = Rollout("A", "a", 1, tests=r.tests, meta={"test_path": "repository", "swebench": {
        "resolution": "RESOLVED_FULL", "resolved": True, "fail_to_pass": "1/1", "pass_to_pass": [2, 1]}})
    sec = resolution_section([r, bad], n_resamples=0)
    assert sec is not None
    a = sec.agents[0]
    assert a.figures["fail_to_pass_rate"].value == 1.0 and a.rollouts == 2 and a.strict.value == 1.0
