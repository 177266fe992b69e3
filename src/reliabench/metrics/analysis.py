"""From rollout records to per-(task, agent) counts to per-agent metric tables.

This module is the only place where success rules meet estimators:

* a rollout is *eligible* unless its status is ``infra_error`` (the infrastructure failed,
  not the agent); infra errors are excluded from n and counted in the report;
* a rollout *passes* per ``Rollout.passes`` (completed, every functional hidden test passed,
  at least one ran -- or a harness verdict of true);
* a rollout is *secure* when it passes and ``security.judge_security`` finds it clean;
* the *first* rollout of a (task, agent) pair is its eligible rollout with the lowest index:
  what a single-submission harness would have scored;
* a rollout with *coarse* outcomes (``meta.coarse_outcomes``: one outcome per rollout, from a
  test command's exit code or a reward, not one per test) has no per-test count: the figures
  that need one (misapplied pass@k, the macro test pass rate) leave its task out, and a note
  says so (:func:`coarse_notes`).

Per (task, agent): n = eligible rollouts, c = passing ones, c_secure = passing and secure.
Per agent, each figure is the mean over tasks of a per-task value, with a bootstrap CI over
tasks (``stats.bootstrap_task_means``). A task whose n is smaller than k has no defined
reliability@k; it is left out of that mean and counted in ``Estimate.excluded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import COARSE_OUTCOMES
from reliabench.metrics.arrays import FloatArray, IntArray
from reliabench.metrics.costs import AgentCost, cost_summary
from reliabench.metrics.estimators import misapplied_pass_at_k, pass_at_k, pass_hat_k
from reliabench.metrics.security import (
    DEFAULT_THRESHOLD,
    FindingFilter,
    SecurityThreshold,
    has_security_data,
    judge_security,
)
from reliabench.metrics.stats import bootstrap_task_means
from reliabench.records import Rollout

__all__ = [
    "AgentSummary",
    "CountTable",
    "Estimate",
    "RankingChange",
    "ScoreReport",
    "HOST_VIEW_ISOLATIONS",
    "coarse_notes",
    "count_pairs",
    "host_view_notes",
    "metric_names",
    "parse_ks",
    "ranking_change",
    "reliability_curve_scores",
    "score",
    "score_counts",
]

CURVE_MAX_POINTS = 40
"""At most this many k values in :func:`reliability_curve_scores` (the ends and an even spread)."""



@dataclass(frozen=True)
class CountTable:
    """Counts per (task, agent), as arrays of shape (tasks, agents).

    Attributes:
        tasks: Task ids (rows), sorted.
        agents: Agent names (columns), sorted.
        n: Eligible rollouts (0 where the agent never ran the task).
        c: Passing rollouts.
        c_secure: Passing and secure rollouts (equal to ``c`` when ``secure_known`` is False).
        infra_errors: Rollouts lost to infrastructure failures (not in n).
        first_total: Functional tests of the first rollout (-1 when unknown).
        first_passed: Functional tests it passed (-1 when unknown).
        first_pass: Whether the first rollout passes.
        passing_insecure: Passing rollouts that are not secure.
        simulated: Agents any of whose rollouts were simulated.
        secure_known: Whether any record carries security data (findings, scan errors,
            security tests, or a scan marker).
        cwe_counts: Per agent, findings at or above the threshold by CWE (eligible rollouts).
        lens_counts: Per agent, passing but insecure rollouts by the lenses that flagged them
            (``scanner``, ``security_test``, ``scan_error``, joined with ``+``).
    """

    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    n: IntArray
    c: IntArray
    c_secure: IntArray
    infra_errors: IntArray
    first_total: IntArray
    first_passed: IntArray
    first_pass: npt.NDArray[np.bool_]
    simulated: frozenset[str]
    secure_known: bool
    cwe_counts: dict[str, dict[int | None, int]] = field(default_factory=dict)
    lens_counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Pairs with at least one eligible rollout."""
        return self.n > 0


