"""The adaptive design simulated (reliabench.sim.design): small seeded simulations of coverage,
bias and savings, next to the fixed-n design on the same data."""

from __future__ import annotations

import math

import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.sim.design import Scenario, simulate_design
from reliabench.studies.adaptive import AdaptiveDesign
from reliabench.studies.planning import AgentModel

SIM = Scenario("test", (AgentModel("A", 0.6, 0.3), AgentModel("B", 0.3, 0.25)), tasks=30, correlation=0.6)


def _near_nominal(cov: float, nominal: float, runs: int) -> bool:
    # the 1.5 points, plus 3 simulation standard errors of a small run count
    return abs(cov - nominal) <= 0.015 + 3 * math.sqrt(nominal * (1 - nominal) / runs)


def test_small_simulation_half_width() -> None:
    design = AdaptiveDesign(first=2, max_n=16, target_half_width=0.13)
    res = simulate_design(design, SIM, runs=200, seed=3, draws=8)
    for cov, se in zip(res.coverage, res.coverage_se, strict=True):
        assert cov >= 0.95 - 3 * se
    for bias, se in zip(res.bias, res.bias_se, strict=True):
        assert abs(bias) <= 3.5 * se
    assert res.rollout_fraction < 0.9 and res.agreement >= 0.95
    # the reported (Rao-Blackwellised) estimate and interval
    for j in range(2):
        assert abs(res.rb_bias[j]) <= 4 * res.rb_bias_se[j]
        assert _near_nominal(res.rb_coverage[j], 0.95, 200)
    assert 0 < res.rb_acceptance <= 1


def test_small_simulation_settle() -> None:
    design = AdaptiveDesign(first=2, max_n=16, settle=(("A", "B"),))
    res = simulate_design(design, SIM, runs=200, seed=4, draws=8)
    assert res.coverage[0] >= 0.95 - 3 * res.coverage_se[0]
    assert res.rollout_fraction < 0.5  # a 0.3 difference settles early
    assert res.agreement >= 0.95
    assert sum(res.stop_reasons.values()) == 200
    # the first-look estimate is unbiased whatever the stop (simulation error only)
    assert abs(res.first_bias[0]) <= 3.5 * res.first_bias_se[0]
    # and so is the reported one, which uses every rollout: smaller error than the first look's
    assert abs(res.rb_bias[0]) <= 4 * res.rb_bias_se[0]
    assert res.rb_bias_se[0] < res.first_bias_se[0]
    assert _near_nominal(res.rb_coverage[0], 0.95, 200)


def test_scenario_and_runs_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="tasks must be >= 2"):
        Scenario("x", (AgentModel("A", 0.5, 0.2),), tasks=1)
    with pytest.raises(InvalidArgumentError, match="correlation must be in"):
        Scenario("x", (AgentModel("A", 0.5, 0.2),), tasks=3, correlation=1.0)
    with pytest.raises(InvalidArgumentError, match="unique names"):
        Scenario("x", (AgentModel("A", 0.5, 0.2), AgentModel("A", 0.4, 0.2)), tasks=3)
    with pytest.raises(InvalidArgumentError, match="runs must be an integer"):
        simulate_design(AdaptiveDesign(first=2, max_n=4, target_half_width=0.2), SIM, runs=0)
    with pytest.raises(InvalidArgumentError, match="settle: no agent 'C'"):
        simulate_design(AdaptiveDesign(first=2, max_n=4, settle=(("A", "C"),)), SIM, runs=1)
