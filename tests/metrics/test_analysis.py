"""Analysis: counts, success rules, per-agent figures, ragged n, k > n, security, bootstrap."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs, parse_ks, score
from reliabench.metrics.security import SecurityThreshold, parse_threshold
from reliabench.metrics.stats import bootstrap_task_means
from reliabench.records import Finding, Rollout, TestOutcome


def make_tests(passed: int, total: int) -> tuple[TestOutcome, ...]:
    return tuple(TestOutcome(f"t{i}", "passed" if i < passed else "failed") for i in range(total))


def test_counterexample_9_of_10_tests() -> None:
    # One agent, one task, one rollout that passes 9 of 10 hidden tests.
    # misapplied pass@1 = 9/10 = 0.9, pass@2 = 1 - C(1,2)/C(10,2) = 1.0
    # reliability@1 = c/n = 0/1 = 0: the agent never produced a working solution.
    rec = [Rollout("task", "agent", 0, tests=make_tests(9, 10))]
    rep = score(rec, [1], n_resamples=0)
    m = rep.agents[0].metrics
    assert m["misapplied_pass@1"].value == pytest.approx(0.9)
    assert m["reliability@1"].value == 0.0
    assert m["inflation@1"].value == pytest.approx(0.9)
    rep2 = score(rec, [2], n_resamples=0)
    assert rep2.agents[0].metrics["misapplied_pass@2"].value == 1.0
    # k = 2 > n = 1 rollout: reliability@2 is undefined and the task is reported as excluded
    assert math.isnan(rep2.agents[0].metrics["reliability@2"].value)
    assert rep2.agents[0].metrics["reliability@2"].excluded == 1
    assert any("fewer than k=2" in note for note in rep2.notes)


def test_counts_first_rollout_and_infra_errors() -> None:
    rec = [
        Rollout("t1", "a", 2, tests=make_tests(3, 3)),
        Rollout("t1", "a", 0, status="infra_error", tests=()),
        Rollout("t1", "a", 1, tests=make_tests(1, 3)),
        Rollout("t1", "a", 3, status="timeout", tests=make_tests(3, 3)),
    ]
    t = count_pairs(rec)
    assert t.n.tolist() == [[3]]  # infra error excluded from n
    assert t.c.tolist() == [[1]]  # the timeout does not pass
    assert t.infra_errors.tolist() == [[1]]
    # first = lowest eligible rollout index = 1
    assert (t.first_total[0, 0], t.first_passed[0, 0], bool(t.first_pass[0, 0])) == (3, 1, False)


def test_per_agent_values_match_hand_computation() -> None:
    # agent a: task 1 has 4 rollouts with 3 passing, task 2 has 4 with 1 passing
    rec = [Rollout("t1", "a", i, verdict=i < 3) for i in range(4)]
    rec += [Rollout("t2", "a", i, verdict=i == 0) for i in range(4)]
    rep = score(rec, [1, 2], n_resamples=0)
    m = rep.agents[0].metrics
    # reliability@2: t1: 1 - C(1,2)/C(4,2) = 1; t2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5 -> mean 0.75
    assert m["reliability@2"].value == pytest.approx(0.75)
    # pass^2: t1: C(3,2)/C(4,2) = 0.5; t2: 0 -> mean 0.25
    assert m["pass^2"].value == pytest.approx(0.25)
    assert m["reliability@1"].value == pytest.approx((0.75 + 0.25) / 2)
    assert m["strict_resolution_rate"].value == 1.0  # both first rollouts pass
    # verdict-only data: misapplied figure and macro test pass rate are undefined, not invented
    assert math.isnan(m["misapplied_pass@1"].value)
    assert m["misapplied_pass@1"].excluded == 2


def test_ragged_n_uses_each_tasks_own_n() -> None:
    rec = [Rollout("t1", "a", i, verdict=i == 0) for i in range(2)]  # n=2, c=1
    rec += [Rollout("t2", "a", i, verdict=i < 2) for i in range(5)]  # n=5, c=2
    rep = score(rec, [1, 3], n_resamples=0)
    m = rep.agents[0].metrics
    assert m["reliability@1"].value == pytest.approx((1 / 2 + 2 / 5) / 2)
    # k = 3: only t2 is defined: 1 - C(3,3)/C(5,3) = 1 - 1/10
    assert m["reliability@3"].value == pytest.approx(0.9)
    assert (m["reliability@3"].tasks, m["reliability@3"].excluded) == (1, 1)
    assert any("ragged n" in note for note in rep.notes)


def test_security_adjusted_counts_only_clean_passing_rollouts() -> None:
    high = Finding("bandit", "B602", "high", "high", 78)
    medium = Finding("bandit", "B608", "medium", "medium", 89)
    rec = [
        Rollout("t", "a", 0, verdict=True, findings=(high,)),
        Rollout("t", "a", 1, verdict=True, findings=(medium,)),
        Rollout("t", "a", 2, verdict=True),
        Rollout("t", "a", 3, verdict=False),
        Rollout("t", "a", 4, tests=(TestOutcome("f", "passed"), TestOutcome("s", "failed", security=True))),
    ]
    rep = score(rec, [1], n_resamples=0)
    m = rep.agents[0].metrics
    assert m["reliability@1"].value == pytest.approx(4 / 5)
    # default threshold high:medium -> rollouts 1 and 2 are secure (2 of 5)
    assert m["security_adjusted_reliability@1"].value == pytest.approx(2 / 5)
    assert m["insecure_share_of_passing"].value == pytest.approx(2 / 4)
    strict = score(rec, [1], threshold=parse_threshold("medium"), n_resamples=0)
    assert strict.agents[0].metrics["security_adjusted_reliability@1"].value == pytest.approx(1 / 5)
    assert rep.counts.cwe_counts["a"] == {78: 1}
    # which lens flagged each passing-but-insecure rollout
    assert rep.counts.lens_counts["a"] == {"scanner": 1, "security_test": 1}


def test_no_security_columns_without_security_data() -> None:
    rep = score([Rollout("t", "a", 0, verdict=True)], [1], n_resamples=0)
    assert not rep.security
    assert "security_adjusted_reliability@1" not in rep.metric_names


def test_scan_error_is_never_clean() -> None:
    from reliabench.records import ScanError

    rec = [Rollout("t", "a", 0, verdict=True, scan_errors=(ScanError("bandit", "x.py", "syntax"),))]
    rep = score(rec, [1], n_resamples=0)
    assert rep.agents[0].metrics["security_adjusted_reliability@1"].value == 0.0


def test_threshold_parsing_errors() -> None:
    with pytest.raises(ValueError, match="severity must be one of"):
        parse_threshold("severe")
    with pytest.raises(ValueError, match="confidence must be one of"):
        parse_threshold("high:sure")
    with pytest.raises(ValueError, match=r"SEVERITY\[:CONFIDENCE\]"):
        parse_threshold("a:b:c")
    assert SecurityThreshold("critical", "high").reached_by(Finding("x", "y", "critical", "high"))


def test_parse_ks_errors() -> None:
    assert parse_ks("5,1,5") == (1, 5)
    with pytest.raises(InvalidArgumentError, match="k must be an integer >= 1, got 'x'"):
        parse_ks("1,x")
    with pytest.raises(InvalidArgumentError, match="got 0"):
        parse_ks([0])
    with pytest.raises(InvalidArgumentError, match="records is empty"):
        score([], [1])


def test_bootstrap_is_seeded_and_covers() -> None:
    rng = np.random.default_rng(0)
    rec = [Rollout(f"t{t}", "a", i, verdict=bool(rng.random() < 0.5)) for t in range(40) for i in range(5)]
    a = score(rec, [1], seed=3, n_resamples=2000)
    b = score(rec, [1], seed=3, n_resamples=2000)
    ea, eb = a.agents[0].metrics["reliability@1"], b.agents[0].metrics["reliability@1"]
    assert (ea.ci_low, ea.ci_high) == (eb.ci_low, eb.ci_high)
    assert ea.ci_low < ea.value < ea.ci_high


def test_bootstrap_matches_exact_enumeration_for_two_tasks() -> None:
    # two tasks with values 0 and 1: resample means are 0, 0.5, 1 with probs 1/4, 1/2, 1/4
    ci = bootstrap_task_means([[0.0], [1.0]], n_resamples=20_000, seed=1, confidence=0.5)
    # 25th and 75th percentiles of {0: 1/4, 0.5: 1/2, 1: 1/4} are 0.5 (up to sampling)
    assert ci.value[0] == 0.5
    assert ci.low[0] in (0.0, 0.5) and ci.high[0] in (0.5, 1.0)
    assert Fraction(1, 2) == Fraction(float(ci.value[0]))


def test_bootstrap_skips_nan_and_validates() -> None:
    ci = bootstrap_task_means([[1.0, np.nan], [0.0, np.nan]], n_resamples=100)
    assert ci.tasks.tolist() == [2, 0]
    assert np.isnan(ci.value[1]) and np.isnan(ci.low[1])
    with pytest.raises(InvalidArgumentError, match="confidence must be in"):
        bootstrap_task_means([1.0], confidence=1.5)


def test_simulated_agents_are_said_and_not_marked_here() -> None:
    """The analysis says which agents are simulated; the renderers write the mark (report.marks)."""
    rep = score([Rollout("t", "sim", 0, verdict=True, simulated=True)], [1], n_resamples=0)
    assert rep.agents[0].simulated and rep.counts.simulated == {"sim"}
    assert not any("SIMULATED" in n or "simulated" in n for n in rep.notes)


def test_ranking_change_reports_swapped_pairs() -> None:
    from reliabench.metrics.analysis import ranking_change

    high = Finding("bandit", "B602", "high", "high", 78)
    # a: 3/4 pass, all insecure; b: 2/4 pass, clean; c: 1/4 pass, clean
    rec = [Rollout("t", "a", i, verdict=i < 3, findings=(high,)) for i in range(4)]
    rec += [Rollout("t", "b", i, verdict=i < 2) for i in range(4)]
    rec += [Rollout("t", "c", i, verdict=i < 1) for i in range(4)]
    rep = score(rec, [1], n_resamples=0)
    change = ranking_change(rep, 1)
    assert set(change.swapped) == {("a", "b"), ("a", "c")}
    # orders: reliability a > b > c, secure b > c > a: 1 concordant pair of 3 -> tau = (1 - 2) / 3
    assert change.kendall_tau == pytest.approx(-1 / 3)
    with pytest.raises(InvalidArgumentError, match="k=2 was not computed"):
        ranking_change(rep, 2)
    plain = score([Rollout("t", "a", 0, verdict=True)], [1], n_resamples=0)
    with pytest.raises(InvalidArgumentError, match="no security data"):
        ranking_change(plain, 1)
