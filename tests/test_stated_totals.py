"""Totals a source states about its own rows (leaderboard headlines, summary counts) vs the rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.errors import InputError, InvalidArgumentError
from reliabench.importers import StatedTotal, load_foreign
from reliabench.records import Rollout
from reliabench.studies.audit import audit_path, check_stated

FIXTURE = Path(__file__).parent / "fixtures" / "swebench-leaderboard-synthetic.json"


def _rows(agent: str, resolved: int, total: int) -> list[Rollout]:
    return [Rollout(f"t{i}", agent, 0, verdict=i < resolved) for i in range(total)]


def test_rate_that_the_rows_reproduce_is_quiet() -> None:
    # 324 / 500 = 64.8% exactly; 64.8 written with one decimal: tolerance 0.05 points
    assert check_stated([StatedTotal("a", "s", rate=0.648, rate_tolerance=0.0005)], _rows("a", 324, 500)) == []
    assert check_stated([StatedTotal("a", "s", resolved=3, total=10)], _rows("a", 3, 10)) == []


def test_rate_over_another_denominator_is_explained() -> None:
    (f,) = check_stated([StatedTotal("a", "board", rate=0.6493, rate_tolerance=0.00005)], _rows("a", 324, 500))
    assert f.code == "STATED_TOTAL_MISMATCH" and f.severity == "error" and f.agents == ("a",)
    assert "324 of 500 = 64.8%" in f.message
    assert "64.93% is 324 of 499" in f.message and "not over the 500 rows" in f.message


def test_rate_with_another_count_is_explained() -> None:
    (f,) = check_stated([StatedTotal("a", "board", rate=0.528, rate_tolerance=0.0005)], _rows("a", 51, 500))
    assert "51 of 500 = 10.2%" in f.message and "52.8% is 264 of 500" in f.message
    assert "213 more resolved than the rows" in f.message


def test_counts_disagree_and_unknown_agent() -> None:
    (f,) = check_stated([StatedTotal("a", "sum", resolved=4, total=9)], _rows("a", 3, 10))
    assert "states 4 resolved, the rows have 3" in f.message and "states 9 rollouts, there are 10 rows" in f.message
    with pytest.raises(InvalidArgumentError, match="stated totals for agent 'b', which has no records"):
        check_stated([StatedTotal("b", "s", resolved=1)], _rows("a", 1, 2))


def test_leaderboards_file_keeps_headlines_and_audit_flags_the_two() -> None:
    res = load_foreign(FIXTURE)
    assert res.format == "swebench" and len(res.records) == 4 * 500
    rates = {s.agent: round(s.rate * 100, 2) for s in res.stated if s.rate is not None}
    assert rates == {"20990101_synthetic-a": 74.4,
                     "20990102_synthetic-b": 74.2,
                     "20990103_synthetic-c": 64.93,
                     "20990104_synthetic-d": 52.8}
    report = audit_path(FIXTURE, n_resamples=50)
    flagged = [f for f in report.findings if f.code == "STATED_TOTAL_MISMATCH"]
    assert [f.agents for f in flagged] == [("20990103_synthetic-c",),
                                           ("20990104_synthetic-d",)]
    assert "324 of 499" in flagged[0].message and "264 of 500" in flagged[1].message


def test_leaderboards_file_choice(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_text())
    two = {"leaderboards": [doc["leaderboards"][0],
                            {"name": "Lite", "results": [{"folder": "x", "name": "X", "resolved": 50.0,
                                                          "per_instance_details": {"i1": {"resolved": True},
                                                                                   "i2": {"resolved": False}}},
                                                         {"folder": "y", "name": "Y", "resolved": 9.0,
                                                          "per_instance_details": {}}]}]}
    path = tmp_path / "leaderboards.json"
    path.write_text(json.dumps(two))
    with pytest.raises(InvalidArgumentError, match=r"holds 2 leaderboards \(bash-only, Lite\): choose one"):
        load_foreign(path)
    lite = load_foreign(path, leaderboard="Lite")
    assert [(r.task_id, r.passes) for r in lite.records] == [("i1", True), ("i2", False)]
    assert any("1 submission(s) without per-instance flags left out: y" in n for n in lite.notes)
    with pytest.raises(InvalidArgumentError, match="leaderboard applies only to a leaderboards file"):
        load_foreign(Path(__file__).parent / "fixtures" / "foreign" / "swebench_leaderboard.json",
                     leaderboard="Lite")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"leaderboards": [{"name": "L", "results": [
        {"folder": "x", "per_instance_details": {"i1": {"resolved": "yes"}}}]}]}))
    with pytest.raises(InputError, match=r"per_instance_details\.i1: expected true or false, got 'yes'"):
        load_foreign(bad)


def test_summary_resolved_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = tmp_path / "model-y.run-1.json"
    summary.write_text(json.dumps({"resolved_instances": 2, "resolved_ids": ["a"], "unresolved_ids": ["b"]}))
    assert main(["audit", str(summary), "--format", "json", "--resamples", "20"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (f,) = [x for x in doc["findings"] if x["code"] == "STATED_TOTAL_MISMATCH"]
    assert "states 2 resolved, the rows have 1" in f["message"]
