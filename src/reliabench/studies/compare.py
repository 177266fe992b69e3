r"""Paired comparison of agents on shared tasks: difference in reliability@k, and who ranks first.

Both functions work on per-task values :math:`R_{ta} = \mathrm{pass@}k(n_{ta}, c_{ta})` (the
unbiased per-task estimate of reliability@k), over the tasks every compared agent ran at
least k times ("shared tasks"); other tasks are counted in ``excluded``.

**Difference of two agents.** :math:`d_t = R_{tA} - R_{tB}`, :math:`\hat\Delta = \bar d`.

* CI: paired percentile bootstrap over tasks -- each resample draws T tasks with replacement
  and recomputes :math:`\bar d` (both agents move together, so task difficulty cancels).
* p-value: paired sign-flip permutation test of H0 "within each task, the two agents'
  rollouts are exchangeable" (so :math:`d_t` is symmetric about 0). Each permutation flips
  the sign of every :math:`d_t` with probability 1/2;
  :math:`p = (1 + \#\{|\bar d^*| \ge |\bar d|\}) / (1 + B)` (two-sided, never 0; Phipson &
  Smyth 2010). Within-task noise is inside :math:`d_t`, so nothing is double counted.

**Rank-first probabilities.** For each of B bootstrap resamples of the shared tasks, the agent
with the highest mean :math:`R` ranks first (ties share the resample equally); the share of
resamples is its rank-first probability. It is a bootstrap measure of how stable the top
spot is to the choice of tasks -- not a Bayesian posterior.

Everything is seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import CountTable, count_pairs
from reliabench.metrics.arrays import FloatArray
from reliabench.metrics.estimators import pass_at_k
from reliabench.metrics.stats import resample_weights, sign_flip_p_values
from reliabench.records import Rollout

__all__ = [
    "PairedComparison",
    "RankFirst",
    "compare_agents",
    "per_task_reliability",
    "rank_first",
]



@dataclass(frozen=True, slots=True)
class PairedComparison:
    """reliability@k of agent A minus agent B on their shared tasks.

    Attributes:
        agent_a: First agent.
        agent_b: Second agent.
        k: The k.
        tasks: Shared tasks used (both agents with n >= k).
        excluded: Tasks seen in the data but not shared (missing or n < k for either).
        value_a: Mean reliability@k of A on the shared tasks.
        value_b: Mean reliability@k of B on the shared tasks.
        difference: ``value_a - value_b``.
        ci_low: Lower bound of the paired bootstrap CI of the difference.
        ci_high: Upper bound.
        p_value: Two-sided paired sign-flip permutation p-value.
        confidence: Confidence level of the CI.
        n_resamples: Bootstrap resamples (and permutations).
        seed: The seed used.
        wins: Shared tasks where A's estimate is higher.
        losses: Shared tasks where B's estimate is higher.
    """

    agent_a: str
    agent_b: str
    k: int
    tasks: int
    excluded: int
    value_a: float
    value_b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    confidence: float
    n_resamples: int
    seed: int
    wins: int
    losses: int


@dataclass(frozen=True, slots=True)
class RankFirst:
    """Bootstrap share of resamples of shared tasks in which each agent ranks first.

    Attributes:
        agents: Agents, in descending order of ``values``.
        values: Mean reliability@k on the shared tasks.
        p_first: Share of resamples where the agent has the highest mean (ties split).
        k: The k.
        tasks: Shared tasks used.
        excluded: Tasks not shared by all agents with n >= k.
        n_resamples: Bootstrap resamples.
        seed: The seed used.
    """

    agents: tuple[str, ...]
    values: tuple[float, ...]
    p_first: tuple[float, ...]
    k: int
    tasks: int
    excluded: int
    n_resamples: int
    seed: int


def per_task_reliability(table: CountTable, agents: Sequence[str], k: int
                         ) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Per-task reliability@k of ``agents`` on the tasks they all ran >= k times.

    Returns:
        ``(values, shared)``: values of shape (shared tasks, agents) and the mask of shared
        tasks over ``table.tasks``.
    """
    cols = [table.agents.index(a) for a in agents]
    n = table.n[:, cols]
    c = table.c[:, cols]
    shared = np.all(n >= k, axis=1)
    values = pass_at_k(n[shared], c[shared], k) if shared.any() else np.zeros((0, len(cols)))
    return np.asarray(values, dtype=np.float64).reshape(int(shared.sum()), len(cols)), shared


def _check_common(k: int, n_resamples: int, confidence: float) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be an integer >= 1, got {k!r}")
    if n_resamples < 1:
        raise InvalidArgumentError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence!r}")


def _table(records: Iterable[Rollout] | CountTable) -> CountTable:
    return records if isinstance(records, CountTable) else count_pairs(records)


