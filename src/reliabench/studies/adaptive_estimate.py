r"""The estimate and interval an adaptive run reports at its stop: Rao-Blackwellised, unbiased.

The plain mean of per-task estimates at the stop is biased when the stop depends on the data
(optional stopping). The first-look estimate -- the same mean over each task's first
``design.first`` rollouts -- is exactly unbiased but ignores every later rollout. This module
conditions the first-look estimate on everything the run saw (Rao-Blackwell): the result uses
all rollouts and stays exactly unbiased under the design's stopping rule.

**Why it is unbiased.** Within a (task, agent) the rollouts are independent with one success
rate, so every ordering of the task's outcomes with the same pass count is equally likely, and
the design only ever looks at each task's first n rollouts, with n equal over the tasks of an
agent. Let S be the *statistic at the stop*: the run's history (the n of every agent at every
look) and each (task, agent)'s pass count at its final n. Given S, the data are uniformly
distributed over the orderings of each task's outcomes that are *consistent* with the history
-- run through :func:`reliabench.studies.adaptive.evaluate`, they make the same decisions at
every earlier look (the decision at the last look is a function of S itself). This
conditional law does not depend on the success rates, so

.. math:: \hat\theta_{RB} = E[\hat\theta_{first} \mid S]

is a statistic, and :math:`E \hat\theta_{RB} = E \hat\theta_{first} = \theta` (tower rule):
unbiased for the task population's mean reliability@k whatever the stopping rule, with
variance no larger than the first-look estimate's.

**Monte Carlo.** Only the pass counts at the looks' n matter, so a uniform random ordering
is drawn as a chain of hypergeometric counts backwards from the final look (the passes among
a task's first n_j rollouts, given those among its first n_{j+1}). ``draws`` orderings are
proposed, the consistent ones kept (rejection sampling: the kept ones are uniform over the
consistent set), and the per-task first-look values are averaged over the kept orderings
*and the observed one* (itself a draw from the same conditional law). Each of these is
exactly unbiased for any number of draws; more draws only lower the variance. The draws are
seeded (the run's seed), so the same run always reports the same numbers. Infra errors stay
in their slots; only pass/fail outcomes are permuted among a task's eligible rollouts.

**Interval.** With :math:`U` the first-look estimate, the estimate's variance is
:math:`V_m = \operatorname{Var} U - E\operatorname{Var}(U \mid S)`, and both terms have
unbiased estimates: :math:`s^2_{first}/T` (the first-look data are always observed, so their
law is untouched by the stop) and the variance of :math:`U` over the kept orderings (times
``m/(m+1)`` with m kept draws, which also counts the Monte Carlo error of the average). The
per-task spread :math:`V_s = s^2(\hat\theta_{RB,t})/T` is the other natural estimate. Neither
is right on its own: :math:`V_s` ignores the shift the stopping rule gives all tasks at once
(too narrow where the stop selects strongly), and :math:`\hat V_m` is the *marginal*
variance over all stopping looks, wider than the spread of the runs that end at the usual
look, and noisy. Two rules (``interval_rule``):

* ``midpoint``: :math:`V = V_s + \max(\hat V_m - V_s, 0)/2` for every target -- half-way
  from the spread to the marginal variance when that is larger.
* ``full-schedule-spread`` (default): the midpoint for a target that stopped early, and
  :math:`V = V_s` for one whose agents all ran the whole schedule (each at ``max_n`` at the
  stop; for a pair, both agents). The inflation corrects the selection an *early* stop makes;
  a target that reached ``max_n`` was not cut short, its data are the fixed design's, and the
  fixed design's plain t-interval (whose variance is :math:`V_s`) has nominal coverage there.
  The marginal-variance part would carry the spread of the runs that stopped early into the
  runs that did not, and over-cover where most runs end at max-n (no true difference). "The
  whole schedule" is each agent's n at the stop, the n its estimate uses: in settle mode with
  several pairs, a pair whose agents went on to ``max_n`` for other pairs is full too.

Either way the interval is :math:`\hat\theta_{RB} \pm t_{T-1}\sqrt V`, clipped to the range
of the estimand, at the design's level (per pair: ``design.pair_alpha``, the Bonferroni
split). The rules are empirical choices, checked case by case by
``benchmarks/bench_adaptive.py`` (docs/statistics.md): with :math:`V_s` alone for every
target coverage fell to about 1.5-2 points below nominal where the stop selects strongly,
with :math:`\max(\hat V_m, V_s)` it rose 2.6 points above nominal with no true difference,
the midpoint for every target still 1.9 points above there (0.969, 95% of the runs at max-n);
the full-schedule-spread rule brought that case to 0.959 and kept every case within 1.5 points
of nominal (2000 runs per case; the other cases moved by at most 0.7 points, none below 0.941).
Unlike the repeated intervals that drive the stopping decisions (simultaneous over looks,
hence conservative at the stop), its coverage at the stop is close to nominal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.arrays import FloatArray, IntArray
from reliabench.metrics.estimators import pass_at_k
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts, Interval, evaluate

__all__ = ["DEFAULT_DRAWS", "INTERVAL_RULES", "StopEstimate", "StopEstimates", "stop_estimates"]

DEFAULT_DRAWS = 32
INTERVAL_RULES = ("full-schedule-spread", "midpoint")
"""Variance rules of the interval at the stop (the module docstring); the first is the default."""


@dataclass(frozen=True, slots=True)
class StopEstimate:
    """The unbiased estimate of one target at the stop, with its interval.

    Attributes:
        target: An agent's name, or ``"a - b"`` for a pair's difference.
        interval: ``value`` is the Rao-Blackwellised estimate; ``low``/``high`` its interval.
        first_value: The first-look estimate it conditions (mean over the first rollouts).
        plain_value: The plain mean at the stop (biased under optional stopping).
    """

    target: str
    interval: Interval
    first_value: float
    plain_value: float


@dataclass(frozen=True, slots=True)
class StopEstimates:
    """The estimates an adaptive run reports at its stop.

    Attributes:
        agents: One per agent (level ``design.confidence``).
        pairs: One per settle pair (level ``1 - design.pair_alpha``).
        draws: Orderings proposed.
        accepted: Per agent, orderings consistent with the run's history (the observed one not
            counted). In half-width mode each agent's decisions depend on its own rollouts
            only, so each agent is accepted on its own; in settle mode an ordering of all
            agents is accepted or not as a whole.
        seed: Seed of the draws.
    """

    agents: tuple[StopEstimate, ...]
    pairs: tuple[StopEstimate, ...]
    draws: int
    accepted: Mapping[str, int]
    seed: int

    def agent(self, name: str) -> StopEstimate:
        """The estimate of agent ``name``."""
        for est in self.agents:
            if est.target == name:
                return est
        raise KeyError(name)


def _rb_interval(rows: FloatArray, alpha: float, lowest: float, *, full: bool = False,
                 rule: str = "full-schedule-spread") -> Interval:
    """Estimate and interval from per-task first-look values: row 0 observed, the others kept draws.

    ``full``: the target's agents ran the whole schedule (all at ``max_n``); with the
    ``full-schedule-spread`` rule its variance is then the per-task spread alone. The interval
    is clipped to ``[lowest, 1]`` (what the estimand can be).
    """
    ok = ~np.isnan(rows[0])
    v = rows[:, ok]
    t = int(v.shape[1])
    if t < 2:
        mean = float(v.mean()) if t else math.nan
        return Interval(mean, -math.inf, math.inf, math.inf, t, math.inf)
    means = v.mean(axis=1)  # the first-look estimate of each ordering
    value = float(means.mean())
    m = int(v.shape[0]) - 1  # kept draws besides the observed ordering
    var_first = float(v[0].var(ddof=1)) / t  # unbiased for Var(first-look estimate)
    var_given_s = float(means.var(ddof=1)) if m else 0.0  # unbiased for Var(first-look | S)
    marginal = var_first - var_given_s * m / (m + 1)  # unbiased for the estimate's variance
    spread = float(v.mean(axis=0).var(ddof=1)) / t  # the per-task spread of the estimate itself
    if full and rule == "full-schedule-spread":
        se = math.sqrt(spread)  # no early stop to correct for (see the module)
    else:  # half-way from the spread to the marginal variance when that is larger
        se = math.sqrt(spread + max(marginal - spread, 0.0) / 2.0)
    crit = float(stats.t.ppf(1.0 - alpha / 2.0, df=t - 1))
    return Interval(value, max(value - crit * se, lowest), min(value + crit * se, 1.0), se, t, crit)


def _mean(v: FloatArray) -> float:
    return math.nan if bool(np.all(np.isnan(v))) else float(np.nanmean(v))


def _check(design: AdaptiveDesign, history: Sequence[Mapping[str, int]],
           counts_by_look: Sequence[Mapping[str, AgentCounts]], draws: int) -> list[str]:
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 0:
        raise InvalidArgumentError(f"draws must be an integer >= 0, got {draws!r}")
    if not history or len(history) != len(counts_by_look):
        raise InvalidArgumentError(f"counts_by_look must have one entry per look of history "
                                   f"({len(history)}), got {len(counts_by_look)}")
    names = list(counts_by_look[-1])
    for j, counts in enumerate(counts_by_look):
        if list(counts) != names:
            raise InvalidArgumentError(f"look {j + 1}: agents {list(counts)!r} differ from {names!r}")
        for a in names:
            if history[j].get(a) is None:
                raise InvalidArgumentError(f"look {j + 1}: history has no n for agent {a!r}")
            if j and np.any(counts[a].n < counts_by_look[j - 1][a].n):
                raise InvalidArgumentError(f"agent {a!r}: eligible rollouts shrink between looks "
                                           f"{j} and {j + 1}")
    return names


def stop_estimates(design: AdaptiveDesign, history: Sequence[Mapping[str, int]],
                   counts_by_look: Sequence[Mapping[str, AgentCounts]], *, seed: int = 0,
                   draws: int = DEFAULT_DRAWS,
                   interval_rule: str = INTERVAL_RULES[0]) -> StopEstimates:
    """The Rao-Blackwellised estimates and intervals at the stop of an adaptive run.

    Args:
        design: The run's design.
        history: The n of every agent at each look, the stopping look last (as the run made it).
        counts_by_look: Per look, every agent's per-task counts among each task's first
            ``history[j][agent]`` rollouts (the same tasks, in the same order, at every look).
        seed: Seed of the Monte Carlo orderings (the run's seed: reproducible numbers).
        draws: Orderings proposed (0: the first-look estimate itself).
        interval_rule: The interval's variance rule, one of ``INTERVAL_RULES``:
            ``full-schedule-spread`` (default) or ``midpoint`` (the midpoint for every target).

    Returns:
        ``StopEstimates``; with one look (a stop at the first look) the estimate is the plain
        one, which is then the first-look estimate.

    Examples:
        A run that stopped at its first look reports its plain estimate:

        >>> d = AdaptiveDesign(first=2, max_n=8, target_half_width=0.2)
        >>> c = {"a": AgentCounts(np.array([2, 2, 2]), np.array([1, 2, 0]))}
        >>> round(stop_estimates(d, [{"a": 2}], [c]).agent("a").interval.value, 4)
        0.5
    """
    names = _check(design, history, counts_by_look, draws)
    if interval_rule not in INTERVAL_RULES:
        raise InvalidArgumentError(f"interval_rule must be one of {', '.join(INTERVAL_RULES)}, "
                                   f"got {interval_rule!r}")
    k = design.k
    looks = len(history)
    n = {a: [np.asarray(c[a].n, np.int64) for c in counts_by_look] for a in names}
    observed_first = {a: np.asarray(counts_by_look[0][a].c, np.int64) for a in names}
    final_c = {a: np.asarray(counts_by_look[-1][a].c, np.int64) for a in names}
    rng = np.random.default_rng(seed)
    kept: dict[str, list[IntArray]] = {a: [observed_first[a]] for a in names}
    accepted = {a: 0 for a in names}
    proposals = draws if looks > 1 else 0
    if proposals:
        # chains[a][j]: (draws, tasks) pass counts at look j, drawn backwards from the final look
        chains: dict[str, list[IntArray]] = {}
        for a in sorted(names):  # the draws do not depend on the order the agents come in
            chain: list[IntArray] = [np.broadcast_to(final_c[a], (proposals, final_c[a].size)).copy()]
            for j in range(looks - 2, -1, -1):
                upper, n_up, n_lo = chain[0], n[a][j + 1], n[a][j]
                same = n_lo == n_up
                good = np.where(same, 0, upper)
                bad = np.where(same, 0, n_up - upper)
                drawn = rng.hypergeometric(good, bad, np.where(same, 0, n_lo))
                chain.insert(0, np.where(same, upper, drawn).astype(np.int64))
            chains[a] = chain
        expected = [{a: history[j + 1][a] for a in names if history[j + 1][a] != history[j][a]}
                    for j in range(looks - 1)]
        # half-width mode: each agent's decisions depend on its own data only, so the
        # consistent set is a product over agents and each agent is accepted on its own
        separate = design.mode == "half_width"
        for d in range(proposals):
            first_counts = {a: AgentCounts(n[a][0], chains[a][0][d]) for a in names}
            alive = set(names)
            for j in range(looks - 1):
                counts = first_counts if j == 0 else {a: AgentCounts(n[a][j], chains[a][j][d]) for a in names}
                step = evaluate(design, counts, history[: j + 1], first_counts, decisions_only=True)
                if separate:
                    alive = {a for a in alive if step.advance.get(a) == expected[j].get(a)}
                elif dict(step.advance) != expected[j]:
                    alive = set()
                if not alive:
                    break
            for a in alive:
                accepted[a] += 1
                kept[a].append(chains[a][0][d])
    rows: dict[str, FloatArray] = {}
    plains: dict[str, FloatArray] = {}
    for a in names:
        rows[a] = np.asarray(pass_at_k(np.broadcast_to(n[a][0], (len(kept[a]), n[a][0].size)),
                                       np.stack(kept[a]), k, k_exceeds_n="nan"), dtype=np.float64)
        plains[a] = np.asarray(pass_at_k(n[a][-1], final_c[a], k, k_exceeds_n="nan"), dtype=np.float64)
    alpha = 1.0 - design.confidence
    full = {a: history[-1][a] == design.max_n for a in names}  # ran the whole schedule
    agents = tuple(StopEstimate(a, _rb_interval(rows[a], alpha, 0.0, full=full[a], rule=interval_rule),
                                _mean(rows[a][0]), _mean(plains[a]))
                   for a in names)
    # settle mode accepts orderings of all agents together, so the rows of a pair line up
    pairs = tuple(StopEstimate(f"{a} - {b}", _rb_interval(rows[a] - rows[b], design.pair_alpha, -1.0,
                                                          full=full[a] and full[b], rule=interval_rule),
                               _mean(rows[a][0] - rows[b][0]), _mean(plains[a] - plains[b]))
                  for a, b in design.settle)
    return StopEstimates(agents, pairs, proposals, accepted, seed)
