"""Everything `score` shows, computed before anything is rendered (reliabench.studies.scoring)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import add_flaky_retests, copy_run, make_adaptive

from reliabench.errors import UsageError
from reliabench.metrics.analysis import score
from reliabench.records import Cost, Rollout
from reliabench.report.score_render import score_to_json
from reliabench.runs import RunDirectory
from reliabench.studies.scoring import page_figures, score_result


def test_a_plain_source_has_the_figures_alone() -> None:
    recs = [Rollout("t", "a", i, verdict=i % 2 == 0) for i in range(4)]
    result = score_result(recs, [1, 2], n_resamples=0)
    assert result.noise is None and result.adaptive is None
    assert score_to_json(result.report) == score_to_json(score(recs, [1, 2], n_resamples=0))
    assert result.records == tuple(recs)


def test_a_run_with_retests_and_an_adaptive_state(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    add_flaky_retests(run_dir)
    make_adaptive(run_dir)
    with RunDirectory.open(run_dir) as run:
        result = score_result(run.records(), [1], n_resamples=0, retests=run.retests(),
                              adaptive=run.adaptive())
        strict = score_result(run.records(), [1], n_resamples=0, retests=run.retests(),
                              exclude_flaky_tests=True)
    assert result.noise is not None and result.noise.report.flaky_rollouts == 1
    assert result.adaptive is not None and result.adaptive.rollouts == 2 * 2 * 3
    assert strict.noise is not None and strict.noise.policy.tests_removed > 0
    # the figures are computed over the re-judged records
    assert strict.records == strict.noise.records != result.records


def test_a_policy_needs_retests() -> None:
    recs = [Rollout("t", "a", 0, verdict=True)]
    with pytest.raises(UsageError, match="RUN: no re-tests recorded"):
        score_result(recs, [1], n_resamples=0, exclude_flaky_tests=True, source="RUN")
    with pytest.raises(UsageError, match="--flaky-verdict"):
        score_result(recs, [1], n_resamples=0, flaky_verdict="majority")


def test_page_figures_are_computed_here_not_in_the_renderer() -> None:
    recs = [Rollout(f"t{t}", a, i, tests_total=4, tests_passed=4 if (i + t) % 2 else 3,
                    cost=Cost(seconds=2.0 + i, tokens=0, usd=None))
            for t in range(3) for a in ("a", "b") for i in range(3)]
    rep = score(recs, [1], n_resamples=20)
    fig = page_figures(rep, recs)
    assert fig.ranking is not None and fig.ranking.ranking is not None
    assert fig.curve is not None and fig.curve.ks == (1, 2, 3)
    assert fig.proxy is not None and len(fig.proxy.points) == 6 and fig.proxy.k == 1
    a, _ = fig.costs.agents
    assert (a.agent, a.seconds, a.tokens, a.usd) == ("a", 3.0, None, None)  # zero tokens: unmetered
    assert not fig.costs.phases_recorded
    lone = score([Rollout("t", "a", 0, verdict=True)], [1], n_resamples=0)
    assert page_figures(lone, [Rollout("t", "a", 0, verdict=True)]).ranking is None  # one agent
