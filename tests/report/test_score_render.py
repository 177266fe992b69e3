"""score's output (reliabench.report.score_render): the figures, then the run's sections, per format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import add_flaky_retests, copy_run, make_adaptive

from reliabench.errors import InvalidArgumentError
from reliabench.report.adaptive_tables import score_adaptive_lines
from reliabench.report.noise_tables import score_noise_lines
from reliabench.report.score_render import (
    render_score,
    render_score_result,
    score_result_to_json,
    score_to_json,
)
from reliabench.runs import RunDirectory
from reliabench.studies.scoring import ScoreResult, score_result


@pytest.fixture
def result(tmp_path: Path) -> ScoreResult:
    run_dir = copy_run(tmp_path)
    add_flaky_retests(run_dir)
    make_adaptive(run_dir)
    with RunDirectory.open(run_dir) as run:
        return score_result(run.records(), [1, 2], n_resamples=20, retests=run.retests(),
                            adaptive=run.adaptive())


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_text_formats_are_the_figures_then_each_section(result: ScoreResult, fmt: str) -> None:
    assert result.noise is not None and result.adaptive is not None
    expected = (render_score(result.report, fmt) + "\n".join(score_noise_lines(result.noise)) + "\n"
                + "\n".join(score_adaptive_lines(result.adaptive, result.report.counts.simulated)) + "\n")
    assert render_score_result(result, fmt) == expected


def test_json_is_one_document_built_once(result: ScoreResult) -> None:
    doc = json.loads(render_score_result(result, "json"))
    assert doc == json.loads(json.dumps(score_result_to_json(result)))
    assert list(doc) == ["agents", "settings", "notes", "harness_noise", "flaky_policy", "adaptive"]
    assert {k: doc[k] for k in ("agents", "settings", "notes")} == json.loads(json.dumps(score_to_json(result.report)))


def test_csv_is_the_figures_alone(result: ScoreResult) -> None:
    assert render_score_result(result, "csv") == render_score(result.report, "csv")
    with pytest.raises(InvalidArgumentError, match="format must be one of table, json, csv, markdown"):
        render_score_result(result, "yaml")
