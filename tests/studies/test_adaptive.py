"""Adaptive allocation: the group-sequential boundary, the look rules, the run loop end to end
with resume, and plan's continuation (the design simulated: tests/sim/test_design.py)."""

from __future__ import annotations

import itertools
import json
import math
import os
import textwrap
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from reliabench.cli import main
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.estimators import pass_at_k
from reliabench.records import Rollout, TestOutcome
from reliabench.store import RunStore
from reliabench.studies.adaptive import (
    AdaptiveDesign,
    AgentCounts,
    boundary_constant,
    continuation,
    critical_value,
    evaluate,
    look_schedule,
)
from reliabench.studies.adaptive_estimate import stop_estimates
from reliabench.studies.adaptive_score import counts_at


def test_schedule_and_design_validation() -> None:
    assert look_schedule(2, 10) == (2, 4, 8, 10)
    with pytest.raises(InvalidArgumentError, match="max_n must be >= first"):
        look_schedule(5, 3)
    with pytest.raises(InvalidArgumentError, match="exactly one target"):
        AdaptiveDesign(first=2, max_n=8)
    with pytest.raises(InvalidArgumentError, match="first must be >= k=5"):
        AdaptiveDesign(first=2, max_n=8, k=5, target_half_width=0.1)
    with pytest.raises(InvalidArgumentError, match="two different agents"):
        AdaptiveDesign(first=2, max_n=8, settle=(("a", "a"),))


def test_boundary_constants_match_the_tables() -> None:
    # Jennison & Turnbull (2000), tables 2.1 / 2.3: K = 5 equally spaced looks, alpha = 0.05
    assert boundary_constant([1, 2, 3, 4, 5], 0.05, "pocock") == pytest.approx(2.413, abs=2e-3)
    assert boundary_constant([1, 2, 3, 4, 5], 0.05) == pytest.approx(2.040, abs=2e-3)
    assert boundary_constant([3.0], 0.05) == pytest.approx(1.95996, abs=1e-4)
    # more correlated looks need a smaller constant
    assert boundary_constant([0.9, 1.0], 0.05, "pocock") < boundary_constant([0.3, 1.0], 0.05, "pocock")


def test_boundary_by_monte_carlo() -> None:
    # Brownian motion at information times 1, 1.5, 4: the chance of ever crossing the
    # O'Brien-Fleming bounds is alpha
    info = np.array([1.0, 1.5, 4.0])
    rng = np.random.default_rng(7)
    steps = rng.normal(size=(200_000, 3)) * np.sqrt(np.diff(np.concatenate([[0.0], info])))
    z = np.cumsum(steps, axis=1) / np.sqrt(info)
    bounds = np.array([critical_value(info, i, 0.05) for i in info])
    crossed = float(np.mean(np.any(np.abs(z) >= bounds, axis=1)))
    assert crossed == pytest.approx(0.05, abs=0.002)  # simulation sd 0.0005


def _u_stat(seq: tuple[int, ...], k: int) -> Fraction:
    n, c = len(seq), sum(seq)
    return 1 - Fraction(comb(n - c, k), comb(n, k))


@pytest.mark.parametrize("k", [1, 2])
def test_nested_estimates_have_brownian_covariance(k: int) -> None:
    # the assumption behind the boundary: Cov(R(n_i), R(n_j)) = Var(R(n_j)) for n_i <= n_j,
    # checked exactly for one task with p = 3/10 by enumerating every outcome sequence
    p = Fraction(3, 10)
    n_i, n_j = 2, 5
    e_i = e_j = e_ij = e_jj = Fraction(0)
    for seq in itertools.product((0, 1), repeat=n_j):
        w = p ** sum(seq) * (1 - p) ** (n_j - sum(seq))
        ri, rj = _u_stat(seq[:n_i], k), _u_stat(seq, k)
        e_i += w * ri
        e_j += w * rj
        e_ij += w * ri * rj
        e_jj += w * rj * rj
    assert e_ij - e_i * e_j == e_jj - e_j * e_j


def _counts(n: int, cs: list[int]) -> AgentCounts:
    return AgentCounts(np.full(len(cs), n, np.int64), np.array(cs, np.int64))