def count_pairs(
    records: Iterable[Rollout],
    *,
    threshold: SecurityThreshold = DEFAULT_THRESHOLD,
    finding_filter: FindingFilter | None = None,
) -> CountTable:
    """Reduce rollout records to per-(task, agent) counts.

    Raises:
        InvalidArgumentError: if no records are given.
    """
    recs = list(records)
    if not recs:
        raise InvalidArgumentError("records is empty: there is nothing to score")
    tasks = tuple(sorted({r.task_id for r in recs}))
    agents = tuple(sorted({r.agent for r in recs}))
    ti = {t: i for i, t in enumerate(tasks)}
    ai = {a: i for i, a in enumerate(agents)}
    shape = (len(tasks), len(agents))
    n = np.zeros(shape, np.int64)
    c = np.zeros(shape, np.int64)
    c_sec = np.zeros(shape, np.int64)
    infra = np.zeros(shape, np.int64)
    first_idx = np.full(shape, np.iinfo(np.int64).max, np.int64)
    first_total = np.full(shape, -1, np.int64)
    first_passed = np.full(shape, -1, np.int64)
    first_pass = np.zeros(shape, bool)
    secure_known = has_security_data(recs)
    simulated = frozenset(r.agent for r in recs if r.simulated)
    cwe_counts: dict[str, dict[int | None, int]] = {a: {} for a in agents}
    lens_counts: dict[str, dict[str, int]] = {a: {} for a in agents}
    for r in recs:
        i, j = ti[r.task_id], ai[r.agent]
        if r.status == "infra_error":
            infra[i, j] += 1
            continue
        n[i, j] += 1
        ok = r.passes
        if ok:
            c[i, j] += 1
        if secure_known:
            verdict = judge_security(r, threshold, finding_filter)
            for f in verdict.static:
                cwe_counts[r.agent][f.cwe] = cwe_counts[r.agent].get(f.cwe, 0) + 1
            if ok and verdict.secure:
                c_sec[i, j] += 1
            elif ok:
                lens = "+".join(verdict.lenses)
                lens_counts[r.agent][lens] = lens_counts[r.agent].get(lens, 0) + 1
        elif ok:
            c_sec[i, j] += 1
        if r.rollout < first_idx[i, j]:
            first_idx[i, j] = r.rollout
            first_pass[i, j] = ok
            total, passed = r.n_tests, r.n_tests_passed
            if r.meta.get(COARSE_OUTCOMES):  # one outcome per rollout: no per-test count
                total = passed = None
            first_total[i, j] = -1 if total is None else total
            first_passed[i, j] = -1 if passed is None else passed
    return CountTable(tasks, agents, n, c, c_sec, infra, first_total, first_passed, first_pass,
                      simulated, secure_known, cwe_counts, lens_counts)


def parse_ks(text: str | Sequence[int]) -> tuple[int, ...]:
    """Parse ``"1,5,10"`` (or a sequence) into sorted unique ks >= 1.

    Examples:
        >>> parse_ks("10, 1,5")
        (1, 5, 10)
    """
    items = [s.strip() for s in text.split(",")] if isinstance(text, str) else list(text)
    ks: set[int] = set()
    for item in items:
        try:
            k = int(item)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"k must be an integer >= 1, got {item!r}") from None
        if k < 1 or (isinstance(item, float) and item != k):
            raise InvalidArgumentError(f"k must be an integer >= 1, got {item!r}")
        ks.add(k)
    if not ks:
        raise InvalidArgumentError("k: give at least one value, e.g. 1,5,10")
    return tuple(sorted(ks))


def metric_names(ks: Sequence[int], *, security: bool) -> list[str]:
    """The metric keys of a score report, in display order."""
    names: list[str] = []
    for k in ks:
        names += [f"reliability@{k}", f"pass^{k}", f"misapplied_pass@{k}", f"inflation@{k}"]
    names += ["macro_test_pass_rate", "strict_resolution_rate"]
    if security:
        names += [f"security_adjusted_reliability@{k}" for k in ks]
        names += ["insecure_share_of_passing"]
    return names


@dataclass(frozen=True, slots=True)
class Estimate:
    """One figure with its bootstrap interval.

    Attributes:
        value: Mean over tasks with a defined value (NaN if none).
        ci_low: Lower bound of the confidence interval.
        ci_high: Upper bound.
        tasks: Tasks that contributed.
        excluded: Tasks of this agent where the figure is undefined (e.g. k > n, or
            tests unknown for the misapplied figure).
    """

    value: float
    ci_low: float
    ci_high: float
    tasks: int
    excluded: int = 0


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """All figures of one agent."""

    agent: str
    simulated: bool
    tasks: int
    rollouts: int
    infra_errors: int
    min_n: int
    max_n: int
    metrics: dict[str, Estimate]


