"""Everything ``reliabench score`` shows, computed: the score and its sections, typed.

:func:`score_result` computes, from a source's records and what its run keeps beside them,
the :class:`ScoreResult`: the per-agent figures (:class:`~reliabench.metrics.analysis.ScoreReport`,
with costs), the harness-noise section of a run with re-tests
(:class:`~reliabench.studies.noise.ScoreNoise`, the flaky-test policy applied), the
estimates at the stop of a finished adaptive run
(:class:`~reliabench.studies.adaptive_score.AdaptiveScore`) and, for repository tasks, macro vs
strict with SWE-bench's resolutions (:class:`~reliabench.studies.resolution.ResolutionSection`).
:func:`page_figures` computes the parts the HTML report adds (:class:`PageFigures`: rank
intervals, reliability@k for every k, the single-rollout proxy, cost against reliability).
:func:`group_scores` computes the figures per group of tasks (:class:`GroupScores`: by language
or by tag, ``score --by``), each group scored on its own tasks, with bootstrap intervals over
them. ``reliabench.report`` renders them in each format; it computes none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import COARSE_OUTCOMES
from reliabench.metrics.analysis import ScoreReport, reliability_curve_scores, score
from reliabench.metrics.costs import CostPoints, cost_points
from reliabench.metrics.security import DEFAULT_THRESHOLD, FindingFilter, SecurityThreshold
from reliabench.records import Rollout
from reliabench.store import RetestRow
from reliabench.studies.adaptive_score import AdaptiveScore, AdaptiveState, adaptive_score
from reliabench.studies.noise import ScoreNoise, score_noise
from reliabench.studies.proxy_validity import ProxyPoints, proxy_points
from reliabench.studies.rank import RankOutcome, rank_for_report
from reliabench.studies.resolution import ResolutionSection, resolution_section

__all__ = ["GROUP_BY", "GroupScore", "GroupScores", "PageFigures", "ScoreResult", "TaskLabels",
           "group_scores", "page_figures", "score_result"]

GROUP_BY: Final = ("language", "tag")
"""What tasks can be grouped by: their ``language``, or each of their ``tags`` (a task in every
group it is tagged with)."""


@dataclass(frozen=True, slots=True)
class TaskLabels:
    """What a task is labelled with (``task.toml``'s ``language`` and ``tags``), as a run keeps them.

    Attributes:
        language: The task's language.
        tags: Its tags.
    """

    language: str
    tags: tuple[str, ...] = ()

    def groups(self, by: str) -> tuple[str, ...]:
        """The groups of this task when grouping ``by`` (see :data:`GROUP_BY`).

        Example:
            >>> TaskLabels("go", ("go", "aider-polyglot")).groups("tag")
            ('go', 'aider-polyglot')
        """
        return (self.language,) if by == "language" else self.tags


@dataclass(frozen=True)
class GroupScore:
    """The figures of one group of tasks.

    Attributes:
        group: The group (a language, or a tag).
        tasks: Its tasks that have records, sorted.
        coarse_tasks: Of them, the tasks whose records have one outcome per rollout (a test
            command's exit code or a reward: ``meta.coarse_outcomes``); the per-test figures
            (misapplied pass@k, the macro test pass rate) leave them out.
        report: Every figure, per agent, over this group's tasks (CIs over them).
    """

    group: str
    tasks: tuple[str, ...]
    coarse_tasks: int
    report: ScoreReport


@dataclass(frozen=True)
class GroupScores:
    """The figures per group of tasks (``score --by``).

    Attributes:
        by: ``language`` or ``tag``.
        groups: One per group with records, by name.
        unlabelled: Tasks with records but no label (in no group), sorted.
    """

    by: str
    groups: tuple[GroupScore, ...]
    unlabelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScoreResult:
    """What ``reliabench score`` reports.

    Attributes:
        report: Per-agent figures over the scored records (the records re-judged by the
            flaky-test policy, when there is one), costs included.
        records: The records scored.
        noise: The harness-noise section (a run with re-tests), else None.
        adaptive: The estimates at the stop (a finished adaptive run), else None.
        groups: The figures per group of tasks (``score --by``), else None.
        repository: Macro vs strict on repository tasks (records that carry SWE-bench's
            verdict), else None.
    """

    report: ScoreReport
    records: tuple[Rollout, ...]
    noise: ScoreNoise | None = None
    adaptive: AdaptiveScore | None = None
    groups: GroupScores | None = None
    repository: ResolutionSection | None = None


@dataclass(frozen=True)
class PageFigures:
    """What the HTML report shows beyond the score's tables.

    Attributes:
        ranking: Rank intervals at the first k (None with fewer than two agents or no resamples).
        curve: reliability@k for every k up to the largest n (None without rollouts).
        proxy: The single-rollout proxy against reliability@k per pair (None: nothing to plot).
        costs: Per agent, mean time, tokens and USD per rollout, and per-phase means.
    """

    ranking: RankOutcome | None
    curve: ScoreReport | None
    proxy: ProxyPoints | None
    costs: CostPoints


def score_result(
    records: Sequence[Rollout],
    ks: Sequence[int],
    *,
    threshold: SecurityThreshold = DEFAULT_THRESHOLD,
    finding_filter: FindingFilter | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    retests: Sequence[RetestRow] = (),
    adaptive: AdaptiveState | None = None,
    exclude_flaky_tests: bool = False,
    flaky_verdict: str = "original",
    source: str = "the run",
    labels: Mapping[str, TaskLabels] | None = None,
    by: str | None = None,
) -> ScoreResult:
    """Score ``records`` with the sections their run supports.

    Args:
        records: The records of the source.
        ks: The k values.
        threshold: The security threshold.
        finding_filter: The security policy's allow and deny lists.
        confidence: The level of the bootstrap intervals.
        n_resamples: Bootstrap resamples over tasks (0: no intervals).
        seed: The bootstrap seed.
        retests: The run's re-tests (the noise section, and the flaky-test policy's evidence).
        adaptive: The run's adaptive state (the estimates at the stop).
        exclude_flaky_tests: Leave out tests whose outcome changed on identical code.
        flaky_verdict: ``original``, or ``majority`` to judge a flipping rollout by its runs.
        source: The source's name, for messages.
        labels: Each task's labels (a run's :meth:`~reliabench.runs.RunDirectory.task_labels`),
            for ``by``.
        by: Also score each group of tasks (``language`` or ``tag``): :func:`group_scores`.

    Raises:
        UsageError: a flaky-test policy was asked for, but there is no usable re-test.
        InvalidArgumentError: ``by`` is given without ``labels``, or is not a grouping.
    """
    noise = score_noise(records, retests, exclude_flaky_tests=exclude_flaky_tests,
                        flaky_verdict=flaky_verdict, source=source)
    scored = tuple(noise.records) if noise is not None else tuple(records)
    report = score(scored, ks, threshold=threshold, finding_filter=finding_filter,
                   confidence=confidence, n_resamples=n_resamples, seed=seed)
    est = adaptive_score(scored, adaptive) if adaptive is not None else None
    groups = None
    if by is not None:
        if labels is None:
            raise InvalidArgumentError(f"grouping by {by} needs each task's labels")
        groups = group_scores(scored, labels, by, ks, threshold=threshold, finding_filter=finding_filter,
                              confidence=confidence, n_resamples=n_resamples, seed=seed)
    repository = resolution_section(scored, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return ScoreResult(report, scored, noise, est, groups=groups, repository=repository)


def group_scores(
    records: Sequence[Rollout],
    labels: Mapping[str, TaskLabels],
    by: str,
    ks: Sequence[int],
    *,
    threshold: SecurityThreshold = DEFAULT_THRESHOLD,
    finding_filter: FindingFilter | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> GroupScores:
    """Every figure per group of tasks: each group's records scored alone (``metrics.analysis.score``).

    A group's figures are means over ITS tasks, with percentile-bootstrap intervals over its
    tasks (the same seed for every group). A task is in the group of its language, or in
    the group of each of its tags; a task without labels is in none (``unlabelled``).

    Args:
        records: The records (already judged as the score is: the flaky-test policy applied).
        labels: Task id -> its labels.
        by: ``language`` or ``tag``.
        ks: The k values.
        threshold: The security threshold.
        finding_filter: The security policy's allow and deny lists.
        confidence: The level of the intervals.
        n_resamples: Bootstrap resamples over tasks (0: no intervals).
        seed: The bootstrap seed.

    Raises:
        InvalidArgumentError: ``by`` is not one of :data:`GROUP_BY`.

    Example:
        >>> recs = [Rollout("t1", "a", i, verdict=i == 0) for i in range(2)]
        >>> recs.append(Rollout("t2", "a", 0, verdict=True))
        >>> labels = {"t1": TaskLabels("go"), "t2": TaskLabels("rust")}
        >>> g = group_scores(recs, labels, "language", [1], n_resamples=0)
        >>> [(x.group, x.report.agents[0].metrics["reliability@1"].value) for x in g.groups]
        [('go', 0.5), ('rust', 1.0)]
    """
    if by not in GROUP_BY:
        raise InvalidArgumentError(f"by must be one of {', '.join(GROUP_BY)}, got {by!r}")
    members: dict[str, set[str]] = {}
    unlabelled: set[str] = set()
    for r in records:
        found = labels.get(r.task_id)
        if found is None or not found.groups(by):
            unlabelled.add(r.task_id)
            continue
        for group in found.groups(by):
            members.setdefault(group, set()).add(r.task_id)
    coarse = {r.task_id for r in records if r.meta.get(COARSE_OUTCOMES)}
    out = []
    for group in sorted(members):
        tasks = members[group]
        report = score([r for r in records if r.task_id in tasks], ks, threshold=threshold,
                       finding_filter=finding_filter, confidence=confidence, n_resamples=n_resamples,
                       seed=seed)
        out.append(GroupScore(group, tuple(sorted(tasks)), len(tasks & coarse), report))
    return GroupScores(by, tuple(out), tuple(sorted(unlabelled)))


def page_figures(report: ScoreReport, records: Sequence[Rollout]) -> PageFigures:
    """The HTML report's added figures of ``report`` (computed from ``records``)."""
    return PageFigures(rank_for_report(report), reliability_curve_scores(report),
                       proxy_points(report, report.ks[0]),
                       cost_points(records, [a.agent for a in report.agents]))
