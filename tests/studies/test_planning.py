"""Planning: exact variance components, and recommendations checked by simulation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.estimators import pass_at_k
from reliabench.records import Rollout
from reliabench.studies.planning import (
    AgentModel,
    fit_pilot,
    pilot_correlation,
    plan_difference,
    plan_half_width,
    shift_to_difference,
    variance_components,
)

SIMS = 4000


def draw_rates(model: AgentModel, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    a, b = model.beta
    return rng.beta(a, b, size=size)


def test_components_against_brute_force() -> None:
    m = AgentModel("a", 0.3, 0.2)
    v = variance_components(m, n=6, k=3)
    rng = np.random.default_rng(0)
    p = draw_rates(m, (400_000,), rng)
    r = pass_at_k(6, rng.binomial(6, p), 3)
    theta = 1 - (1 - p) ** 3
    assert v.value == pytest.approx(r.mean(), abs=3e-3)
    assert v.total == pytest.approx(r.var(), rel=0.02)
    assert v.between == pytest.approx(theta.var(), rel=0.02)


def test_point_mass_binomial_variance() -> None:
    # all tasks at p: for k = 1, Var(c/n) = p(1-p)/n and no between-task part
    v = variance_components(AgentModel("a", 0.3, 0.0), n=5, k=1)
    assert (v.value, v.between) == (pytest.approx(0.3), 0.0)
    assert v.within == pytest.approx(0.3 * 0.7 / 5)


@pytest.mark.parametrize(("k", "n"), [(1, 1), (5, 5), (5, 10)])
def test_half_width_achieved_by_simulation(k: int, n: int) -> None:
    model = AgentModel("a", 0.3, 0.2)
    plan = plan_half_width([model], k=k, half_width=0.05, rollout_options=[n])
    (opt,) = plan.options
    rng = np.random.default_rng(k * 100 + n)
    p = draw_rates(model, (SIMS, opt.tasks), rng)
    means = pass_at_k(n, rng.binomial(n, p), k).mean(axis=1)
    z = stats.norm.ppf(0.975)
    achieved = z * means.std(ddof=1)
    assert achieved <= 0.05 * 1.05
    assert achieved == pytest.approx(opt.achieved, rel=0.05)
    # the normal interval covers the population value about 95% of the time
    cover = np.mean(np.abs(means - variance_components(model, n, k).value) <= 0.05)
    assert cover >= 0.93


def test_power_achieved_by_simulation() -> None:
    k, n, rho, diff = 2, 4, 0.6, 0.12
    a = AgentModel("A", 0.3, 0.2)
    b = shift_to_difference(a, diff, k)
    assert variance_components(b, k, k).value - variance_components(a, k, k).value == pytest.approx(diff)
    plan = plan_difference(a, b, k, diff, correlation=rho, power=0.8, rollout_options=[n])
    (opt,) = plan.options
    rng = np.random.default_rng(7)
    t = opt.tasks
    sims = 2500
    z1 = rng.standard_normal((sims, t))
    z2 = rho * z1 + math.sqrt(1 - rho**2) * rng.standard_normal((sims, t))
    pa = stats.beta.ppf(stats.norm.cdf(z1), *a.beta)
    pb = stats.beta.ppf(stats.norm.cdf(z2), *b.beta)
    d = pass_at_k(n, rng.binomial(n, pa), k) - pass_at_k(n, rng.binomial(n, pb), k)
    # the variance the plan used for one task's difference
    assert d.var() == pytest.approx(opt.variance, rel=0.03)
    zstat = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(t))
    power = np.mean(np.abs(zstat) > stats.norm.ppf(0.975))
    assert 0.77 <= power <= 0.86


def test_task_limit_and_infeasible() -> None:
    m = AgentModel("a", 0.3, 0.2)
    plan = plan_half_width([m], k=5, half_width=0.05, max_tasks=200)
    assert plan.recommended is not None
    assert plan.recommended.tasks <= 200
    smaller = [o for o in plan.options if o.rollouts < plan.recommended.rollouts]
    assert all(o.tasks > 200 for o in smaller)
    hopeless = plan_half_width([m], k=5, half_width=0.01, max_tasks=50)
    assert hopeless.recommended is None
    assert any("infinitely many rollouts" in note for note in hopeless.notes)


def test_unlimited_tasks_recommends_fewest_total_rollouts() -> None:
    plan = plan_half_width([AgentModel("a", 0.4, 0.25)], k=1, half_width=0.05)
    assert plan.recommended == min(plan.options, key=lambda o: (o.total_rollouts, o.rollouts))


def test_fit_pilot_recovers_rates() -> None:
    rng = np.random.default_rng(3)
    truth = AgentModel("x", 0.35, 0.2)
    p = draw_rates(truth, (3000,), rng)
    q = np.clip(p + rng.normal(0, 0.05, 3000), 0, 1)
    recs = [Rollout(task_id=f"t{t}", agent=agent, rollout=i, verdict=bool(rng.random() < rate[t]))
            for agent, rate in (("x", p), ("y", q)) for t in range(3000) for i in range(4)]
    fitted = {m.name: m for m in fit_pilot(recs)}
    assert fitted["x"].mean == pytest.approx(0.35, abs=0.01)
    assert fitted["x"].spread == pytest.approx(0.2, abs=0.015)
    assert pilot_correlation(recs, "x", "y") > 0.9


def test_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="spread of 'a' must be <"):
        AgentModel("a", 0.5, 0.6)
    with pytest.raises(InvalidArgumentError, match="half_width must be in"):
        plan_half_width([AgentModel("a", 0.5, 0.1)], k=1, half_width=0)
    with pytest.raises(InvalidArgumentError, match="outside"):
        shift_to_difference(AgentModel("a", 0.9, 0.1), 0.5, k=1)
    with pytest.raises(InvalidArgumentError, match="needs at least 2 tasks"):
        fit_pilot([Rollout(task_id="t", agent="a", rollout=0, verdict=True)])


def test_cli() -> None:
    from reliabench.commands.plan import command

    runner = CliRunner()
    out = runner.invoke(command, ["--rate", "0.3", "-k", "5", "--half-width", "0.05", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["mode"] == "half_width"
    assert data["recommended"]["rollouts"] == 5
    out = runner.invoke(command, ["--rate", "A=0.3", "--rate", "B=0.45", "--spread", "0.2",
                                  "--max-tasks", "300"])
    assert out.exit_code == 0, out.output
    assert "recommended" in out.output
    bad = runner.invoke(command, ["--half-width", "0.05"])
    assert isinstance(bad.exception, InvalidArgumentError)
