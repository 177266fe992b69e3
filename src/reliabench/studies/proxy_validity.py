r"""Whether a cheap single-rollout proxy substitutes for repeated runs (claim 2 of the paper).

For every (task, agent) pair the *target* is reliability@k over its n independent rollouts,
:math:`1 - \binom{n-c}{k} / \binom{n}{k}` (``estimators.pass_at_k``), and the *proxies* are
what a single-submission harness sees of the pair's first rollout:

* ``first_fraction``: the share of its hidden tests that passed, :math:`P_1 / T_1`;
* ``first_verdict``: whether it passed them all (0 or 1).

Agreement is measured by rank correlation (``scipy.stats``):

* Spearman :math:`\rho` over (task, agent) pairs with both values defined;
* Spearman :math:`\rho` over agents, of the agents' means over tasks (the agent ranking);
* Kendall :math:`\tau_b` over agents, of the same means.

Each comes with a seeded percentile bootstrap interval over tasks: a resample draws tasks
with replacement (``stats.resample_weights``); a task drawn twice contributes its pairs
twice; every statistic uses the same resamples. A pair whose n is below k has no
reliability@k and is left out (as in ``analysis.score``); a statistic over constant input
is undefined and reported as NaN (so is an interval with no defined resample).

The target uses all n rollouts, the first included: the question is how well what one run
shows predicts what n runs show.

Examples:
    >>> from reliabench.records import Rollout
    >>> recs = [Rollout(task_id=f"t{t}", agent=a, rollout=r, tests_total=4,
    ...                 tests_passed=4 if r < good else 3)
    ...         for t in range(4) for a, good in (("x", 1), ("y", 3)) for r in range(4)]
    >>> study = proxy_study(recs, k=1, n_resamples=0)
    >>> study.get("first_verdict", "pairs", "spearman").units
    8
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Final

import numpy as np
from scipy import stats as sps

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import CountTable, ScoreReport, count_pairs
from reliabench.metrics.arrays import FloatArray
from reliabench.metrics.estimators import pass_at_k
from reliabench.metrics.stats import resample_weights
from reliabench.records import Rollout

__all__ = [
    "LEVELS",
    "PROXIES",
    "STATISTICS",
    "AgentProxyRow",
    "ProxyPoint",
    "ProxyPoints",
    "ProxyStudy",
    "RankCorrelation",
    "proxy_points",
    "proxy_study",
]

PROXIES: Final = ("first_fraction", "first_verdict")
LEVELS: Final = ("pairs", "agents")
STATISTICS: Final = ("spearman", "kendall")
_BATCH: Final = 256  # bootstrap resamples per vectorized batch



@dataclass(frozen=True, slots=True)
class RankCorrelation:
    """One rank correlation between a proxy and reliability@k, with its bootstrap CI.

    Attributes:
        proxy: ``first_fraction`` or ``first_verdict``.
        level: ``pairs`` (over (task, agent) pairs) or ``agents`` (over agent means).
        statistic: ``spearman`` (rho) or ``kendall`` (tau-b).
        value: The statistic on the data (NaN when undefined, e.g. constant input).
        ci_low: Lower bound of the percentile bootstrap interval over tasks.
        ci_high: Upper bound.
        pvalue: scipy's p-value of no association (NaN when undefined).
        units: Number of pairs or agents it was computed over.
    """

    proxy: str
    level: str
    statistic: str
    value: float
    ci_low: float
    ci_high: float
    pvalue: float
    units: int


@dataclass(frozen=True, slots=True)
class AgentProxyRow:
    """One agent's means over tasks: the target and the two proxies."""

    agent: str
    reliability: float
    first_fraction: float
    first_verdict: float
    tasks: int


