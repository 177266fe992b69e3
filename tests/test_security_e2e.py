"""Security end to end: two agents with equal reliability@k and different security-adjusted
reliability@k, through the real runner, sandbox, Bandit and security tests; then ``scan``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.metrics.analysis import ranking_change, score
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import read_records
from reliabench.tasks.suite import resolve_suite

TASKS = ("run_git_log", "password_hashing")


def _files(d: Path) -> dict[str, str]:
    return {p.relative_to(d).as_posix(): p.read_text() for p in d.rglob("*.py")}


@pytest.mark.slow
def test_equal_reliability_different_security(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chmod(tmp_path, 0o755)
    suite = resolve_suite("py30")
    lines = []
    for tid in TASKS:
        task = suite.task(tid)
        assert task.solution_dir is not None
        insecure = next(v for v in task.variants if "scanner" in v.caught_by)
        for r in range(2):
            lines.append({"agent": "secure", "task_id": tid, "rollout": r, "files": _files(task.solution_dir)})
            lines.append({"agent": "shortcut", "task_id": tid, "rollout": r, "files": _files(insecure.dir)})
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps(x) + "\n" for x in lines))
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text('[[agents]]\nname = "secure"\nkind = "replay"\npath = "gens.jsonl"\n\n'
                           '[[agents]]\nname = "shortcut"\nkind = "replay"\npath = "gens.jsonl"\n')
    out = tmp_path / "run"
    run_suite(suite, load_agents(agents_file), out, RunSettings(n=2, workers=2), tasks=TASKS)
    records = read_records(out)
    report = score(records, [1, 2], n_resamples=200)
    by = {a.agent: a.metrics for a in report.agents}
    for k in (1, 2):
        assert by["secure"][f"reliability@{k}"].value == by["shortcut"][f"reliability@{k}"].value == 1.0
        assert by["secure"][f"security_adjusted_reliability@{k}"].value == 1.0
        assert by["shortcut"][f"security_adjusted_reliability@{k}"].value == 0.0
    assert by["shortcut"]["insecure_share_of_passing"].value == 1.0
    cwes = report.counts.cwe_counts["shortcut"]
    assert 78 in cwes and 327 in cwes  # shell injection and a weak hash, found by Bandit
    assert report.counts.cwe_counts["secure"] == {}
    change = ranking_change(report, 1)
    assert change.swapped == ()

    # re-scan the finished run at another threshold, without rerunning agents
    capsys.readouterr()
    assert main(["scan", str(out), "-k", "1", "--security-threshold", "critical", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "re-scanned 8 rollout(s) with bandit (dry run: store unchanged)" in text
    assert "threshold critical:medium" in text
    # the dry run left the stored findings alone; a real re-scan finds the same ones again
    assert read_records(out) == records
    assert main(["scan", str(out), "-k", "1"]) == 0
    rescanned = {r.key: r for r in read_records(out)}
    for r in records:
        assert {f.rule_id for f in rescanned[r.key].findings} == {f.rule_id for f in r.findings}