@dataclass(frozen=True, slots=True)
class ScoreReport:
    """What ``score`` computed, with the settings that produced it.

    ``costs`` (cost and time per agent, :mod:`reliabench.metrics.costs`) is filled by :func:`score`;
    a report made from counts alone has none. ``notes`` say what limits the figures; which
    agents are simulated is in ``counts.simulated`` (and each ``AgentSummary.simulated``):
    the renderers write the mark and its note (:mod:`reliabench.report.marks`).
    """

    agents: tuple[AgentSummary, ...]
    ks: tuple[int, ...]
    metric_names: tuple[str, ...]
    security: bool
    threshold: SecurityThreshold
    confidence: float
    n_resamples: int
    seed: int
    notes: tuple[str, ...]
    counts: CountTable
    costs: tuple[AgentCost, ...] = ()


def _per_task_columns(
    t: CountTable, ks: Sequence[int], names: Sequence[str]
) -> FloatArray:
    """Per-task values, shape (tasks, agents, metrics), NaN where undefined."""
    present = t.present
    out = np.full((*t.n.shape, len(names)), np.nan)
    col = {name: i for i, name in enumerate(names)}
    tests_known = present & (t.first_total > 0)
    frac = np.full(t.n.shape, np.nan)
    frac[tests_known] = t.first_passed[tests_known] / t.first_total[tests_known]
    for k in ks:
        ok = present & (t.n >= k)
        rel = np.full(t.n.shape, np.nan)
        rel[ok] = pass_at_k(t.n[ok], t.c[ok], k)
        hat = np.full(t.n.shape, np.nan)
        hat[ok] = pass_hat_k(t.n[ok], t.c[ok], k)
        mis_ok = tests_known & (t.first_total >= k)
        mis = np.full(t.n.shape, np.nan)
        mis[mis_ok] = misapplied_pass_at_k(t.first_total[mis_ok], t.first_passed[mis_ok], k)
        out[..., col[f"reliability@{k}"]] = rel
        out[..., col[f"pass^{k}"]] = hat
        out[..., col[f"misapplied_pass@{k}"]] = mis
        out[..., col[f"inflation@{k}"]] = mis - rel
        if f"security_adjusted_reliability@{k}" in col:
            sec = np.full(t.n.shape, np.nan)
            sec[ok] = pass_at_k(t.n[ok], t.c_secure[ok], k)
            out[..., col[f"security_adjusted_reliability@{k}"]] = sec
    out[..., col["macro_test_pass_rate"]] = frac
    out[..., col["strict_resolution_rate"]] = np.where(present, t.first_pass.astype(float), np.nan)
    if "insecure_share_of_passing" in col:
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(t.c > 0, (t.c - t.c_secure) / np.maximum(t.c, 1), np.nan)
        out[..., col["insecure_share_of_passing"]] = share
    return out


