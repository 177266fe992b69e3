r"""The adaptive design simulated: coverage, bias and savings over many synthetic benchmarks.

:func:`simulate_design` runs a design of :mod:`reliabench.studies.adaptive` on ``runs``
simulated benchmarks (a :class:`Scenario`: per-agent Beta rate models on shared tasks) and
measures what a real run cannot: how often its intervals cover the truth, the bias of its
estimates at the stop (the plain one, the first look's, and the reported Rao-Blackwellised
one of :mod:`reliabench.studies.adaptive_estimate`), how often its decisions agree with the
fixed-n design on the same data, and the share of the fixed design's rollouts it used.
``benchmarks/bench_adaptive.py`` runs it over the scenarios whose numbers are in
``docs/statistics.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import stats

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.arrays import FloatArray
from reliabench.studies.adaptive import (
    AdaptiveDesign,
    AgentCounts,
    evaluate,
    fixed_decisions,
    fixed_intervals,
)
from reliabench.studies.adaptive_estimate import DEFAULT_DRAWS, INTERVAL_RULES, stop_estimates
from reliabench.studies.planning import AgentModel, variance_components

__all__ = ["DesignSimulation", "Scenario", "simulate_design"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A simulated benchmark: per-agent Beta rate models on the same tasks.

    Attributes:
        name: A label.
        agents: One rate model per agent.
        tasks: Tasks per simulated run.
        correlation: Gaussian-copula correlation of the agents' per-task rates.
    """

    name: str
    agents: tuple[AgentModel, ...]
    tasks: int
    correlation: float = 0.5

    def __post_init__(self) -> None:
        if self.tasks < 2:
            raise InvalidArgumentError(f"tasks must be >= 2, got {self.tasks!r}")
        if not -1.0 < self.correlation < 1.0:
            raise InvalidArgumentError(f"correlation must be in (-1, 1), got {self.correlation!r}")
        if len({a.name for a in self.agents}) != len(self.agents) or not self.agents:
            raise InvalidArgumentError("agents must be non-empty with unique names")


@dataclass(frozen=True, slots=True)
class DesignSimulation:
    """How an adaptive design behaved over many simulated runs, next to the fixed-n design.

    Attributes:
        scenario: The scenario.
        design: The design.
        runs: Simulated runs.
        targets: The estimands: agent names (half-width mode) or ``"a-b"`` pairs (settle).
        truth: True value of each target.
        coverage: Share of runs whose reported interval at the stop covers the truth.
        coverage_se: Its simulation standard error.
        bias: Mean of estimate minus truth at the stop.
        bias_se: Simulation standard error of the bias.
        fixed_coverage: Coverage of the fixed-n (n = max_n) plain interval.
        first_bias: Bias of the first-look estimate (``first_value``).
        first_bias_se: Its simulation standard error.
        rb_coverage: Share of runs whose reported interval at the stop (the Rao-Blackwellised
            estimate's, ``reliabench.studies.adaptive_estimate``) covers the truth.
        rb_coverage_se: Its simulation standard error.
        rb_bias: Bias of the reported (Rao-Blackwellised) estimate at the stop.
        rb_bias_se: Its simulation standard error.
        rb_acceptance: Mean share of proposed orderings consistent with a run's history (runs
            that stopped at the first look need none and are left out; NaN if all did).
        agreement: Share of runs whose decisions all equal the fixed-n design's (settle:
            every pair's decision; half-width: the ranking of agents by estimate).
        rollout_fraction: Mean rollouts of the adaptive run / rollouts of the fixed-n run.
        stop_reasons: Runs per stop reason.
        decisions: Runs per (adaptive decision, fixed decision) of the first pair (settle).
    """

    scenario: Scenario
    design: AdaptiveDesign
    runs: int
    targets: tuple[str, ...]
    truth: tuple[float, ...]
    coverage: tuple[float, ...]
    coverage_se: tuple[float, ...]
    bias: tuple[float, ...]
    bias_se: tuple[float, ...]
    fixed_coverage: tuple[float, ...]
    first_bias: tuple[float, ...]
    first_bias_se: tuple[float, ...]
    rb_coverage: tuple[float, ...]
    rb_coverage_se: tuple[float, ...]
    rb_bias: tuple[float, ...]
    rb_bias_se: tuple[float, ...]
    rb_acceptance: float
    agreement: float
    rollout_fraction: float
    stop_reasons: dict[str, int] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)


