"""Harness noise as text and JSON (reliabench.report.noise_tables): retest's report, score's section."""

from __future__ import annotations

import json
from pathlib import Path

from report_helpers import add_flaky_retests, copy_run

from reliabench.report.noise_tables import noise_to_json, render_noise, score_noise_json, score_noise_lines
from reliabench.report.score_render import render_score_result
from reliabench.runs import RunDirectory
from reliabench.studies.noise import ScoreNoise
from reliabench.studies.scoring import score_result


def _scored(tmp_path: Path, **policy: object) -> ScoreNoise:
    run_dir = copy_run(tmp_path)
    add_flaky_retests(run_dir)
    with RunDirectory.open(run_dir) as run:
        result = score_result(run.records(), [1], n_resamples=0, retests=run.retests(), **policy)  # type: ignore[arg-type]
    assert result.noise is not None
    return result.noise


def test_the_report_names_the_rate_the_flaky_test_and_the_split(tmp_path: Path) -> None:
    noise = _scored(tmp_path)
    text = render_noise(noise.report)
    assert text.startswith("harness noise: 1 of 12 re-tested rollout(s) flip their verdict")
    assert "flaky tests (1): outcome changed on identical code" in text
    assert "harness part (same code) vs agent part" in text
    doc = noise_to_json(noise.report)
    assert doc["flaky_rollouts"] == 1 and len(doc["rollouts"]) == 12
    assert doc["flaky_tests"][0]["evidence"] == "reference"


def test_scores_section_says_the_policy(tmp_path: Path) -> None:
    noise = _scored(tmp_path, exclude_flaky_tests=True)
    lines = score_noise_lines(noise)
    assert lines[:2] == ["", "== harness noise (identical code re-tested; apart from agent variance) =="]
    assert "flaky-test policy: exclude flaky tests = yes, flaky verdicts = original" in lines
    assert any(line.startswith("  --exclude-flaky-tests: 1 flaky test(s)") for line in lines)
    doc = score_noise_json(noise)
    assert set(doc) == {"harness_noise", "flaky_policy"} and "rollouts" not in doc["harness_noise"]
    assert doc["flaky_policy"]["exclude_flaky_tests"] is True and doc["flaky_policy"]["excluded_tests"] == 1


def test_scores_json_is_built_once_with_its_sections(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    add_flaky_retests(run_dir)
    with RunDirectory.open(run_dir) as run:
        result = score_result(run.records(), [1], n_resamples=0, retests=run.retests())
    doc = json.loads(render_score_result(result, "json"))
    assert list(doc) == ["agents", "settings", "notes", "harness_noise", "flaky_policy"]
    assert render_score_result(result, "csv").count("harness") == 0  # CSV: the figures alone
    assert "== harness noise" in render_score_result(result, "markdown")
