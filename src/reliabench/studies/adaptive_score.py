"""What a finished adaptive run reports at its stop, recomputed from its records and its state.

An adaptive run (``reliabench run --adaptive``) keeps its design, the n of every agent at each
round and its seed (:class:`AdaptiveState`, read from ``RUN/adaptive.json`` by
:class:`reliabench.runs.RunDirectory`). From them and the run's records,
:func:`adaptive_score` recomputes the Rao-Blackwellised estimates at the stop of
:mod:`reliabench.studies.adaptive_estimate`, so ``score`` quotes what the run printed and
follows any later re-judging of the records (``--exclude-flaky-tests``). :func:`counts_at` is
the one reduction of records to an adaptive look's counts: the run's rounds use it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reliabench.records import Rollout
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts
from reliabench.studies.adaptive_estimate import StopEstimates, stop_estimates

__all__ = ["AdaptiveScore", "AdaptiveState", "adaptive_score", "counts_at", "estimates_for_run"]


@dataclass(frozen=True, slots=True)
class AdaptiveState:
    """What an adaptive run keeps of itself (``RUN/adaptive.json``).

    Attributes:
        design: The design, fixed before the first round.
        history: The n of every agent at each round (the last: the stopping look, when finished).
        seed: The run seed (it seeds the reported estimate's orderings).
        tasks: How many tasks the design ran on (None when the document does not say).
        rollouts: Rollouts the design used.
        fixed_rollouts: Rollouts of the fixed-n design at ``max_n``.
        finished: Whether the run reached its stop.
    """

    design: AdaptiveDesign
    history: tuple[Mapping[str, int], ...]
    seed: int
    tasks: int | None
    rollouts: int
    fixed_rollouts: int
    finished: bool


@dataclass(frozen=True, slots=True)
class AdaptiveScore:
    """A finished adaptive run's design and its estimates at the stop (a part of ``score``).

    Attributes:
        design: The run's design.
        estimates: The estimates and intervals at the stop.
        rollouts: Rollouts the design used.
        fixed_rollouts: Rollouts of the fixed-n design at ``max_n``.
    """

    design: AdaptiveDesign
    estimates: StopEstimates
    rollouts: int
    fixed_rollouts: int


def counts_at(records: Sequence[Rollout], tasks: Sequence[str],
              now: Mapping[str, int]) -> dict[str, AgentCounts]:
    """Per agent, per-task counts among each task's first ``now[agent]`` rollouts (infra errors left out)."""
    index = {t: i for i, t in enumerate(tasks)}
    n = {a: np.zeros(len(tasks), np.int64) for a in now}
    c = {a: np.zeros(len(tasks), np.int64) for a in now}
    for r in records:
        if r.agent not in now or r.task_id not in index or r.rollout >= now[r.agent]:
            continue
        if r.status == "infra_error":
            continue
        n[r.agent][index[r.task_id]] += 1
        c[r.agent][index[r.task_id]] += r.passes
    return {a: AgentCounts(n[a], c[a]) for a in now}


def estimates_for_run(records: Sequence[Rollout], tasks: Sequence[str], design: AdaptiveDesign,
                      history: Sequence[Mapping[str, int]], seed: int) -> StopEstimates:
    """The estimates at the stop of a finished run: ``history`` ends at the stopping look."""
    return stop_estimates(design, history, [counts_at(records, tasks, h) for h in history], seed=seed)


def adaptive_score(records: Sequence[Rollout], state: AdaptiveState) -> AdaptiveScore | None:
    """The estimates at the stop of a finished adaptive run, else None.

    None too when ``records`` are a subset of the run's (fewer tasks than the design ran on):
    the design's statistic is then not available.
    """
    if not state.finished or not state.history:
        return None
    names = list(state.history[-1])
    tasks = sorted({r.task_id for r in records if r.agent in names})
    if len(tasks) != (len(tasks) if state.tasks is None else state.tasks):
        return None
    est = estimates_for_run(records, tasks, state.design, state.history, state.seed)
    return AdaptiveScore(state.design, est, state.rollouts, state.fixed_rollouts)
