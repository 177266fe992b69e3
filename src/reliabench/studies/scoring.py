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
``reliabench.report`` renders them in each format; it computes none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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

__all__ = ["PageFigures", "ScoreResult", "page_figures", "score_result"]


@dataclass(frozen=True)
class ScoreResult:
    """What ``reliabench score`` reports.

    Attributes:
        report: Per-agent figures over the scored records (the records re-judged by the
            flaky-test policy, when there is one), costs included.
        records: The records scored.
        noise: The harness-noise section (a run with re-tests), else None.
        adaptive: The estimates at the stop (a finished adaptive run), else None.
        repository: Macro vs strict on repository tasks (records that carry SWE-bench's
            verdict), else None.
    """

    report: ScoreReport
    records: tuple[Rollout, ...]
    noise: ScoreNoise | None = None
    adaptive: AdaptiveScore | None = None
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

    Raises:
        UsageError: a flaky-test policy was asked for, but there is no usable re-test.
    """
    noise = score_noise(records, retests, exclude_flaky_tests=exclude_flaky_tests,
                        flaky_verdict=flaky_verdict, source=source)
    scored = tuple(noise.records) if noise is not None else tuple(records)
    report = score(scored, ks, threshold=threshold, finding_filter=finding_filter,
                   confidence=confidence, n_resamples=n_resamples, seed=seed)
    est = adaptive_score(scored, adaptive) if adaptive is not None else None
    repository = resolution_section(scored, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return ScoreResult(report, scored, noise, est, repository)


def page_figures(report: ScoreReport, records: Sequence[Rollout]) -> PageFigures:
    """The HTML report's added figures of ``report`` (computed from ``records``)."""
    return PageFigures(rank_for_report(report), reliability_curve_scores(report),
                       proxy_points(report, report.ks[0]),
                       cost_points(records, [a.agent for a in report.agents]))
