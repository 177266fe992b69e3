"""score's repository section rendered: table, Markdown and JSON; absent for other suites."""

from __future__ import annotations

import json

import pytest
from studies.test_resolution import RECORDS

from reliabench.errors import InvalidArgumentError
from reliabench.records import Rollout, TestOutcome
from reliabench.report.resolution_tables import render_resolution, resolution_html, resolution_to_json
from reliabench.report.score_render import render_score_result
from reliabench.studies.resolution import resolution_section
from reliabench.studies.scoring import score_result


def _section():  # type: ignore[no-untyped-def]
    sec = resolution_section(RECORDS, n_resamples=500, seed=1)
    assert sec is not None
    return sec


def test_table_has_a_row_per_agent_with_resolutions_and_intervals() -> None:
    text = render_resolution(_section(), "table", width=200)
    assert "macro hidden-test pass rate vs strict resolution" in text
    gold = next(line for line in text.splitlines() if line.strip().startswith("gold"))
    assert "3 / 0 / 0" in gold and "1.000 [1.000, 1.000]" in gold
    half = next(line for line in text.splitlines() if line.strip().startswith("half"))
    assert "0 / 1 / 2" in half and "0.750 [" in half
    assert "95% bootstrap CI over tasks" in text


def test_markdown_and_unknown_format() -> None:
    md = render_resolution(_section(), "markdown")
    assert "| gold | 2 | 3 | 3 / 0 / 0 | 1.000 [1.000, 1.000] |" in md
    assert "Values with 95% percentile-bootstrap CIs over tasks." in md
    with pytest.raises(InvalidArgumentError, match="table or markdown"):
        render_resolution(_section(), "csv")


def test_json_names_the_resolutions_and_the_figures() -> None:
    doc = resolution_to_json(_section())
    half = doc["agents"][1]
    assert half["resolutions"] == {"RESOLVED_FULL": 0, "RESOLVED_PARTIAL": 1, "RESOLVED_NO": 2}
    assert half["metrics"]["macro_test_pass_rate"]["value"] == pytest.approx(0.75)
    assert set(half["metrics"]) == {"macro_test_pass_rate", "strict_resolution_rate", "fail_to_pass_rate",
                                    "pass_to_pass_rate"}
    assert doc["tasks"] == 2 and json.dumps(doc)  # plain JSON


def test_score_shows_the_section_only_for_repository_records() -> None:
    result = score_result(RECORDS, [1], n_resamples=200)
    assert "FULL / PARTIAL / NO" in render_score_result(result, "table")
    assert "strict resolution" in render_score_result(result, "markdown")
    assert "repository" in json.loads(render_score_result(result, "json"))
    assert "FULL / PARTIAL / NO" not in render_score_result(result, "csv")  # the figures alone
    plain = score_result([Rollout("t", "a", 0, tests=(TestOutcome("x", "passed"),))], [1], n_resamples=0)
    assert "repository" not in json.loads(render_score_result(plain, "json"))
    assert "FULL / PARTIAL / NO" not in render_score_result(plain, "table")


def test_html_section_escapes_names() -> None:
    from dataclasses import replace

    sec = _section()
    hostile = replace(sec, agents=(replace(sec.agents[0], agent="<script>x</script>"), *sec.agents[1:]))
    page = resolution_html(hostile)
    assert '<h2 id="repository">' in page and "<script>x" not in page and "&lt;script&gt;x" in page
    assert "<td>3 / 0 / 0</td>" in page and "bootstrap CIs over tasks" in page