def test_half_width_rules() -> None:
    counts = {"same": _counts(2, [2] * 10), "mixed": _counts(2, [0, 1, 2, 0, 1, 2, 0, 1, 2, 2])}
    # sequential rule: one schedule step at a time, repeated intervals
    design = AdaptiveDesign(first=2, max_n=8, target_half_width=0.2, half_width_rule="sequential")
    step = evaluate(design, counts, [{"same": 2, "mixed": 2}])
    looks = {a.agent: a for a in step.agents}
    assert looks["same"].met and looks["same"].interval.half_width == 0.0
    assert not looks["mixed"].met
    assert dict(step.advance) == {"mixed": 4} and step.stop_reason == ""
    # at max_n nobody advances: the budget ran out before the target
    at_max = {"same": _counts(8, [8] * 10), "mixed": _counts(8, [0, 4, 8, 0, 4, 8, 0, 4, 8, 8])}
    step = evaluate(design, at_max, [{"same": 2, "mixed": 2}, {"same": 2, "mixed": 4},
                                     {"same": 2, "mixed": 8}])
    assert not step.advance and step.stop_reason == "max_n"
    # two-stage rule (default): round 1 fixes the final n (here straight to max_n: the mixed
    # agent's spread over tasks is mostly between tasks), round 2 only reports
    two = AdaptiveDesign(first=2, max_n=8, target_half_width=0.2)
    step = evaluate(two, counts, [{"same": 2, "mixed": 2}])
    assert dict(step.advance) == {"mixed": 8}
    done = evaluate(two, at_max, [{"same": 2, "mixed": 2}, {"same": 2, "mixed": 8}])
    assert not done.advance and done.stop_reason == "max_n"
    # the plain t-interval: mean 1/2 +- t_{9} * sd / sqrt(10)
    mixed = {a.agent: a for a in done.agents}["mixed"].interval
    v = np.array([0, 4, 8, 0, 4, 8, 0, 4, 8, 8]) / 8
    assert mixed.half_width == pytest.approx(2.2621571628 * v.std(ddof=1) / math.sqrt(10))


def test_settle_rules() -> None:
    design = AdaptiveDesign(first=3, max_n=12, settle=(("A", "B"),))
    clear = {"A": _counts(3, [3] * 12), "B": _counts(3, [0] * 11 + [1])}
    step = evaluate(design, clear, [{"A": 3, "B": 3}])
    assert step.pairs[0].decision == "a_better" and not step.advance and step.stop_reason == "target"
    # A is certain (no within-task variance to cut): only B gets more rollouts
    close = {"A": _counts(3, [3, 0] * 6), "B": _counts(3, [2, 1] * 6)}
    step = evaluate(design, close, [{"A": 3, "B": 3}])
    assert step.pairs[0].decision == "open" and dict(step.advance) == {"B": 6}
    # equivalence inside a margin
    eq = AdaptiveDesign(first=3, max_n=12, settle=(("A", "B"),), margin=0.5)
    same = {"A": _counts(3, [3, 0, 3, 0] * 5), "B": _counts(3, [3, 0, 3, 0] * 5)}
    assert evaluate(eq, same, [{"A": 3, "B": 3}]).pairs[0].decision == "equivalent"
    with pytest.raises(InvalidArgumentError, match="no agent 'B'"):
        evaluate(design, {"A": clear["A"]}, [{"A": 3}])


def test_counts_at_uses_only_each_tasks_first_n_rollouts() -> None:
    recs = [Rollout(task_id=t, agent="A", rollout=i, verdict=i % 2 == 0, status=s)
            for t in ("t1", "t2") for i, s in enumerate(["completed", "infra_error", "completed", "completed"])]
    got = counts_at(recs, ["t1", "t2"], {"A": 3})
    # rollouts 0..2: 0 passes, 1 is an infra error (left out), 2 passes
    assert got["A"].n.tolist() == [2, 2] and got["A"].c.tolist() == [2, 2]


def _counts(n: int, c: list[int]) -> AgentCounts:
    return AgentCounts(np.full(len(c), n, np.int64), np.asarray(c, np.int64))