def score(
    records: Iterable[Rollout],
    ks: Sequence[int] = (1,),
    *,
    threshold: SecurityThreshold = DEFAULT_THRESHOLD,
    finding_filter: FindingFilter | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> ScoreReport:
    """Compute every figure for every agent, with bootstrap CIs over tasks.

    ``insecure_share_of_passing`` is the mean over tasks (with at least one passing rollout)
    of the share of passing rollouts that are not secure.

    Args:
        records: Rollout records (from a file, a run, an importer or the simulator).
        ks: The k values (each >= 1).
        threshold: Security threshold for the security-adjusted figures.
        finding_filter: Allow/deny lists applied before the threshold.
        confidence: Confidence level of the intervals.
        n_resamples: Bootstrap resamples (0 disables the intervals).
        seed: Bootstrap seed: the same inputs and seed give the same intervals.

    Returns:
        A ``ScoreReport``.
    """
    records = list(records)
    table = count_pairs(records, threshold=threshold, finding_filter=finding_filter)
    report = score_counts(table, ks, threshold=threshold, confidence=confidence,
                          n_resamples=n_resamples, seed=seed)
    return replace(report, costs=cost_summary(records),
                   notes=report.notes + coarse_notes(records) + host_view_notes(records))


def coarse_notes(records: Iterable[Rollout]) -> tuple[str, ...]:
    """One note per agent with tasks whose outcomes are coarse (one per rollout, not per test).

    Example:
        >>> r = Rollout("t", "a", 0, verdict=True, meta={"coarse_outcomes": True})
        >>> coarse_notes([r, Rollout("u", "a", 0, verdict=True)])[0][:44]
        'a: 1 of 2 task(s) have coarse outcomes (one '
    """
    seen: dict[str, tuple[set[str], set[str]]] = {}
    for r in records:
        coarse, every = seen.setdefault(r.agent, (set(), set()))
        every.add(r.task_id)
        if r.meta.get(COARSE_OUTCOMES):
            coarse.add(r.task_id)
    return tuple(
        f"{agent}: {len(coarse)} of {len(every)} task(s) have coarse outcomes (one per rollout: a test "
        "command's exit code or a reward, not one per test): the misapplied pass@k and the macro test "
        "pass rate leave them out"
        for agent, (coarse, every) in sorted(seen.items()) if coarse
    )


HOST_VIEW_ISOLATIONS: frozenset[str] = frozenset({"namespaces", "none"})
"""Sandbox levels with no private file-system view (docs/threat-model.md, isolation levels)."""


def host_view_notes(records: Iterable[Rollout]) -> tuple[str, ...]:
    """One note per agent whose agent phase could read the host's world-readable files.

    Under ``namespaces`` and ``none`` the agent phase sees the host's file system, so an agent
    can copy a task's reference solution or read its hidden tests from any world-readable copy
    (an installed package, another checkout). Its passes cannot rule out copying; the note says
    how many rollouts that concerns. The agent phase's level is ``meta["isolation"]`` (written by
    the ``command`` kind); records without it (imports, in-process agents) are not counted.

    Example:
        >>> r = Rollout("t", "a", 0, verdict=True, meta={"isolation": "namespaces"})
        >>> host_view_notes([r, Rollout("t", "a", 1, verdict=True)])[0][:40]
        'a: the agent phase of 1 of 2 rollout(s) '
    """
    seen: dict[str, list[int]] = {}
    for r in records:
        counts = seen.setdefault(r.agent, [0, 0])
        counts[1] += 1
        if str(r.meta.get("isolation", "")) in HOST_VIEW_ISOLATIONS:
            counts[0] += 1
    return tuple(
        f"{agent}: the agent phase of {weak} of {total} rollout(s) ran with no private "
        "file-system view (namespaces or none): it could read world-readable host files, a "
        "task's reference solution and hidden tests included, so its passes cannot rule out "
        "copying (use bubblewrap)"
        for agent, (weak, total) in sorted(seen.items()) if weak
    )


def score_counts(
    table: CountTable,
    ks: Sequence[int] = (1,),
    *,
    threshold: SecurityThreshold = DEFAULT_THRESHOLD,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> ScoreReport:
    """``score`` from an already built ``CountTable`` (e.g. made directly by the simulator).

    ``threshold`` is only recorded in the report: the table's ``c_secure`` already applies it.
    """
    ks_t = parse_ks(list(ks))
    names = metric_names(ks_t, security=table.secure_known)
    per_task = _per_task_columns(table, ks_t, names)
    n_tasks, n_agents, n_metrics = per_task.shape
    ci = bootstrap_task_means(per_task.reshape(n_tasks, n_agents * n_metrics),
                              n_resamples=n_resamples, confidence=confidence, seed=seed)
    value = ci.value.reshape(n_agents, n_metrics)
    low = ci.low.reshape(n_agents, n_metrics)
    high = ci.high.reshape(n_agents, n_metrics)
    used = ci.tasks.reshape(n_agents, n_metrics)
    summaries = []
    notes: list[str] = []
    for j, agent in enumerate(table.agents):
        present = table.present[:, j]
        n_present = int(present.sum())
        ns = table.n[present, j]
        metrics = {
            name: Estimate(float(value[j, m]), float(low[j, m]), float(high[j, m]),
                           int(used[j, m]), n_present - int(used[j, m]))
            for m, name in enumerate(names)
        }
        summaries.append(AgentSummary(
            agent=agent,
            simulated=agent in table.simulated,
            tasks=n_present,
            rollouts=int(ns.sum()),
            infra_errors=int(table.infra_errors[:, j].sum()),
            min_n=int(ns.min()) if ns.size else 0,
            max_n=int(ns.max()) if ns.size else 0,
            metrics=metrics,
        ))
        if ns.size and ns.min() != ns.max():
            notes.append(f"{agent}: ragged n (rollouts per task from {ns.min()} to {ns.max()}); "
                         "each task uses its own n")
        for k in ks_t:
            short = int((ns < k).sum())
            if short:
                notes.append(f"{agent}: {short} of {n_present} task(s) have fewer than k={k} "
                             f"rollouts; reliability@{k} and pass^{k} leave them out")
        missing = len(table.tasks) - n_present
        if missing:
            notes.append(f"{agent}: no rollouts on {missing} of {len(table.tasks)} task(s)")
        if summaries[-1].infra_errors:
            notes.append(f"{agent}: {summaries[-1].infra_errors} rollout(s) lost to "
                         "infrastructure errors, excluded from n")
    return ScoreReport(
        agents=tuple(summaries), ks=ks_t, metric_names=tuple(names),
        security=table.secure_known, threshold=threshold, confidence=confidence,
        n_resamples=n_resamples, seed=seed, notes=tuple(notes), counts=table,
    )


def reliability_curve_scores(report: ScoreReport) -> ScoreReport | None:
    """The report's counts scored at every k from 1 to the largest n (the report page's curve).

    At most :data:`CURVE_MAX_POINTS` k values (the ends and an even spread between), with at
    most 2,000 resamples; None when no pair has a rollout.
    """
    t = report.counts
    max_n = int(t.n.max()) if t.n.size else 0
    if max_n < 1:
        return None
    ks = list(range(1, max_n + 1))
    if len(ks) > CURVE_MAX_POINTS:  # keep the ends and an even spread between
        idx = np.unique(np.linspace(0, len(ks) - 1, CURVE_MAX_POINTS).round().astype(int))
        ks = [ks[i] for i in idx]
    return score_counts(t, ks, threshold=report.threshold, confidence=report.confidence,
                        n_resamples=min(report.n_resamples, 2_000), seed=report.seed)


@dataclass(frozen=True, slots=True)
class RankingChange:
    """How the agents' ranking moves from reliability@k to its security-adjusted form.

    Attributes:
        k: The k compared.
        kendall_tau: Kendall's tau-b between the two orderings (1 = unchanged); NaN with
            fewer than two agents or a constant column.
        swapped: Agent pairs ``(a, b)`` with a ahead of b on reliability@k and behind on
            security-adjusted reliability@k.
    """

    k: int
    kendall_tau: float
    swapped: tuple[tuple[str, str], ...]


def ranking_change(report: ScoreReport, k: int) -> RankingChange:
    """Compare the agent rankings by reliability@k and security-adjusted reliability@k.

    Raises:
        InvalidArgumentError: if the report has no security data or was not computed at k.
    """
    if not report.security:
        raise InvalidArgumentError("the records carry no security data: nothing to compare")
    if k not in report.ks:
        raise InvalidArgumentError(f"k={k} was not computed (have {list(report.ks)})")
    from scipy.stats import kendalltau

    rel = np.array([a.metrics[f"reliability@{k}"].value for a in report.agents])
    sec = np.array([a.metrics[f"security_adjusted_reliability@{k}"].value for a in report.agents])
    ok = ~(np.isnan(rel) | np.isnan(sec))
    tau = float("nan")
    if ok.sum() >= 2 and np.ptp(rel[ok]) > 0 and np.ptp(sec[ok]) > 0:
        tau = float(kendalltau(rel[ok], sec[ok]).statistic)
    names = [a.agent for a in report.agents]
    swapped = tuple(
        (names[i], names[j])
        for i in range(len(names)) for j in range(len(names))
        if ok[i] and ok[j] and rel[i] > rel[j] and sec[i] < sec[j]
    )
    return RankingChange(k, tau, swapped)