@dataclass(frozen=True)
class ProxyStudy:
    """The proxy study: rank correlations of single-rollout proxies with reliability@k.

    Attributes:
        k: The k of reliability@k.
        confidence: Confidence level of the intervals.
        n_resamples: Bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        tasks: Tasks in the data.
        pairs: (task, agent) pairs with a defined reliability@k.
        agents: Per-agent means, in the order of the data's agents.
        correlations: Every (proxy, level, statistic) computed.
        notes: What was left out and why.
    """

    k: int
    confidence: float
    n_resamples: int
    seed: int
    tasks: int
    pairs: int
    agents: tuple[AgentProxyRow, ...]
    correlations: tuple[RankCorrelation, ...]
    notes: tuple[str, ...] = ()

    def get(self, proxy: str, level: str, statistic: str) -> RankCorrelation:
        """The correlation for one (proxy, level, statistic).

        Raises:
            InvalidArgumentError: if that combination was not computed.
        """
        for c in self.correlations:
            if (c.proxy, c.level, c.statistic) == (proxy, level, statistic):
                return c
        raise InvalidArgumentError(
            f"no correlation for proxy={proxy!r}, level={level!r}, statistic={statistic!r}")

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (NaN becomes None)."""
        def clean(x: object) -> object:
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x
        return {
            "k": self.k, "confidence": self.confidence, "n_resamples": self.n_resamples,
            "seed": self.seed, "tasks": self.tasks, "pairs": self.pairs,
            "agents": clean([asdict(a) for a in self.agents]),
            "correlations": clean([asdict(c) for c in self.correlations]),
            "notes": list(self.notes),
        }


def _constant(x: FloatArray) -> bool:
    return x.size < 2 or bool(np.ptp(x) == 0.0)


def _point(x: FloatArray, y: FloatArray, statistic: str) -> tuple[float, float]:
    """Statistic and p-value via scipy.stats; NaN for fewer than 2 values or constant input."""
    if _constant(x) or _constant(y):
        return math.nan, math.nan
    res = sps.spearmanr(x, y) if statistic == "spearman" else sps.kendalltau(x, y)
    return float(res.statistic), float(res.pvalue)


def _rowwise_spearman(x: FloatArray, y: FloatArray) -> FloatArray:
    """Spearman rho per row of small (B, m) arrays; NaN marks entries to leave out.

    rho is the Pearson correlation of the (average) ranks, ``scipy.stats.rankdata``.
    """
    both = ~(np.isnan(x) | np.isnan(y))
    rx = sps.rankdata(np.where(both, x, np.nan), axis=1, nan_policy="omit")
    ry = sps.rankdata(np.where(both, y, np.nan), axis=1, nan_policy="omit")
    w = both.astype(np.float64)
    return _weighted_pearson(np.where(both, rx, 0.0).T, np.where(both, ry, 0.0).T, w.T)


def _weighted_pearson(rx: FloatArray, ry: FloatArray, w: FloatArray) -> FloatArray:
    """Pearson correlation per column of (m, B) arrays with weights (multiplicities) ``w``.

    Uses ``S_xy = sum w x y - sum w x * sum w y / sum w`` (rank sums stay far below 2**53,
    so the cancellation is harmless).
    """
    total = w.sum(axis=0)
    wx = np.einsum("mb,mb->b", w, rx)
    wy = np.einsum("mb,mb->b", w, ry)
    with np.errstate(invalid="ignore", divide="ignore"):
        sxy = np.einsum("mb,mb,mb->b", w, rx, ry) - wx * wy / total
        sxx = np.einsum("mb,mb,mb->b", w, rx, rx) - wx * wx / total
        syy = np.einsum("mb,mb,mb->b", w, ry, ry) - wy * wy / total
        rho = sxy / np.sqrt(sxx * syy)
    tol = 1e-9 * np.maximum(1.0, total) ** 3
    rho[(total < 2) | ~(sxx > tol) | ~(syy > tol)] = np.nan
    out: FloatArray = np.clip(rho, -1.0, 1.0)
    return out


def _weighted_ranks(v: FloatArray, w: FloatArray) -> FloatArray:
    """Average ranks of ``v`` (1-D, no NaN) in the data set where value i appears ``w[i, b]`` times.

    Equal to ``rankdata`` of the expanded data, per column b: a value's rank is the weight
    of the smaller values plus (the weight of its tie group + 1) / 2. Shape (m, B).
    """
    order = np.argsort(v, kind="stable")
    sv = v[order]
    new_group = np.concatenate(([False], sv[1:] != sv[:-1]))
    ends = np.concatenate((np.flatnonzero(new_group) - 1, [sv.size - 1]))
    group = np.empty(sv.size, dtype=np.int64)
    group[order] = np.cumsum(new_group)
    upto = np.cumsum(w[order], axis=0)[ends]  # weight of the values <= each group
    sums = np.diff(upto, axis=0, prepend=0.0)
    ranks = upto - (sums - 1.0) / 2.0
    return ranks[group]


def _pair_spearman(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    """Spearman rho of pairs (x, y) per resample, pair i weighted by ``w[i, b]`` (m, B)."""
    if x.size < 2:
        return np.full(w.shape[1], np.nan)
    return _weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)


def _rowwise_kendall(x: FloatArray, y: FloatArray) -> FloatArray:
    r"""Kendall tau-b per row of small (B, m) arrays; NaN marks entries to leave out.

    .. math:: \tau_b = \sum_{i<j} s^x_{ij} s^y_{ij} \big/
              \sqrt{\sum_{i<j} |s^x_{ij}| \sum_{i<j} |s^y_{ij}|},
              \quad s^x_{ij} = \operatorname{sign}(x_i - x_j)

    (the tau-b of ``scipy.stats.kendalltau``), over pairs where both entries are defined.
    """
    both = ~(np.isnan(x) | np.isnan(y))
    xf = np.where(both, x, 0.0)
    yf = np.where(both, y, 0.0)
    keep = both[:, :, None] & both[:, None, :]
    sx = np.where(keep, np.sign(xf[:, :, None] - xf[:, None, :]), 0.0)
    sy = np.where(keep, np.sign(yf[:, :, None] - yf[:, None, :]), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(axis=(1, 2)) / np.sqrt(np.abs(sx).sum(axis=(1, 2)) * np.abs(sy).sum(axis=(1, 2)))
    out: FloatArray = np.clip(tau, -1.0, 1.0)
    return out


def _interval(values: FloatArray, confidence: float) -> tuple[float, float]:
    ok = values[~np.isnan(values)]
    if ok.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - confidence
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def _weighted_means(w: FloatArray, v: FloatArray) -> FloatArray:
    """Per resample and column, sum_t w m v / sum_t w m (m = defined), shape (B, A)."""
    mask = ~np.isnan(v)
    num = w @ np.where(mask, v, 0.0)
    den = w @ mask.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _check_args(k: object, confidence: object, n_resamples: object, seed: object) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be an integer >= 1, got {k!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
            or not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 0:
        raise InvalidArgumentError(f"n_resamples must be an integer >= 0, got {n_resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidArgumentError(f"seed must be an integer >= 0, got {seed!r}")


def proxy_study(
    data: CountTable | Iterable[Rollout],
    k: int = 1,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> ProxyStudy:
    """Rank correlations of single-rollout proxies with reliability@k, with bootstrap CIs.

    Args:
        data: Rollout records (any source) or the ``CountTable`` of ``analysis.count_pairs``
            (e.g. ``ScoreReport.counts``).
        k: The k of reliability@k (pairs with n < k are left out).
        confidence: Confidence level of the intervals, in (0, 1).
        n_resamples: Bootstrap resamples over tasks (0: NaN intervals).
        seed: Seed of the resampling: same data and seed, same intervals.

    Returns:
        A :class:`ProxyStudy`.

    Raises:
        InvalidArgumentError: naming the bad argument, or for empty data.
    """
    _check_args(k, confidence, n_resamples, seed)
    k, n_resamples, seed = int(k), int(n_resamples), int(seed)
    table = data if isinstance(data, CountTable) else count_pairs(data)
    present = table.present
    n_tasks, n_agents = table.n.shape
    target = np.full(table.n.shape, np.nan)
    ok = present & (table.n >= k)
    target[ok] = pass_at_k(table.n[ok], table.c[ok], k)
    known = ok & (table.first_total > 0)
    fraction = np.full(table.n.shape, np.nan)
    fraction[known] = table.first_passed[known] / table.first_total[known]
    verdict = np.where(ok, table.first_pass.astype(np.float64), np.nan)
    proxies = {"first_fraction": fraction, "first_verdict": verdict}

    notes: list[str] = []
    short = int((present & ~ok).sum())
    if short:
        notes.append(f"{short} pair(s) with fewer than k={k} rollouts left out")
    unknown = int((ok & ~known).sum())
    if unknown:
        notes.append(f"{unknown} pair(s) without test counts: first_fraction leaves them out")

    rows = []
    agent_target = _weighted_means(np.ones((1, n_tasks)), target)[0]
    agent_proxy = {name: _weighted_means(np.ones((1, n_tasks)), v)[0] for name, v in proxies.items()}
    for j, agent in enumerate(table.agents):
        rows.append(AgentProxyRow(agent, float(agent_target[j]),
                                  float(agent_proxy["first_fraction"][j]),
                                  float(agent_proxy["first_verdict"][j]), int(ok[:, j].sum())))
    defined_agents = ~np.isnan(agent_target)

    task_of = np.repeat(np.arange(n_tasks), n_agents).reshape(n_tasks, n_agents)
    pair_sets = {}
    for name, v in proxies.items():
        both = ~(np.isnan(v) | np.isnan(target))
        pair_sets[name] = (v[both], target[both], task_of[both])
    rng = np.random.default_rng(seed)
    boot: dict[tuple[str, str, str], list[FloatArray]] = {}
    for start in range(0, n_resamples, _BATCH):
        b = min(_BATCH, n_resamples - start)
        w = resample_weights(n_tasks, b, rng)
        w_t = np.ascontiguousarray(w.T)  # (tasks, B): gathers and cumsums run down columns
        mt = _weighted_means(w, target)
        for name, v in proxies.items():
            px, py, pt = pair_sets[name]
            boot.setdefault((name, "pairs", "spearman"), []).append(_pair_spearman(px, py, w_t[pt]))
            mp = _weighted_means(w, v)
            boot.setdefault((name, "agents", "spearman"), []).append(_rowwise_spearman(mp, mt))
            boot.setdefault((name, "agents", "kendall"), []).append(_rowwise_kendall(mp, mt))

    correlations = []
    for name in proxies:
        px, py, _ = pair_sets[name]
        a_both = defined_agents & ~np.isnan(agent_proxy[name])
        for level, statistic, x, y in (
            ("pairs", "spearman", px, py),
            ("agents", "spearman", agent_proxy[name][a_both], agent_target[a_both]),
            ("agents", "kendall", agent_proxy[name][a_both], agent_target[a_both]),
        ):
            value, pvalue = _point(x, y, statistic)
            draws = boot.get((name, level, statistic))
            lo, hi = _interval(np.concatenate(draws), confidence) if draws else (math.nan, math.nan)
            correlations.append(RankCorrelation(name, level, statistic, value, lo, hi, pvalue,
                                                int(x.size)))
    return ProxyStudy(k=k, confidence=float(confidence), n_resamples=n_resamples, seed=seed,
                      tasks=n_tasks, pairs=int(ok.sum()), agents=tuple(rows),
                      correlations=tuple(correlations), notes=tuple(notes))


@dataclass(frozen=True, slots=True)
class ProxyPoint:
    """One (task, agent) pair of the report page's proxy figure.

    Attributes:
        task: The task.
        agent: The agent.
        series: The agent's column in the report (its colour).
        first_passed: Tests the pair's first rollout passed.
        first_total: Its tests.
        c: Passing rollouts of the pair.
        n: Its rollouts.
        proxy: ``first_passed / first_total``.
        reliability: reliability@k over the pair's n rollouts.
    """

    task: str
    agent: str
    series: int
    first_passed: int
    first_total: int
    c: int
    n: int
    proxy: float
    reliability: float


@dataclass(frozen=True, slots=True)
class ProxyPoints:
    """The single-rollout proxy of a scored report, pair by pair, with Spearman's rho over pairs.

    Attributes:
        k: The k of reliability@k.
        rho: Spearman's rho of ``first_fraction`` over pairs, with its bootstrap interval.
        points: One point per pair with per-test counts for its first rollout and n >= k.
    """

    k: int
    rho: RankCorrelation
    points: tuple[ProxyPoint, ...]


def proxy_points(report: ScoreReport, k: int = 1) -> ProxyPoints | None:
    """The proxy figure's points and rho (at most 2,000 resamples); None when no pair has them."""
    t = report.counts
    known = t.present & (t.first_total > 0) & (t.n >= k)
    if not known.any():
        return None
    study = proxy_study(t, k, confidence=report.confidence,
                        n_resamples=min(report.n_resamples, 2_000), seed=report.seed)
    points = []
    for i, task in enumerate(t.tasks):
        for j, agent in enumerate(t.agents):
            if not known[i, j]:
                continue
            points.append(ProxyPoint(
                task, agent, j, int(t.first_passed[i, j]), int(t.first_total[i, j]), int(t.c[i, j]),
                int(t.n[i, j]), float(t.first_passed[i, j] / t.first_total[i, j]),
                float(pass_at_k(int(t.n[i, j]), int(t.c[i, j]), k))))
    return ProxyPoints(k, study.get("first_fraction", "pairs", "spearman"), tuple(points))
