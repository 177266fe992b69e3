"""Paired comparison and rank-first probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs
from reliabench.records import Rollout, write_jsonl
from reliabench.studies.compare import compare_agents, rank_first


def simulate(rates: dict[str, float], tasks: int, n: int, seed: int, spread: float = 0.0) -> list[Rollout]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(-spread, spread, size=tasks)
    out = []
    for agent, p in rates.items():
        probs = np.clip(p + base, 0, 1)
        for t in range(tasks):
            for i in range(n):
                out.append(Rollout(task_id=f"t{t:03d}", agent=agent, rollout=i,
                                   verdict=bool(rng.random() < probs[t])))
    return out


def test_difference_is_exact_mean_of_per_task_differences() -> None:
    recs = [Rollout(task_id=t, agent=a, rollout=i, verdict=ok)
            for t, a, oks in [("x", "A", [1, 1, 0]), ("x", "B", [0, 0, 0]),
                              ("y", "A", [1, 0, 0]), ("y", "B", [1, 1, 1])]
            for i, ok in enumerate(map(bool, oks))]
    r = compare_agents(recs, "A", "B", k=2, n_resamples=200)
    # x: A n3 c2 -> 1 ; B -> 0 ; y: A c1 -> 1 - C(2,2)/C(3,2) = 2/3 ; B -> 1 ; mean d = (1 - 1/3)/2
    assert r.difference == pytest.approx(1 / 3)
    assert (r.wins, r.losses, r.tasks) == (1, 1, 2)


def test_seeded_and_ci_contains_difference() -> None:
    recs = simulate({"A": 0.6, "B": 0.4}, tasks=40, n=5, seed=1, spread=0.3)
    r1 = compare_agents(recs, "A", "B", k=2, n_resamples=2000, seed=3)
    r2 = compare_agents(recs, "A", "B", k=2, n_resamples=2000, seed=3)
    assert r1 == r2
    assert r1.ci_low < r1.difference < r1.ci_high
    assert r1.p_value < 0.05
    swapped = compare_agents(recs, "B", "A", k=2, n_resamples=2000, seed=3)
    assert swapped.difference == pytest.approx(-r1.difference)


def test_p_value_is_calibrated_under_the_null() -> None:
    # identical agents: p-values should be roughly uniform; check the 5% rejection rate
    rejections = 0
    trials = 120
    for s in range(trials):
        recs = simulate({"A": 0.5, "B": 0.5}, tasks=20, n=3, seed=100 + s, spread=0.3)
        rejections += compare_agents(recs, "A", "B", k=1, n_resamples=400, seed=s).p_value < 0.05
    assert rejections / trials < 0.12


def test_shared_tasks_only() -> None:
    recs = simulate({"A": 0.5, "B": 0.5}, tasks=5, n=4, seed=0)
    recs = [r for r in recs if not (r.agent == "B" and r.task_id == "t000")]
    recs += [Rollout(task_id="t000", agent="B", rollout=0, verdict=True)]
    r = compare_agents(recs, "A", "B", k=2, n_resamples=100)
    assert (r.tasks, r.excluded) == (4, 1)


def test_rank_first() -> None:
    recs = simulate({"A": 0.8, "B": 0.5, "C": 0.2}, tasks=30, n=4, seed=2, spread=0.1)
    rf = rank_first(recs, k=1, n_resamples=1000, seed=0)
    assert rf.agents[0] == "A"
    assert rf.p_first[0] > 0.95
    assert sum(rf.p_first) == pytest.approx(1.0)
    table = count_pairs(recs)
    assert rank_first(table, k=1, n_resamples=1000, seed=0) == rf


def test_rank_first_ties_split() -> None:
    recs = simulate({"A": 0.5}, tasks=6, n=2, seed=0)
    recs += [Rollout(task_id=r.task_id, agent="B", rollout=r.rollout, verdict=r.verdict) for r in recs]
    rf = rank_first(recs, n_resamples=100)
    assert rf.p_first == (0.5, 0.5)


def test_errors() -> None:
    recs = simulate({"A": 0.5, "B": 0.5}, tasks=3, n=2, seed=0)
    with pytest.raises(InvalidArgumentError, match="no agent 'Z'"):
        compare_agents(recs, "A", "Z")
    with pytest.raises(InvalidArgumentError, match="must differ"):
        compare_agents(recs, "A", "A")
    with pytest.raises(InvalidArgumentError, match="at least k=3 rollouts"):
        compare_agents(recs, "A", "B", k=3)
    with pytest.raises(InvalidArgumentError, match="k must be an integer >= 1"):
        compare_agents(recs, "A", "B", k=0)
    with pytest.raises(InvalidArgumentError, match="at least 2 agents"):
        rank_first(recs, agents=["A"])


def test_cli(tmp_path: Path) -> None:
    from reliabench.commands.compare import command

    path = tmp_path / "r.jsonl"
    write_jsonl(simulate({"A": 0.7, "B": 0.3}, tasks=10, n=3, seed=0), path)
    runner = CliRunner()
    out = runner.invoke(command, [str(path), "--a", "A", "--b", "B", "-k", "2", "--format", "json",
                                  "--resamples", "500"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)["comparison"]
    assert data["agent_a"] == "A"
    assert data["k"] == 2
    out = runner.invoke(command, [str(path), "--resamples", "200"])
    assert out.exit_code == 0
    assert "P(first)" in out.output
    bad = runner.invoke(command, [str(path), "--a", "A"])
    assert isinstance(bad.exception, InvalidArgumentError)
