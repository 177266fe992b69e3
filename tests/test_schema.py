"""The published JSON Schema agrees with the reader on valid and invalid records."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from reliabench.errors import RecordError
from reliabench.records import Cost, Finding, Rollout, TestOutcome, rollout_from_dict, rollout_to_dict

ROOT = Path(__file__).parents[1]
SCHEMA = json.loads((ROOT / "docs" / "rollout.schema.json").read_text())


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", [ROOT / "tests" / "golden" / "records_v1.jsonl",
                                  ROOT / "tests" / "golden" / "records_v2.jsonl",
                                  ROOT / "examples" / "rollouts.jsonl"])
def test_shipped_records_validate(path: Path) -> None:
    for obj in lines(path):
        jsonschema.validate(obj, SCHEMA)


def test_written_records_validate() -> None:
    r = Rollout("t", "a", 1, tests=(TestOutcome("x", "passed"), TestOutcome("s", "failed", True)),
                findings=(Finding("bandit", "B602", "high", "high", 78, "m.py", 3, "m"),),
                cost=Cost(tokens=3, usd=0.1, seconds=2.0, tokens_in=2, tokens_out=1, agent_s=1.5,
                          test_s=0.5),
                isolation="bubblewrap", simulated=True, meta={"k": 1})
    jsonschema.validate(rollout_to_dict(r), SCHEMA)


@pytest.mark.parametrize(
    "obj",
    [
        {"agent": "a", "rollout": 0, "passed": True},
        {"task_id": "t", "agent": "a", "rollout": -1, "passed": True},
        {"task_id": "t", "agent": "a", "rollout": 0},
        {"task_id": "t", "agent": "a", "rollout": 0, "tests_total": 3},
        {"task_id": "t", "agent": "a", "rollout": 0, "tests": [{"name": "x", "outcome": "ok"}]},
        {"task_id": "t", "agent": "a", "rollout": 0, "passed": True,
         "findings": [{"tool": "b", "rule_id": "r", "severity": "severe"}]},
        {"task_id": "t", "agent": "a", "rollout": 0, "tests": [], "tests_total": 1, "tests_passed": 1},
        {"task_id": "t", "agent": "a", "rollout": 0, "passed": True, "cost": {"agent_s": -1}},
        {"schema_version": 3, "task_id": "t", "agent": "a", "rollout": 0, "passed": True},
        {"task_id": "t", "agent": "a", "rollout": 0, "passed": True, "status": "cancelled"},
    ],
)
def test_schema_and_reader_both_reject(obj: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, SCHEMA)
    with pytest.raises(RecordError):
        rollout_from_dict(obj)