def test_stop_at_the_first_look_reports_the_plain_t_interval() -> None:
    design = AdaptiveDesign(first=3, max_n=12, settle=(("A", "B"),))
    c = {"A": _counts(3, [3, 2, 3, 1, 3]), "B": _counts(3, [0, 1, 2, 0, 1])}
    est = stop_estimates(design, [{"A": 3, "B": 3}], [c], seed=1)
    assert est.draws == 0 and est.accepted == {"A": 0, "B": 0}
    d = (np.array([3, 2, 3, 1, 3]) - np.array([0, 1, 2, 0, 1])) / 3
    (pair,) = est.pairs
    assert pair.interval.value == pytest.approx(d.mean()) == pytest.approx(pair.plain_value)
    half = float(stats.t.ppf(0.975, 4)) * d.std(ddof=1) / math.sqrt(5)
    assert (pair.interval.low, pair.interval.high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert est.agent("A").interval.value == pytest.approx(12 / 15)


@pytest.mark.parametrize("k", [1, 2])
def test_when_every_ordering_is_consistent_it_is_the_estimate_at_the_final_n(k: int) -> None:
    # a target no plan can meet: every first look plans max_n, so every ordering is consistent
    # and E[pass@k(first, C_first) | c at n] = pass@k(n, c) (a U-statistic): the average over
    # the orderings converges to the plain estimate at the final n
    design = AdaptiveDesign(first=2, max_n=8, k=k, target_half_width=0.001)
    rng = np.random.default_rng(5)
    final = rng.binomial(8, rng.uniform(0.1, 0.9, 24)).tolist()
    early = [int(rng.hypergeometric(c, 8 - c, 2)) for c in final]
    history = [{"A": 2}, {"A": 8}]
    looks = [{"A": _counts(2, early)}, {"A": _counts(8, final)}]
    assert dict(evaluate(design, looks[0], history[:1]).advance) == {"A": 8}
    est = stop_estimates(design, history, looks, seed=2, draws=300)
    assert est.accepted == {"A": 300}
    a = est.agent("A")
    assert a.plain_value == pytest.approx(float(np.mean(pass_at_k(8, np.array(final), k))))
    assert abs(a.interval.value - a.plain_value) < 0.015  # Monte Carlo error ~ 0.003
    assert a.first_value == pytest.approx(float(np.mean(pass_at_k(2, np.array(early), k))))
    # seeded: the same numbers again, other numbers with another seed
    assert stop_estimates(design, history, looks, seed=2, draws=300) == est
    assert stop_estimates(design, history, looks, seed=3, draws=300).agent("A").interval.value != a.interval.value


def test_inconsistent_orderings_are_rejected() -> None:
    # two-stage: the first look planned n = 4 for A; orderings whose first look would plan
    # another n are left out, so fewer than all draws are kept
    design = AdaptiveDesign(first=2, max_n=16, target_half_width=0.14)
    rng = np.random.default_rng(11)
    p = rng.beta(2, 2, 30)
    out = rng.random((30, 16)) < p[:, None]
    first = _counts(2, out[:, :2].sum(axis=1).tolist())
    assert dict(evaluate(design, {"A": first}, [{"A": 2}]).advance) == {"A": 4}
    n_final = 4
    final = _counts(n_final, out[:, :n_final].sum(axis=1).tolist())
    est = stop_estimates(design, [{"A": 2}, {"A": n_final}], [{"A": first}, {"A": final}], seed=0, draws=64)
    assert 0 < est.accepted["A"] < 64
    with pytest.raises(InvalidArgumentError, match="one entry per look"):
        stop_estimates(design, [{"A": 2}, {"A": n_final}], [{"A": final}])


def test_interval_rule_drops_the_inflation_only_for_a_target_that_ran_the_whole_schedule() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, 24)
    out = rng.random((24, 16)) < p[:, None]

    def looks(ns: list[int]) -> list[dict[str, AgentCounts]]:
        return [{"A": _counts(n, out[:, :n].sum(axis=1).tolist())} for n in ns]

    # reached max_n (a target no plan can meet): the default rule's variance is the spread alone,
    # never above the midpoint's (below it here); the estimate does not depend on the rule
    full = AdaptiveDesign(first=2, max_n=8, target_half_width=0.001)
    spread = stop_estimates(full, [{"A": 2}, {"A": 8}], looks([2, 8]), seed=2, draws=64).agent("A").interval
    mid = stop_estimates(full, [{"A": 2}, {"A": 8}], looks([2, 8]), seed=2, draws=64,
                         interval_rule="midpoint").agent("A").interval
    assert spread.value == mid.value and spread.se < mid.se
    assert spread.high - spread.low == pytest.approx(2 * spread.critical * spread.se)
    # stopped early (n = 4 of max_n 16): both rules give the midpoint
    early = AdaptiveDesign(first=2, max_n=16, target_half_width=0.16)
    assert dict(evaluate(early, looks([2])[0], [{"A": 2}]).advance) == {"A": 4}
    a, b = (stop_estimates(early, [{"A": 2}, {"A": 4}], looks([2, 4]), seed=0, draws=64, interval_rule=r)
            for r in ("full-schedule-spread", "midpoint"))
    assert a == b
    with pytest.raises(InvalidArgumentError, match=r"interval_rule must be one of .*'spread'"):
        stop_estimates(full, [{"A": 2}, {"A": 8}], looks([2, 8]), interval_rule="spread")