def _draw_rates(scenario: Scenario, rng: np.random.Generator) -> FloatArray:
    m = len(scenario.agents)
    cov = np.full((m, m), scenario.correlation) + (1.0 - scenario.correlation) * np.eye(m)
    z = rng.multivariate_normal(np.zeros(m), cov, size=scenario.tasks)
    u = stats.norm.cdf(z)
    out = np.empty((scenario.tasks, m))
    for j, model in enumerate(scenario.agents):
        ab = model.beta
        out[:, j] = model.mean if ab is None else stats.beta.ppf(u[:, j], *ab)
    return out


def simulate_design(design: AdaptiveDesign, scenario: Scenario, *, runs: int = 2000,
                    seed: int = 0, draws: int | None = None,
                    interval_rule: str | None = None) -> DesignSimulation:
    """Run ``design`` on ``runs`` simulated benchmarks and measure coverage, bias and savings.

    Each run draws per-task rates for every agent (Beta marginals, Gaussian copula), then
    ``max_n`` Bernoulli rollouts per (task, agent). The adaptive design sees prefixes of these
    rollouts; the fixed-n design sees all of them -- the same data, as in a real run where
    rollout i has the same seed in both designs. At the stop, the reported estimate and
    interval are ``reliabench.studies.adaptive_estimate.stop_estimates`` with ``draws``
    orderings (default: what a real run uses), seeded from ``(seed, run)``, and
    ``interval_rule`` (default: the one a real run uses).

    Returns:
        A :class:`DesignSimulation`.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise InvalidArgumentError(f"runs must be an integer >= 1, got {runs!r}")
    draws = DEFAULT_DRAWS if draws is None else draws
    interval_rule = INTERVAL_RULES[0] if interval_rule is None else interval_rule
    names = [a.name for a in scenario.agents]
    for pair in design.settle:
        for agent in pair:
            if agent not in names:
                raise InvalidArgumentError(f"settle: no agent {agent!r} in the scenario")
    k = design.k
    theta = {a.name: variance_components(a, k, k).value for a in scenario.agents}
    if design.mode == "half_width":
        targets = tuple(names)
        truth = tuple(theta[a] for a in names)
    else:
        targets = tuple(f"{a}-{b}" for a, b in design.settle)
        truth = tuple(theta[a] - theta[b] for a, b in design.settle)
    rng = np.random.default_rng(seed)
    schedule = design.schedule
    est = np.empty((runs, len(targets)))
    first_est = np.empty((runs, len(targets)))
    cover = np.empty((runs, len(targets)), bool)
    fixed_cover = np.empty((runs, len(targets)), bool)
    rb_est = np.empty((runs, len(targets)))
    rb_cover = np.empty((runs, len(targets)), bool)
    acceptance: list[float] = []
    agree = np.empty(runs, bool)
    used = np.empty(runs)
    reasons: dict[str, int] = {}
    decisions: dict[str, int] = {}
    for r in range(runs):
        p = _draw_rates(scenario, rng)
        outcomes = rng.random((scenario.tasks, len(names), design.max_n)) < p[:, :, None]
        cum = np.concatenate([np.zeros((scenario.tasks, len(names), 1), np.int64),
                              np.cumsum(outcomes, axis=2)], axis=2)

        def counts_at(now: Mapping[str, int], cum: npt.NDArray[np.int64] = cum) -> dict[str, AgentCounts]:
            return {a: AgentCounts(np.full(scenario.tasks, now[a], np.int64), cum[:, j, now[a]])
                    for j, a in enumerate(names)}

        history: list[dict[str, int]] = [{a: schedule[0] for a in names}]
        first_counts = counts_at(history[0])
        while True:
            step = evaluate(design, counts_at(history[-1]), history, first_counts)
            if not step.advance:
                break
            history.append({**history[-1], **step.advance})
        reasons[step.stop_reason] = reasons.get(step.stop_reason, 0) + 1
        used[r] = sum(history[-1].values()) / (design.max_n * len(names))
        fixed_counts = counts_at({a: design.max_n for a in names})
        rb_seed = int(np.random.SeedSequence([seed, r]).generate_state(1)[0])
        rb = stop_estimates(design, history, [counts_at(h) for h in history], seed=rb_seed, draws=draws,
                            interval_rule=interval_rule)
        if rb.draws:
            acceptance.append(float(np.mean(list(rb.accepted.values()))) / rb.draws)
        rb_ivs = [x.interval for x in (rb.agents if design.mode == "half_width" else rb.pairs)]
        if design.mode == "half_width":
            ivs = [x.interval for x in step.agents]
            firsts = [x.first_value for x in step.agents]
            fixed_agent = fixed_intervals(design, fixed_counts)
            fixed_ivs = [fixed_agent[a] for a in names]
            order = np.argsort([-iv.value for iv in ivs], kind="stable")
            fixed_order = np.argsort([-iv.value for iv in fixed_ivs], kind="stable")
            agree[r] = bool(np.array_equal(order, fixed_order))
        else:
            ivs = [x.interval for x in step.pairs]
            firsts = [x.first_value for x in step.pairs]
            fixed = fixed_decisions(design, fixed_counts)
            fixed_ivs = [x.interval for x in fixed]
            agree[r] = all(x.decision == y.decision for x, y in zip(step.pairs, fixed, strict=True))
            key = f"{step.pairs[0].decision}/{fixed[0].decision}"
            decisions[key] = decisions.get(key, 0) + 1
        for j, (iv, fiv) in enumerate(zip(ivs, fixed_ivs, strict=True)):
            est[r, j] = iv.value
            first_est[r, j] = firsts[j]
            cover[r, j] = iv.low <= truth[j] <= iv.high
            fixed_cover[r, j] = fiv.low <= truth[j] <= fiv.high
            rb_est[r, j] = rb_ivs[j].value
            rb_cover[r, j] = rb_ivs[j].low <= truth[j] <= rb_ivs[j].high
    cov = cover.mean(axis=0)
    err = est - np.asarray(truth)[None, :]
    first_err = first_est - np.asarray(truth)[None, :]
    rb_err = rb_est - np.asarray(truth)[None, :]
    rb_cov = rb_cover.mean(axis=0)
    return DesignSimulation(
        scenario=scenario, design=design, runs=runs, targets=targets, truth=truth,
        coverage=tuple(float(x) for x in cov),
        coverage_se=tuple(float(math.sqrt(x * (1 - x) / runs)) for x in cov),
        bias=tuple(float(x) for x in np.nanmean(err, axis=0)),
        bias_se=tuple(float(x) for x in np.nanstd(err, axis=0, ddof=1) / math.sqrt(runs)),
        fixed_coverage=tuple(float(x) for x in fixed_cover.mean(axis=0)),
        first_bias=tuple(float(x) for x in np.nanmean(first_err, axis=0)),
        first_bias_se=tuple(float(x) for x in np.nanstd(first_err, axis=0, ddof=1) / math.sqrt(runs)),
        rb_coverage=tuple(float(x) for x in rb_cov),
        rb_coverage_se=tuple(float(math.sqrt(x * (1 - x) / runs)) for x in rb_cov),
        rb_bias=tuple(float(x) for x in np.nanmean(rb_err, axis=0)),
        rb_bias_se=tuple(float(x) for x in np.nanstd(rb_err, axis=0, ddof=1) / math.sqrt(runs)),
        rb_acceptance=float(np.mean(acceptance)) if acceptance else math.nan,
        agreement=float(agree.mean()), rollout_fraction=float(used.mean()),
        stop_reasons=reasons, decisions=decisions,
    )
