"""Adaptive runs as text and JSON (reliabench.report.adaptive_tables): rounds, the stop, a continuation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from report_helpers import copy_run, make_adaptive

from reliabench.report.adaptive_tables import (
    continuation_to_json,
    render_estimates,
    render_step,
    score_adaptive_json,
    score_adaptive_lines,
)
from reliabench.report.score_render import render_score_result
from reliabench.runs import RunDirectory
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts, continuation, evaluate
from reliabench.studies.adaptive_estimate import stop_estimates
from reliabench.studies.scoring import score_result

DESIGN = AdaptiveDesign(first=2, max_n=8, settle=(("a", "b"),))
COUNTS = {"a": AgentCounts(np.full(6, 2, np.int64), np.array([2, 2, 1, 2, 2, 1])),
          "b": AgentCounts(np.full(6, 2, np.int64), np.array([0, 1, 0, 0, 1, 0]))}


def test_a_look_and_the_estimates_as_lines() -> None:
    step = evaluate(DESIGN, COUNTS, [{"a": 2, "b": 2}], COUNTS)
    lines = render_step(step, 1)
    assert lines[0].startswith("  a                    n=2   reliability@1 ")
    assert any(line.startswith("  a - b: ") and "->" in line for line in lines)
    est = stop_estimates(DESIGN, [{"a": 2, "b": 2}], [COUNTS], seed=1)
    text = render_estimates(est, DESIGN, simulated={"b"})
    assert text[0].startswith("estimates at the stop (one look: the plain estimate")
    assert any(line.startswith("  b [SIMULATED]") for line in text)  # the mark, from report.marks
    assert not any(line.startswith("  a [SIMULATED]") for line in text)


def test_a_continuation_as_json() -> None:
    c = continuation(DESIGN, COUNTS)
    doc = continuation_to_json(c, stop_estimates(DESIGN, [{"a": 2, "b": 2}], [COUNTS], seed=1))
    assert doc["pilot_n"] == 2 and doc["schedule"] == [2, 4, 8] and "estimate" in doc
    json.dumps(doc, allow_nan=False)


def test_scores_section_of_a_finished_adaptive_run(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    make_adaptive(run_dir)
    with RunDirectory.open(run_dir) as run:
        result = score_result(run.records(), [1], n_resamples=0, adaptive=run.adaptive())
    assert result.adaptive is not None
    lines = score_adaptive_lines(result.adaptive, {"sim-flaky", "sim-hasty"})
    assert lines[1].startswith("== adaptive run: stopped after 12 of the fixed design's 12 rollouts")
    assert any("sim-hasty [SIMULATED]" in line for line in lines)
    assert score_adaptive_json(result.adaptive)["rollouts"] == 12
    table = render_score_result(result, "table")
    assert table.endswith("\n".join(lines) + "\n")
    assert list(json.loads(render_score_result(result, "json")))[-1] == "adaptive"