def make_suite(root: Path) -> Path:
    suite = root / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "suite.toml").write_text('name = "adaptive-mini"\nversion = "0.1"\n')
    for t in range(4):
        task = suite / "tasks" / f"add{t}"
        for d in ("workspace", "tests", "solution"):
            (task / d).mkdir(parents=True)
        (task / "task.toml").write_text(f'id = "add{t}"\nlanguage = "python"\ntimeout_s = 20\n')
        (task / "prompt.md").write_text("Implement add.\n")
        (task / "workspace" / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
        (task / "solution" / "adder.py").write_text("def add(a, b):\n    return a + b\n")
        (task / "tests" / "test_adder.py").write_text(
            "from adder import add\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    return suite


@pytest.mark.slow
def test_adaptive_run_resume_and_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = make_suite(tmp_path)
    (tmp_path / "adaptive_agents.py").write_text(textwrap.dedent("""
        from pathlib import Path

        def good(request):
            (Path(request.workspace) / "adder.py").write_text("def add(a, b):\\n    return a + b\\n")

        def coin(request):
            code = "a + b" if request.seed % 3 else "a - b"
            (Path(request.workspace) / "adder.py").write_text(f"def add(a, b):\\n    return {code}\\n")
    """))
    agents = tmp_path / "agents.toml"
    agents.write_text(textwrap.dedent("""
        [[agents]]
        name = "good"
        kind = "python"
        callable = "adaptive_agents:good"
        path = "."

        [[agents]]
        name = "coin"
        kind = "python"
        callable = "adaptive_agents:coin"
        path = "."
    """))
    out = tmp_path / "run"
    args = ["run", str(suite), "--agents", str(agents), "--out", str(out), "-n", "2", "--adaptive",
            "--max-n", "8", "--settle", "good,coin", "--workers", "2", "--scanner", "bandit"]
    assert main(args) == 0
    err = capsys.readouterr().err
    doc = json.loads((out / "adaptive.json").read_text())
    assert doc["design"]["schedule"] == [2, 4, 8] and doc["tasks"] == 4
    final_n = doc["rounds"][-1]["n"]
    with RunStore.open_existing(out) as store:
        recs = store.rollouts()
    # exactly the rollouts the design asked for: n per agent on every task
    for agent, n in final_n.items():
        assert sorted((r.task_id, r.rollout) for r in recs if r.agent == agent) == \
            [(f"add{t}", i) for t in range(4) for i in range(n)]
    assert doc["rollouts"] == 4 * sum(final_n.values()) and doc["fixed_rollouts"] == 4 * 8 * 2
    assert "round 1:" in err and "adaptive run finished" in err
    # the reported estimates at the stop: Rao-Blackwellised, seeded with the run's seed
    assert "estimates at the stop (Rao-Blackwellised" in err
    est = doc["estimate"]
    assert {e["agent"] for e in est["agents"]} == {"good", "coin"} and est["seed"] == doc["design"]["seed"]
    (pair,) = est["pairs"]
    assert (pair["a"], pair["b"]) == ("good", "coin") and pair["ci_low"] <= pair["value"] <= pair["ci_high"]
    good = next(e for e in est["agents"] if e["agent"] == "good")
    assert good["value"] == good["plain_value"] == good["first_look_value"] == 1.0  # passes every rollout
    # the good agent shows no within-task variance: the next rollouts go to the other one
    assert doc["rounds"][0]["advance"] == {"coin": 4}
    # resume: the same command replays the rounds from the store and runs nothing new
    before = (out / "adaptive.json").read_text()
    assert main(args) == 0
    capsys.readouterr()
    with RunStore.open_existing(out) as store:
        assert len(store.done_keys()) == len(recs)
    assert json.loads((out / "adaptive.json").read_text())["rounds"] == json.loads(before)["rounds"]
    assert json.loads((out / "adaptive.json").read_text())["estimate"] == est
    # score on the run adds the adaptive section; JSON keeps its keys and adds "adaptive"
    assert main(["score", str(out), "-k", "1"]) == 0
    text = capsys.readouterr().out
    assert "== adaptive run: stopped after" in text and "estimates at the stop" in text
    assert main(["score", str(out), "-k", "1", "--format", "json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    by_agent = {e["agent"]: e for e in scored["adaptive"]["estimate"]["agents"]}
    assert by_agent == {e["agent"]: e for e in est["agents"]} and "agents" in scored
    assert scored["adaptive"]["estimate"]["pairs"] == est["pairs"]
    # plan reads the finished run as a pilot
    assert main(["plan", "--pilot", str(out), "--max-n", "16", "--settle", "good,coin", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["pilot_n"] == 2 and isinstance(plan["settled"], bool)
    assert plan["settled"] == (plan["extra_rollouts"] == 0)
    # an adaptive pilot: its own estimates at the stop
    assert {e["agent"]: e for e in plan["estimate"]["agents"]} == {e["agent"]: e for e in est["agents"]}


def test_continuation_projects_more_rollouts_for_an_open_pair() -> None:
    design = AdaptiveDesign(first=2, max_n=64, settle=(("A", "B"),))
    rng = np.random.default_rng(0)
    pa = rng.uniform(0.3, 0.9, 40)
    counts = {"A": AgentCounts(np.full(40, 2, np.int64), rng.binomial(2, pa).astype(np.int64)),
              "B": AgentCounts(np.full(40, 2, np.int64), rng.binomial(2, np.clip(pa - 0.2, 0, 1)).astype(np.int64))}
    res = continuation(design, counts)
    assert not res.settled and res.now.pairs[0].decision == "open"
    widths = [look.half_widths["A-B"] for look in res.looks]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(widths))  # more rollouts, narrower
    assert res.extra_rollouts is not None and res.extra_rollouts == res.looks[-1].extra_rollouts > 0
    assert res.looks[-1].met and not any(look.met for look in res.looks[:-1])
    assert math.isfinite(res.now.pairs[0].interval.value)


def test_plan_pilot_prints_the_estimates_if_the_run_stops_now(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from reliabench.records import write_jsonl

    rng = np.random.default_rng(3)
    recs = [Rollout(task_id=f"t{t}", agent=agent, rollout=i, status="completed",
                    tests=(TestOutcome("test_x", "passed" if rng.random() < p else "failed"),))
            for t in range(12) for agent, p in (("A", 0.8), ("B", 0.3)) for i in range(3)]
    pilot = tmp_path / "pilot.jsonl"
    write_jsonl(recs, pilot)
    assert main(["plan", "--pilot", str(pilot), "--max-n", "12", "--settle", "A,B"]) == 0
    text = capsys.readouterr().out
    assert "estimates at the stop (one look: the plain estimate" in text
    assert main(["plan", "--pilot", str(pilot), "--max-n", "12", "--settle", "A,B", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (pair,) = doc["estimate"]["pairs"]
    by_agent = {e["agent"]: e["value"] for e in doc["estimate"]["agents"]}
    passes = {a: np.mean([r.passes for r in recs if r.agent == a]) for a in ("A", "B")}
    assert by_agent == pytest.approx(passes, abs=1e-6)
    assert pair["value"] == pytest.approx(passes["A"] - passes["B"], abs=1e-6)
    assert doc["estimate"]["draws"] == 0 and pair["ci_low"] < pair["value"] < pair["ci_high"]
