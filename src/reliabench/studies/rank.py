r"""Rank agents with intervals: which leaderboard gaps are real.

Everything is computed on per-task values over the *shared tasks* (tasks every agent ran at
least k times; the others are counted in ``excluded``): :math:`R_{ta} = \mathrm{pass@}k(n_{ta},
c_{ta})` for ``metric="reliability"`` or :math:`\mathrm{pass}^k(n_{ta}, c_{ta})` for
``metric="pass_hat"``. An agent's value is the mean over shared tasks.

**Value CI and rank interval.** Each of B resamples draws the T shared tasks with replacement
(all agents move together: the resample is paired) and recomputes every agent's mean. Ranks
are competition ranks, 1 = best: :math:`r_a = 1 + \#\{a' : \bar R_{a'} > \bar R_a\}` (tied
agents share the better rank). The value CI is the percentile interval of the resampled means;
the rank interval ``[rank_low, rank_high]`` is the (alpha/2, 1 - alpha/2) quantile range
(inverted CDF, so integers) of the resampled ranks. Each interval is marginal (for one agent),
not simultaneous over agents.

**Sampling of rollouts.** ``sampling="tasks"`` (the default) resamples tasks only. With several
rollouts per task this already covers rollout noise: :math:`\hat R_t` is a noisy estimate of
the task's true value, so the spread of :math:`\hat R_t` across tasks estimates
:math:`B + W(n)` (between-task plus within-task variance, see ``planning``) and the variance of
the mean :math:`(B + W(n))/T` -- both sources (Davison & Hinkley 1997, sec. 3.8, "strategy 2").
``sampling="two-level"`` also resamples the n rollouts of each drawn (task, agent) with
replacement (:math:`c^* \sim \mathrm{Bin}(n, c/n)`, drawn independently for every copy of a
task). Its intervals are wider: it adds the within-task variance a second time (about
:math:`W(n)(1 - 1/n)/T` more), so it is a conservative choice, for when rollouts are few and
you want intervals that are certainly not too narrow. With one rollout per task it changes
nothing.

**Pair tests and groups.** Every pair (a, b) of the m = A(A-1)/2 pairs is tested with the paired
sign-flip permutation test of ``compare`` (H0: within each task the two agents' rollouts are
exchangeable; :math:`p = (1 + \#\{|\bar d^*| \ge |\bar d|\})/(1 + B)`, the same B sign
vectors for every pair). The p-values are corrected over all m pairs, by Holm (family-wise
error rate <= alpha) or Benjamini-Hochberg (false discovery rate <= alpha; valid under
positive dependence). A pair is *separated* when its corrected p-value is <= alpha. A
*group* is a maximal run of consecutive agents in the order of the point values such that no
pair inside the run is separated. Groups can overlap (B may be inseparable from A above and
from C below while A and C are separated), every agent is in at least one group, and an agent
separated from both neighbours is a group of its own. An *adjacent gap* (consecutive agents
in that order) is *decisive* when the pair is separated.

**Tasks to decide a gap.** For an adjacent pair with mean task difference :math:`\Delta` and
sample variance :math:`s_d^2` of the :math:`d_t`, a paired z-test at the Bonferroni level
alpha/m (the strictest step of Holm, so a conservative figure) has the target power with
:math:`T = \lceil (z_{1-\alpha/(2m)} + z_{\text{power}})^2 s_d^2 / \Delta^2 \rceil` tasks, at the
same rollouts per task. ``planning.plan_difference`` answers the same question with a model of
task difficulty, and for other numbers of rollouts.

Everything is seeded and vectorised (numpy); the same inputs and seed give the same numbers.

Examples:
    >>> from reliabench.records import Rollout
    >>> recs = [Rollout(task_id=f"t{t}", agent=a, rollout=0, verdict=(t % d == 0))
    ...         for t in range(60) for a, d in (("A", 1), ("B", 2), ("C", 60))]
    >>> r = rank_agents(recs, n_resamples=2000)
    >>> [(a.agent, a.rank, a.rank_low, a.rank_high) for a in r.agents]
    [('A', 1, 1, 1), ('B', 2, 2, 2), ('C', 3, 3, 3)]
    >>> r.groups
    (('A',), ('B',), ('C',))
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import CountTable, ScoreReport, count_pairs
from reliabench.metrics.arrays import FloatArray, IntArray
from reliabench.metrics.estimators import pass_at_k, pass_hat_k
from reliabench.metrics.stats import resample_weights, sign_flip_p_values
from reliabench.records import Rollout

__all__ = [
    "CORRECTIONS",
    "Correction",
    "Metric",
    "Sampling",
    "METRICS",
    "SAMPLINGS",
    "AdjacentGap",
    "AgentRank",
    "PairTest",
    "RankOutcome",
    "Ranking",
    "adjust_p_values",
    "consecutive_groups",
    "rank_agents",
    "rank_for_report",
]

Metric = Literal["reliability", "pass_hat"]
Correction = Literal["holm", "bh"]
Sampling = Literal["tasks", "two-level"]

METRICS: Final = ("reliability", "pass_hat")
CORRECTIONS: Final = ("holm", "bh")
SAMPLINGS: Final = ("tasks", "two-level")
_CORRECTION_LABEL: Final = {
    "holm": "Holm (family-wise error rate)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
}
_TOL: Final = 1e-12



@dataclass(frozen=True, slots=True)
class AgentRank:
    """One agent's value and rank, with intervals.

    Attributes:
        agent: The agent.
        value: Mean per-task value over the shared tasks.
        ci_low: Lower bound of the percentile bootstrap CI of ``value``.
        ci_high: Upper bound.
        rank: Competition rank of ``value`` (1 = best; ties share the better rank).
        rank_low: Best rank in the bootstrap rank interval.
        rank_high: Worst rank in the bootstrap rank interval.
        simulated: Whether the agent is simulated (not a real model).
    """

    agent: str
    value: float
    ci_low: float
    ci_high: float
    rank: int
    rank_low: int
    rank_high: int
    simulated: bool = False


@dataclass(frozen=True, slots=True)
class PairTest:
    """The paired test of one pair of agents.

    Attributes:
        agent_a: The agent placed higher (by point value).
        agent_b: The agent placed lower.
        difference: Mean over shared tasks of ``R_a - R_b`` (>= 0 up to ties).
        p_value: Two-sided sign-flip permutation p-value.
        p_adjusted: The p-value corrected over all pairs.
        separated: ``p_adjusted <= alpha``.
        borderline: Whether +-2 Monte Carlo standard deviations of the permutation p-values
            could change ``separated`` (more resamples would settle it).
    """

    agent_a: str
    agent_b: str
    difference: float
    p_value: float
    p_adjusted: float
    separated: bool
    borderline: bool = False


@dataclass(frozen=True, slots=True)
class AdjacentGap:
    """Two agents next to each other in the ranking.

    Attributes:
        upper: The agent above.
        lower: The agent below.
        difference: ``value(upper) - value(lower)``.
        p_adjusted: Corrected p-value of the pair.
        decisive: Whether the pair is separated at the chosen level.
        sd: Standard deviation of the per-task differences.
        tasks_needed: Tasks that give the target power at the Bonferroni level with the
            same rollouts per task (None when the difference is 0).
        borderline: Whether the decision is within Monte Carlo error (see ``PairTest``).
    """

    upper: str
    lower: str
    difference: float
    p_adjusted: float
    decisive: bool
    sd: float
    tasks_needed: int | None
    borderline: bool = False


@dataclass(frozen=True)
class Ranking:
    """What ``rank_agents`` computed, with its settings.

    Attributes:
        agents: One entry per agent, best first (point values; ties by name).
        groups: Maximal runs of consecutive agents with no separated pair inside.
        pairs: Every pair's test, in the order of ``agents``.
        gaps: The adjacent gaps, top to bottom.
        metric: ``reliability`` or ``pass_hat``.
        k: The k.
        level: The confidence level (alpha = 1 - level for tests and intervals).
        correction: ``holm`` or ``bh``.
        sampling: ``tasks`` or ``two-level``.
        tasks: Shared tasks used.
        excluded: Tasks seen but not shared by every agent with n >= k.
        min_n: Smallest rollouts per (task, agent) on the shared tasks.
        max_n: Largest.
        n_resamples: Bootstrap resamples (and sign-flip permutations).
        power: Target power of ``AdjacentGap.tasks_needed``.
        seed: The seed.
        notes: What limits the result.
    """

    agents: tuple[AgentRank, ...]
    groups: tuple[tuple[str, ...], ...]
    pairs: tuple[PairTest, ...]
    gaps: tuple[AdjacentGap, ...]
    metric: Metric
    k: int
    level: float
    correction: Correction
    sampling: Sampling
    tasks: int
    excluded: int
    min_n: int
    max_n: int
    n_resamples: int
    power: float
    seed: int
    notes: tuple[str, ...]

    @property
    def metric_name(self) -> str:
        """``reliability@k`` or ``pass^k`` with the k filled in."""
        return f"reliability@{self.k}" if self.metric == "reliability" else f"pass^{self.k}"

    @property
    def correction_label(self) -> str:
        """The correction, spelled out with the error rate it controls."""
        return _CORRECTION_LABEL[self.correction]

    @property
    def decisive_gaps(self) -> int:
        """How many adjacent gaps are decisive."""
        return sum(g.decisive for g in self.gaps)


def adjust_p_values(p: npt.ArrayLike, method: Correction) -> FloatArray:
    r"""Holm or Benjamini-Hochberg adjusted p-values (same order as ``p``).

    Holm: with :math:`p_{(1)} \le \dots \le p_{(m)}`,
    :math:`\tilde p_{(i)} = \max_{j \le i} \min(1, (m - j + 1) p_{(j)})`.
    BH: :math:`\tilde p_{(i)} = \min_{j \ge i} \min(1, m\, p_{(j)} / j)`.
    Rejecting where :math:`\tilde p \le \alpha` is Holm's step-down (FWER) or BH's step-up
    (FDR) procedure at level alpha.

    Examples:
        >>> [round(float(x), 4) for x in adjust_p_values([0.01, 0.04, 0.03], "holm")]
        [0.03, 0.06, 0.06]
        >>> [round(float(x), 4) for x in adjust_p_values([0.01, 0.04, 0.03], "bh")]
        [0.03, 0.04, 0.04]
    """
    if method not in CORRECTIONS:
        raise InvalidArgumentError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}")
    arr = np.asarray(p, dtype=np.float64).ravel()
    if arr.size and (np.isnan(arr).any() or arr.min() < 0.0 or arr.max() > 1.0):
        raise InvalidArgumentError(f"p-values must lie in [0, 1], got {arr.tolist()!r}")
    m = arr.size
    out = np.empty(m)
    if m == 0:
        return out
    order = np.argsort(arr, kind="stable")
    ranked = arr[order]
    i = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - i + 1) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ranked / i)[::-1])[::-1]
    out[order] = adj
    return out


def consecutive_groups(separated: npt.ArrayLike) -> tuple[tuple[int, ...], ...]:
    """Maximal runs ``i..e`` of consecutive indices with no separated pair inside.

    Args:
        separated: Symmetric boolean matrix (agents in ranking order), True where a pair is
            separated.

    Returns:
        The runs as tuples of indices, top to bottom.

    Examples:
        >>> s = [[0, 0, 1], [0, 0, 0], [1, 0, 0]]  # only the outer pair is separated
        >>> consecutive_groups(s)
        ((0, 1), (1, 2))
    """
    sep = np.asarray(separated, dtype=bool)
    n = sep.shape[0]
    if sep.shape != (n, n):
        raise InvalidArgumentError(f"separated must be a square matrix, got shape {sep.shape}")
    groups: list[tuple[int, ...]] = []
    prev_end = -1
    for start in range(n):
        end = start
        while end + 1 < n and not sep[start:end + 2, end + 1].any():
            end += 1
        if end > prev_end:  # not contained in the previous run (run ends never decrease)
            groups.append(tuple(range(start, end + 1)))
            prev_end = end
    return tuple(groups)


def _value_table(n_max: int, k: int, metric: Metric) -> FloatArray:
    """``V[n, c]`` = per-task value for n rollouts with c passing (NaN where n < k or c > n)."""
    table = np.full((n_max + 1, n_max + 1), np.nan)
    fn = pass_at_k if metric == "reliability" else pass_hat_k
    for n in range(k, n_max + 1):
        c = np.arange(n + 1)
        table[n, : n + 1] = fn(np.full(n + 1, n), c, k)
    return table


def _competition_ranks(means: FloatArray) -> IntArray:
    """Competition ranks along the last axis (1 = highest; ties share the better rank)."""
    better = means[..., None, :] > means[..., :, None] + _TOL
    ranks: IntArray = (1 + better.sum(axis=-1)).astype(np.int64)
    return ranks


def _check(k: int, metric: str, level: float, correction: str, sampling: str, n_resamples: int,
           power: float) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be an integer >= 1, got {k!r}")
    if metric not in METRICS:
        raise InvalidArgumentError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise InvalidArgumentError(f"level must be in (0, 1), got {level!r}")
    if correction not in CORRECTIONS:
        raise InvalidArgumentError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    if sampling not in SAMPLINGS:
        raise InvalidArgumentError(f"sampling must be one of {', '.join(SAMPLINGS)}, got {sampling!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InvalidArgumentError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    if not 0.0 < power < 1.0:
        raise InvalidArgumentError(f"power must be in (0, 1), got {power!r}")


def rank_agents(
    records: Iterable[Rollout] | CountTable,
    k: int = 1,
    *,
    metric: Metric = "reliability",
    level: float = 0.95,
    correction: Correction = "holm",
    sampling: Sampling = "tasks",
    n_resamples: int = 10_000,
    power: float = 0.8,
    seed: int = 0,
    batch: int = 500,
) -> Ranking:
    """Rank all agents by reliability@k or pass^k, with CIs, rank intervals and groups.

    Args:
        records: Rollout records, or their ``CountTable``.
        k: The k.
        metric: ``reliability`` (reliability@k) or ``pass_hat`` (pass^k).
        level: Confidence level of the intervals; the tests use alpha = 1 - level.
        correction: ``holm`` (family-wise) or ``bh`` (false discovery rate) over all pairs.
        sampling: ``tasks`` or ``two-level`` (also resample rollouts; see the module docs).
        n_resamples: Bootstrap resamples, also the number of sign-flip permutations.
        power: Target power for ``AdjacentGap.tasks_needed``.
        seed: Seed of all resampling.
        batch: Resamples per vectorised step (bounds memory).

    Returns:
        A ``Ranking``.

    Raises:
        InvalidArgumentError: for a bad setting, fewer than 2 agents, or no shared task.
    """
    _check(k, metric, level, correction, sampling, n_resamples, power)
    table = records if isinstance(records, CountTable) else count_pairs(records)
    names = table.agents
    n_agents = len(names)
    if n_agents < 2:
        raise InvalidArgumentError(f"ranking needs at least 2 agents, got {list(names)!r}")
    shared = np.all(table.n >= k, axis=1)
    n_sh = table.n[shared]
    c_sh = table.c[shared]
    n_tasks = int(shared.sum())
    if n_tasks == 0:
        raise InvalidArgumentError(f"no task where every agent has at least k={k} rollouts")
    vtab = _value_table(int(n_sh.max()), int(k), metric)
    values = vtab[n_sh, c_sh]  # (T, A)
    point = values.mean(axis=0)
    alpha = 1.0 - float(level)
    notes: list[str] = []
    excluded = len(table.tasks) - n_tasks
    if excluded:
        notes.append(f"{excluded} of {len(table.tasks)} task(s) left out: not run at least k={k} "
                     "times by every agent")
    two_level = sampling == "two-level" and int(n_sh.max()) > 1
    if sampling == "two-level" and not two_level:
        notes.append("two-level sampling asked, but every (task, agent) has one rollout: only tasks "
                     "are resampled")
    rng = np.random.default_rng(seed)
    means = np.empty((n_resamples, n_agents))
    # two-level draws (batch, T, A) arrays: keep each below ~2M cells
    step = max(1, min(batch, 2_000_000 // (n_tasks * n_agents))) if two_level else batch
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        if two_level:
            idx = rng.integers(0, n_tasks, size=(size, n_tasks))
            nn = n_sh[idx]
            cstar = rng.binomial(nn, c_sh[idx] / nn)
            means[start:start + size] = vtab[nn, cstar].mean(axis=1)
        else:
            means[start:start + size] = resample_weights(n_tasks, size, rng) @ values / n_tasks
    ci = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    ranks = np.empty((n_resamples, n_agents), dtype=np.int64)
    for start in range(0, n_resamples, batch):
        ranks[start:start + batch] = _competition_ranks(means[start:start + batch])
    r_lo = np.quantile(ranks, alpha / 2, axis=0, method="inverted_cdf")
    r_hi = np.quantile(ranks, 1 - alpha / 2, axis=0, method="inverted_cdf")
    point_rank = _competition_ranks(point)
    order = sorted(range(n_agents), key=lambda j: (-point[j], names[j]))
    # pair tests, in ranking order: (upper, lower)
    pair_idx = [(order[i], order[j]) for i in range(n_agents) for j in range(i + 1, n_agents)]
    diffs = np.stack([values[:, a] - values[:, b] for a, b in pair_idx], axis=1)  # (T, m)
    observed = diffs.mean(axis=0)
    p = sign_flip_p_values(diffs, n_resamples, rng, batch=batch)
    p_adj = adjust_p_values(p, correction)
    sep_flags = p_adj <= alpha + _TOL
    m = len(pair_idx)
    if 1.0 / (1.0 + n_resamples) > alpha / m:
        notes.append(f"with {n_resamples} resamples the smallest p-value is "
                     f"{1 / (1 + n_resamples):.2g}, above alpha/m = {alpha / m:.2g} for {m} pairs: "
                     f"use at least {math.ceil(m / alpha)} resamples so that any pair can be separated")
    # permutation p-values are Monte Carlo estimates: would +-2 sd of that error change a decision?
    mc_sd = np.sqrt(p * (1.0 - p) / n_resamples)
    sep_lo = adjust_p_values(np.clip(p - 2 * mc_sd, 0.0, 1.0), correction) <= alpha + _TOL
    sep_hi = adjust_p_values(np.clip(p + 2 * mc_sd, 0.0, 1.0), correction) <= alpha + _TOL
    flip = sep_lo != sep_hi
    uncertain = int(flip.sum())
    if uncertain:
        notes.append(f"{uncertain} pair(s) are within Monte Carlo error of the decision (p-values from "
                     f"{n_resamples} permutations, +-2 sd): rerun with more --resamples (e.g. 100000) "
                     "before calling those gaps")
    pos = {agent: i for i, agent in enumerate(order)}
    sep = np.zeros((n_agents, n_agents), dtype=bool)
    pairs = []
    for (a, b), d, pv, pa, s, f in zip(pair_idx, observed, p, p_adj, sep_flags, flip, strict=True):
        sep[pos[a], pos[b]] = sep[pos[b], pos[a]] = bool(s)
        pairs.append(PairTest(names[a], names[b], float(d), float(pv), float(pa), bool(s), bool(f)))
    groups = tuple(tuple(names[order[i]] for i in g) for g in consecutive_groups(sep))
    z = float(sps.norm.ppf(1.0 - alpha / (2 * m)) + sps.norm.ppf(power))
    gaps = []
    by_pair = {(pt.agent_a, pt.agent_b): pt for pt in pairs}
    for i in range(n_agents - 1):
        a, b = order[i], order[i + 1]
        d = values[:, a] - values[:, b]
        sd = float(d.std(ddof=1)) if n_tasks > 1 else float("nan")
        delta = float(d.mean())
        need = (math.ceil(z * z * sd * sd / (delta * delta) - 1e-9)
                if abs(delta) > _TOL and math.isfinite(sd) else None)
        pt = by_pair[names[a], names[b]]
        gaps.append(AdjacentGap(names[a], names[b], delta, pt.p_adjusted, pt.separated, sd,
                                None if need is None else max(2, need), pt.borderline))
    agents = tuple(
        AgentRank(names[j], float(point[j]), float(ci[0, j]), float(ci[1, j]), int(point_rank[j]),
                  int(r_lo[j]), int(r_hi[j]), names[j] in table.simulated)
        for j in order
    )
    return Ranking(
        agents=agents, groups=groups, pairs=tuple(pairs), gaps=tuple(gaps), metric=metric, k=int(k),
        level=float(level), correction=correction, sampling=sampling, tasks=n_tasks, excluded=excluded,
        min_n=int(n_sh.min()), max_n=int(n_sh.max()), n_resamples=int(n_resamples), power=float(power),
        seed=int(seed), notes=tuple(notes),
    )


@dataclass(frozen=True, slots=True)
class RankOutcome:
    """The rank intervals of a scored report, or why there are none (the HTML report's section).

    Attributes:
        ranking: The ranking, when it could be computed.
        problem: Why not (e.g. no task shared by every agent), when it could not.
    """

    ranking: Ranking | None
    problem: str | None = None


def rank_for_report(report: ScoreReport) -> RankOutcome | None:
    """The rank intervals at the report's first k, with its level, resamples and seed.

    None with fewer than two agents or without resamples (nothing to rank, or no intervals).
    """
    if len(report.agents) < 2 or report.n_resamples < 1:
        return None
    try:
        return RankOutcome(rank_agents(report.counts, report.ks[0], level=report.confidence,
                                       n_resamples=report.n_resamples, seed=report.seed))
    except InvalidArgumentError as exc:  # e.g. no task shared by every agent
        return RankOutcome(None, str(exc))
