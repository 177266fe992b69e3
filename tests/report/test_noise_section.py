"""The report's harness-noise section: shown for a run with re-tests, apart from agent variance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from report_helpers import copy_run, report_page

from reliabench.cli import main
from reliabench.records import Rollout, TestOutcome
from reliabench.report.noise_section import noise_section
from reliabench.runs import RunDirectory
from reliabench.store import REFERENCE_AGENT, RunStore
from reliabench.studies.noise import harness_noise, score_noise


def _retest_rows(records: list[Rollout], flaky_key: tuple[str, str, int], reps: int = 3) -> list[dict]:
    """Re-runs that repeat every rollout's tests, except that the first functional test of
    ``flaky_key`` fails in the even re-runs (a flaky test on identical code)."""
    rows = []
    for r in records:
        for rep in range(reps):
            tests = [[t.name, t.outcome, t.security] for t in r.tests]
            if r.key == flaky_key and rep % 2 == 0:
                first = next(t for t in tests if not t[2])
                first[1] = "failed"
            rows.append({"task_id": r.task_id, "agent": r.agent, "rollout": r.rollout, "rep": rep,
                         "status": "completed", "tests": tests, "order_seed": rep, "seconds": 0.1,
                         "reason": None})
            if r.key == flaky_key:  # the reference solution flips it too: harness noise
                rows.append({**rows[-1], "agent": REFERENCE_AGENT, "rollout": 0})
    return rows


def _flaky_candidate(records: list[Rollout]) -> Rollout:
    """A passing rollout with a functional test: failing that test flips its verdict."""
    for r in records:
        if r.passes and any(not t.security for t in r.tests):
            return r
    pytest.skip("fixture run has no passing rollout with a functional test")


def test_section_for_a_run_with_retests(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    with RunStore.open_existing(run) as store:
        records = store.rollouts()
    target = _flaky_candidate(records)
    rows = _retest_rows(records, target.key)
    with RunStore.open_existing(run) as store:
        store.add_retests(rows)
    with RunDirectory.open(run) as opened:
        scored = score_noise(opened.records(), opened.retests())
    assert scored is not None
    noise = scored.report
    assert noise.flaky_rollouts == 1 and noise.noise_rate.rollouts == len(records)
    page = report_page(run, n_resamples=50)
    assert 'id="harness-noise"' in page
    section = page[page.index('id="harness-noise"'):]
    rate = noise.noise_rate
    assert f"{100 * rate.value:.1f}% of re-tested rollouts flip" in section
    assert f"[{100 * rate.ci_low:.1f}%, {100 * rate.ci_high:.1f}%]" in section
    assert f"{rate.flaky} of {rate.rollouts} rollouts" in section
    # the flaky test and the flipping rollout are listed, the verdicts in order (original first)
    flaky_name = next(t.name for t in target.tests if not t.security)
    assert re.search(rf"<td>{re.escape(target.task_id)}</td><td>{re.escape(flaky_name)}</td>", section)
    assert "pass fail pass fail" in section
    # harness part vs agent part, per agent
    assert "harness part vs agent part" in section
    for split in noise.variance:
        assert f"<td>{split.harness:.3f}</td><td>{split.agent_part:.3f}</td>" in section


def test_no_section_without_retests(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    with RunDirectory.open(run) as opened:
        assert opened.retests() == ()
        assert score_noise(opened.records(), opened.retests()) is None
    page = report_page(run, n_resamples=50)
    assert "harness-noise" not in page


def test_section_escapes_and_bounds_rows() -> None:
    evil = "<script>alert(1)</script>"
    recs = [Rollout(task_id=f"t{i}", agent=evil, rollout=0,
                    tests=(TestOutcome(f"test_{i}{evil}", "passed"),)) for i in range(5)]
    rows = [{"task_id": f"t{i}", "agent": evil, "rollout": 0, "rep": rep, "status": "completed",
             "tests": [[f"test_{i}{evil}", "failed" if rep == 0 else "passed", False]]}
            for i in range(5) for rep in range(2)]
    rows += [{**r, "agent": REFERENCE_AGENT} for r in rows]  # flips on the reference: flaky
    html = noise_section(harness_noise(recs, rows), max_rows=2)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Flaky tests (5)" in html and "3 more flaky tests" in html
    assert "Rollouts whose verdict flips (5)" in html and "3 more flipping rollouts" in html
    # every verdict flipped: the rate is 100% with the exact interval's lower end below it
    assert "100.0% of re-tested rollouts flip" in html


def test_report_command_shows_noise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy_run(tmp_path)
    with RunStore.open_existing(run) as store:
        records = store.rollouts()
        store.add_retests(_retest_rows(records, ("none", "none", -1), reps=2))
    out = tmp_path / "page.html"
    assert main(["report", str(run), "-o", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text()
    assert 'id="harness-noise"' in page
    assert "0.0% of re-tested rollouts flip" in page and "No test changed its outcome" in page


def test_simulated_agents_are_marked() -> None:
    recs = [Rollout(task_id="t", agent="sim-a", rollout=i, tests=(TestOutcome("test_x", "passed"),),
                    simulated=True) for i in range(2)]
    rows = [{"task_id": "t", "agent": "sim-a", "rollout": i, "rep": 0, "status": "completed",
             "tests": [["test_x", "failed", False]]} for i in range(2)]
    html = noise_section(harness_noise(recs, rows), simulated={"sim-a"})
    assert html.count("sim-a <span class=\"sim\">[SIMULATED]</span>") >= 2  # variance table and flips