def compare_agents(
    records: Iterable[Rollout] | CountTable,
    agent_a: str,
    agent_b: str,
    k: int = 1,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Paired difference in reliability@k of two agents, with bootstrap CI and permutation p.

    Args:
        records: Rollout records, or their ``CountTable``.
        agent_a: First agent.
        agent_b: Second agent (the difference is A - B).
        k: The k of reliability@k.
        n_resamples: Bootstrap resamples, also the number of sign-flip permutations.
        confidence: Confidence level of the CI.
        seed: Seed of both resampling schemes.

    Returns:
        A ``PairedComparison``.

    Raises:
        InvalidArgumentError: unknown or identical agents, bad k / resamples / confidence,
            or no shared task with n >= k.

    Examples:
        >>> from reliabench.records import Rollout
        >>> recs = [Rollout(task_id=f"t{t}", agent=a, rollout=i, verdict=(a == "A" or i == 0))
        ...         for t in range(8) for a in "AB" for i in range(4)]
        >>> r = compare_agents(recs, "A", "B", k=1, n_resamples=500)
        >>> r.difference, r.tasks, r.p_value < 0.05
        (0.75, 8, True)
    """
    _check_common(k, n_resamples, confidence)
    table = _table(records)
    for name in (agent_a, agent_b):
        if name not in table.agents:
            raise InvalidArgumentError(f"no agent {name!r}; the data has {', '.join(table.agents)}")
    if agent_a == agent_b:
        raise InvalidArgumentError(f"agent_a and agent_b must differ, got {agent_a!r} twice")
    values, shared = per_task_reliability(table, (agent_a, agent_b), k)
    t = values.shape[0]
    if t == 0:
        raise InvalidArgumentError(
            f"no task where both {agent_a!r} and {agent_b!r} have at least k={k} rollouts")
    d = values[:, 0] - values[:, 1]
    observed = float(d.mean())
    rng = np.random.default_rng(seed)
    w = resample_weights(t, n_resamples, rng)
    boot = (w @ d) / t
    alpha = 1.0 - confidence
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    p = float(sign_flip_p_values(d, n_resamples, rng, batch=n_resamples)[0])
    return PairedComparison(
        agent_a=agent_a, agent_b=agent_b, k=k, tasks=t, excluded=int((~shared).sum()),
        value_a=float(values[:, 0].mean()), value_b=float(values[:, 1].mean()),
        difference=observed, ci_low=float(low), ci_high=float(high), p_value=float(min(p, 1.0)),
        confidence=confidence, n_resamples=n_resamples, seed=seed,
        wins=int((d > 0).sum()), losses=int((d < 0).sum()),
    )


def rank_first(
    records: Iterable[Rollout] | CountTable,
    k: int = 1,
    *,
    agents: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    batch: int = 2_000,
) -> RankFirst:
    """Probability (bootstrap share over tasks) that each agent has the highest reliability@k.

    Args:
        records: Rollout records, or their ``CountTable``.
        k: The k of reliability@k.
        agents: Agents to rank (default: all; at least 2).
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling.
        batch: Resamples per matrix product (bounds memory).

    Returns:
        A ``RankFirst`` with agents sorted by their mean, highest first.

    Raises:
        InvalidArgumentError: fewer than 2 agents, unknown agents, or no shared task.

    Examples:
        >>> from reliabench.records import Rollout
        >>> recs = [Rollout(task_id=f"t{t}", agent=a, rollout=i, verdict=(a == "A" or i == 0))
        ...         for t in range(8) for a in "AB" for i in range(4)]
        >>> rank_first(recs, n_resamples=200).p_first
        (1.0, 0.0)
    """
    _check_common(k, n_resamples, 0.5)
    table = _table(records)
    names = tuple(table.agents if agents is None else agents)
    if len(set(names)) < 2:
        raise InvalidArgumentError(f"rank_first needs at least 2 agents, got {list(names)!r}")
    for name in names:
        if name not in table.agents:
            raise InvalidArgumentError(f"no agent {name!r}; the data has {', '.join(table.agents)}")
    values, shared = per_task_reliability(table, names, k)
    t = values.shape[0]
    if t == 0:
        raise InvalidArgumentError(f"no task where all of {', '.join(names)} have at least k={k} rollouts")
    rng = np.random.default_rng(seed)
    first = np.zeros(len(names))
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        means = resample_weights(t, size, rng) @ values / t  # (size, agents)
        top = means.max(axis=1, keepdims=True)
        is_top = np.isclose(means, top, rtol=0.0, atol=1e-12)
        first += (is_top / is_top.sum(axis=1, keepdims=True)).sum(axis=0)
    point = values.mean(axis=0)
    order = np.argsort(-point, kind="stable")
    return RankFirst(
        agents=tuple(names[i] for i in order),
        values=tuple(float(point[i]) for i in order),
        p_first=tuple(float(first[i] / n_resamples) for i in order),
        k=k, tasks=t, excluded=int((~shared).sum()), n_resamples=n_resamples, seed=seed,
    )
