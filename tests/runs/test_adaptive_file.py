"""RUN/adaptive.json (reliabench.runs.adaptive_file): written after each round, read back as a state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reliabench.runs.adaptive_file import (
    adaptive_document,
    estimates_to_json,
    state_from_document,
    step_to_json,
)
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts, evaluate
from reliabench.studies.adaptive_estimate import stop_estimates

DESIGN = AdaptiveDesign(first=2, max_n=8, target_half_width=0.3)


def _counts(n: int, c: list[int]) -> AgentCounts:
    return AgentCounts(np.full(len(c), n, np.int64), np.asarray(c, np.int64))


def _round_trip(finished: bool) -> tuple[dict[str, object], object]:
    counts = {"a": _counts(2, [2, 1, 0, 2, 1]), "b": _counts(2, [0, 0, 1, 0, 0])}
    history = [{"a": 2, "b": 2}]
    step = evaluate(DESIGN, counts, history, counts)
    est = stop_estimates(DESIGN, history, [counts], seed=7) if finished else None
    doc = adaptive_document(DESIGN, history, [step], 5, ["a", "b"], est, 7)
    return json.loads(json.dumps(doc)), step


def test_a_document_reads_back_as_the_state_it_describes() -> None:
    doc, step = _round_trip(finished=True)
    state = state_from_document(doc)
    assert state.design == DESIGN
    assert state.history == ({"a": 2, "b": 2},) and state.seed == 7 and state.tasks == 5
    assert state.finished == (not step.advance)  # type: ignore[attr-defined]
    assert state.rollouts == 20 and state.fixed_rollouts == 5 * 8 * 2
    assert doc["final"] == step_to_json(step) and doc["rounds"][0]["n"] == {"a": 2, "b": 2}  # type: ignore[index]


def test_the_estimate_is_kept_only_at_the_stop() -> None:
    doc, _ = _round_trip(finished=False)
    assert "estimate" not in doc
    done, _ = _round_trip(finished=True)
    est = done["estimate"]
    assert isinstance(est, dict) and est["seed"] == 7 and [a["agent"] for a in est["agents"]] == ["a", "b"]
    assert est["method"].startswith("Rao-Blackwellised")


def test_estimates_to_json_writes_no_nan() -> None:
    counts = {"a": _counts(2, [2, 2])}
    est = stop_estimates(AdaptiveDesign(first=2, max_n=2, target_half_width=0.3), [{"a": 2}], [counts], seed=1)
    text = json.dumps(estimates_to_json(est), allow_nan=False)
    assert "NaN" not in text


def test_what_is_not_a_document_raises_for_the_reader_to_name_the_file() -> None:
    with pytest.raises(KeyError):
        state_from_document({"finished": True})
    with pytest.raises(TypeError):
        state_from_document(["not", "a", "document"])
